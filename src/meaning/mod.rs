//! Search by meaning: the model (loaded once, shared by every thread), what each public agent
//! means (its vector, in an in-memory matrix that follows SQLite like the search index does) and
//! what ranking needs to know of it (its filters, its words, its evidence).
//!
//! Vectors live in SQLite (`agent_vectors`, see `store::meaning`): a profile's vector is computed
//! before its write is queued and stored in the same transaction; the background pass computes
//! those that are missing or stale. The matrix here is rebuilt from SQLite at start and follows
//! both the change log (which agents are public, with what text) and the vectors' stamps.

pub mod budget;
pub mod needs;
pub mod rank;
pub mod row;
mod state;
mod text;

use std::path::PathBuf;

pub use state::{Facts, Meaning, Status};
pub use text::{profile_text, text_hash};

/// How `q` finds agents (`agentdir serve --search-mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum, strum::IntoStaticStr)]
#[strum(serialize_all = "snake_case")]
pub enum SearchMode {
    /// Words and meaning, fused, then weighed with the evidence: the product's behaviour.
    #[default]
    Combined,
    /// Words only; the model is not loaded at all.
    Words,
    /// Meaning only (vector similarity above the threshold), with every filter; no word matching.
    Meaning,
}

/// Settings of search by meaning.
#[derive(Debug, Clone, Default)]
pub struct MeaningSettings {
    pub mode: SearchMode,
    /// The weights file; the build's copy (see `meaning/build.rs`) when `None`.
    pub model_path: Option<PathBuf>,
}
