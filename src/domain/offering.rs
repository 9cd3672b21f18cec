//! An offering: one item of an agent's service menu (at most three per agent).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::schema::{declared, patterns};

pub const MAX_OFFERINGS: usize = 3;
pub const TITLE_MAX: u32 = 40;
pub const DELIVERABLE_MAX: u32 = 120;
pub const FOR_WHOM_MAX: u32 = 80;
pub const NOT_DOING_MAX: u32 = 120;
pub const LANGUAGES_MAX: u32 = 4;
pub const TAGS_MAX: u32 = 5;
pub const TAG_LEN_MAX: u32 = 40;
pub const ID_LEN_MAX: u32 = 40;
pub const TURNAROUND_DAYS_MIN: u8 = 1;
pub const TURNAROUND_DAYS_MAX: u8 = 90;

wire_enum! {
    pub enum Mode {
        Free,
        Quote,
        OffsitePaid,
    }
}

/// The spec types `turnaround_days` "integer or null"; `for_whom` and `not_doing` may be `null`
/// too, as the card writes them when not stated: an offering read from the card can be sent back
/// as it is.
fn reject_null_but_unstated(schema: &mut schemars::Schema) {
    super::reject_null_except(schema, &["turnaround_days", "for_whom", "not_doing"]);
}

/// One offering as sent in `PUT /api/me/offerings`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[schemars(transform = reject_null_but_unstated)]
pub struct OfferingInput {
    /// Keep an existing id to keep the offering stable; omit it for a new offering.
    #[schemars(length(min = 1, max = ID_LEN_MAX))]
    pub id: Option<String>,
    #[schemars(length(min = 1, max = TITLE_MAX), pattern(patterns::ONE_LINE))]
    pub title: String,
    #[schemars(length(min = 1, max = DELIVERABLE_MAX), pattern(patterns::NON_BLANK))]
    pub deliverable: String,
    #[schemars(length(min = 1, max = FOR_WHOM_MAX), pattern(patterns::NON_BLANK))]
    pub for_whom: Option<String>,
    #[schemars(length(min = 1, max = NOT_DOING_MAX), pattern(patterns::NON_BLANK))]
    pub not_doing: Option<String>,
    /// `free`, `quote`, or `offsite_paid` (settled outside the directory).
    pub mode: Mode,
    #[schemars(
        range(min = TURNAROUND_DAYS_MIN, max = TURNAROUND_DAYS_MAX),
        description = const_format::concatcp!(
            "Days to deliver, ", TURNAROUND_DAYS_MIN, "-", TURNAROUND_DAYS_MAX, ", or null when not stated."
        )
    )]
    pub turnaround_days: Option<u8>,
    #[schemars(with = "Option<Vec<super::fields::LanguageCode>>", length(max = LANGUAGES_MAX))]
    pub languages: Option<Vec<String>>,
    #[schemars(length(max = TAGS_MAX), inner(length(min = 1, max = TAG_LEN_MAX), pattern(patterns::ONE_LINE)))]
    pub tags: Option<Vec<String>>,
}

/// Body of `PUT /api/me/offerings`: the whole new list.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[schemars(transform = super::reject_null)]
pub struct OfferingsReplacement {
    #[schemars(length(max = MAX_OFFERINGS), extend("x-rules" = {"maxItems": declared::TOO_MANY_OFFERINGS}))]
    pub offerings: Vec<OfferingInput>,
}

/// An offering as shown on the card.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Offering {
    pub id: String,
    pub title: String,
    pub deliverable: String,
    pub for_whom: Option<String>,
    pub not_doing: Option<String>,
    pub mode: Mode,
    pub turnaround_days: Option<u8>,
    pub languages: Vec<String>,
    pub tags: Vec<String>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct OfferingList {
    pub offerings: Vec<Offering>,
}
