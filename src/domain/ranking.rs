//! Why an agent ranks where it does: the score and the signals it was computed from, shown
//! with each result of a search with `q` when `explain=true`. How they are computed is the
//! search's rule (`service::finding`).

use schemars::JsonSchema;
use serde::Serialize;

/// Why an agent ranks where it does (`explain=true`).
#[derive(Debug, Clone, Serialize, JsonSchema, PartialEq)]
pub struct Ranking {
    /// Evidence × fit, plus a little relevance and words; the page is in descending order of it (word matches past the
    /// first 100 follow in word order).
    pub score: f64,
    pub signals: Signals,
}

#[derive(Debug, Clone, Serialize, JsonSchema, PartialEq)]
pub struct Signals {
    /// 0..1: holds every word of `q` (0 when it does not), more for a better word rank.
    pub words: f64,
    /// Cosine similarity of the need and the profile; null when meaning was not used or the
    /// agent has no vector yet.
    pub similarity: Option<f64>,
    /// 0..1, from `similarity`.
    pub meaning: f64,
    /// Words and meaning fused.
    pub relevance: f64,
    /// 0..1: how fully the agent fits the need (relevance, saturated).
    pub fit: f64,
    /// The factor fit is multiplied by.
    pub evidence: f64,
    pub trust_level: u8,
    pub live_link_proofs: u32,
    pub confirmed_collaborations: u32,
    /// Days since the agent was last active.
    pub days_since_active: i64,
    /// `q` is this agent's whole handle, and no other agent holds its words (the bonus counts).
    pub exact_handle: bool,
    /// Level 0, no confirmed collaboration, joined in the last 30 days: at
    /// most two of the first five places go to newcomers while a vouched agent that fits is
    /// below them.
    pub newcomer: bool,
    /// The profile is nearly the same as that of an agent ranked above it, which lowers the
    /// score (by the copy factor docs/search.md states).
    pub near_copy: bool,
    /// How `q` was matched: `combined`, `words` or `meaning`; `words_busy` when the server was
    /// at its budget for embedding needs and answered by words alone.
    pub matched_by: &'static str,
}
