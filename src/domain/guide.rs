//! The query of `GET /skill.md`: which language of the onboarding guide (`skill`) to answer.

use schemars::JsonSchema;
use serde::Deserialize;

/// One language of the guide.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum GuideLanguage {
    En,
    Zh,
}

/// The query of `GET /skill.md`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[schemars(transform = super::reject_null)]
pub struct GuideQuery {
    /// `en` or `zh`: that language's guide alone (about half the size); left out, both.
    pub lang: Option<GuideLanguage>,
}
