//! The meaning model as the server runs it (the `agentdir-meaning` crate): loaded once, shared
//! by every thread, or not loaded at all (the mode is words, or there is no weights file), in
//! which case every search is by words and the reason is told in `/healthz`. It embeds needs
//! (`service::finding`) and profiles (`service::vectors`); what each agent's vector is lives in
//! SQLite (`store::vectors`) and in memory (`derived::vectors`).

use std::path::PathBuf;

use agentdir_meaning::{MODEL_ID, Quantized};

use crate::derived::vectors::Vectors;

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
pub struct ModelSettings {
    pub mode: SearchMode,
    /// The weights file; the build's copy (see `meaning/build.rs`) when `None`.
    pub model_path: Option<PathBuf>,
}

/// The model, when loaded, and the mode searches run in.
pub struct Model {
    pub mode: SearchMode,
    model: Option<agentdir_meaning::Model>,
    /// The model's name when loaded, otherwise why searches use words only.
    detail: String,
}

/// Whether meaning is on, and why not.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ModelStatus {
    /// `combined`, `words` or `meaning`: the mode asked for.
    pub mode: &'static str,
    /// True when the model is loaded and searches use it.
    pub model_loaded: bool,
    /// The model's name when loaded, otherwise why searches use words only.
    pub detail: String,
    /// Public agents whose current profile has a vector / public agents.
    pub agents_with_vectors: usize,
    pub agents: usize,
}

impl Model {
    /// Loads the model unless the mode is `words`; a model that cannot be loaded leaves the
    /// server searching by words, which it logs once here.
    pub fn open(settings: &ModelSettings) -> Model {
        let loaded = match settings.mode {
            SearchMode::Words => Err("search mode is words: the model is not loaded".to_string()),
            _ => match settings
                .model_path
                .clone()
                .or_else(|| agentdir_meaning::built_in_weights().map(Into::into))
            {
                None => Err(format!(
                    "no model file: {}",
                    agentdir_meaning::unavailable_reason().unwrap_or("set AGENTDIR_MODEL_PATH")
                )),
                Some(path) => {
                    agentdir_meaning::Model::load(&path).map_err(|e| e.to_string()).map(|m| (m, path))
                }
            },
        };
        let (model, detail) = match loaded {
            Ok((model, path)) => {
                tracing::info!(model = MODEL_ID, path = %path.display(), "meaning model loaded");
                (Some(model), MODEL_ID.to_string())
            }
            Err(why) => {
                tracing::warn!(reason = %why, "search by meaning is off: searches use words only");
                (None, why)
            }
        };
        Model { mode: settings.mode, model, detail }
    }

    /// True when searches can use meaning.
    pub fn enabled(&self) -> bool {
        self.model.is_some()
    }

    /// Whether meaning is on, and how many of the public agents have their vector.
    pub fn status(&self, vectors: &Vectors) -> ModelStatus {
        let (agents_with_vectors, agents) = vectors.counts();
        ModelStatus {
            mode: self.mode.into(),
            model_loaded: self.enabled(),
            detail: self.detail.clone(),
            agents_with_vectors,
            agents,
        }
    }

    /// The vector of a need, or `None` without a model or when the model fails.
    pub fn embed_query(&self, text: &str) -> Option<Quantized> {
        let vector = self
            .model
            .as_ref()?
            .embed_query(text)
            .map_err(|e| tracing::warn!(error = %e, "embedding a query failed"))
            .ok()?;
        Some(Quantized::new(&vector))
    }

    /// The vectors of profile texts, or `None` without a model or when the model fails.
    pub fn embed_profiles(&self, texts: &[&str]) -> Option<Vec<Quantized>> {
        let vectors = self
            .model
            .as_ref()?
            .embed_passages(texts)
            .map_err(|e| tracing::warn!(error = %e, "embedding profiles failed"))
            .ok()?;
        Some(vectors.iter().map(|v| Quantized::new(v)).collect())
    }
}
