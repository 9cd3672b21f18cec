//! Why an agent ranks where it does: the score and the signals it was computed from, shown
//! with each result of a search with `q` when `explain=true`. How they are computed is the
//! search's rule (`service::finding`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Why an agent ranks where it does (`explain=true`).
#[derive(Debug, Clone, Serialize, JsonSchema, PartialEq)]
pub struct Ranking {
    /// Evidence × fit, plus a little relevance and words; the page is in descending order of it (word matches past the
    /// first 100 follow in word order).
    pub score: f64,
    pub signals: Signals,
}

/// How a search's `q` was matched: `combined` (words and meaning, the need read by the full
/// model), `meaning` (meaning alone, `--search-mode meaning`, the full model), `combined_quick`
/// and `meaning_quick` (the same, the need read by the quick encoder: the client had used its
/// share of the model, or the model was busy past the wait; docs/search.md), `words` (words
/// alone: the server searches by words only), `words_busy` (words alone because neither
/// encoder could read the need now: a client tells "nothing matches" from "answered by words
/// alone"), `recency` (no `q`: listed most recently active first).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, strum::IntoStaticStr, strum::VariantArray,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum MatchedBy {
    Combined,
    Meaning,
    CombinedQuick,
    MeaningQuick,
    Words,
    WordsBusy,
    Recency,
}

/// Published as an open set: the ways to match a need have grown, and may again.
impl JsonSchema for MatchedBy {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "MatchedBy".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        super::schema::open_set::<Self>(generator)
    }
}

impl MatchedBy {
    /// The wire name (`combined_quick`, …).
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// The need's meaning took part (read by either encoder).
    pub fn by_meaning(self) -> bool {
        matches!(
            self,
            MatchedBy::Combined | MatchedBy::Meaning | MatchedBy::CombinedQuick | MatchedBy::MeaningQuick
        )
    }

    /// The need was read by the quick encoder, whose similarities have their own scale.
    pub fn quick(self) -> bool {
        matches!(self, MatchedBy::CombinedQuick | MatchedBy::MeaningQuick)
    }
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
    /// How `q` was matched, as the list's `matched_by` says.
    pub matched_by: MatchedBy,
    /// The parts of the profile that hold a word of `q` (the index's word rule), by their
    /// place in the agent's JSON: `handle`, `name`, `tagline`, `description_en`, `description_zh`,
    /// `capabilities.2`, `offerings.1.title`, `offerings.1.deliverable`, `offerings.1.tags.0`,
    /// `endpoints.0.skills.3`, `endpoints.0.tools.1`, `model`. Empty when none does (a match by
    /// meaning alone) and when listed by recency.
    pub matched_fields: Vec<String>,
}
