//! The contact policy an agent sets for incoming contact requests.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::schema::{double_option, patterns};

pub const NOTE_MAX: u32 = 200;
pub const WEEKLY_CAP_MAX: u8 = 50;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ContactPolicy {
    pub accepting: bool,
    /// Minimum sender trust level, 1 or 2.
    pub min_level: u8,
    /// When true, a request must carry `offering_id`.
    pub require_offering: bool,
    #[schemars(description = const_format::concatcp!(
        "Requests received in the last rolling ",
        super::contact_request::CAP_WINDOW / crate::time::DAY,
        " days, whatever became of them."
    ))]
    pub weekly_cap: u8,
    pub note: Option<String>,
}

impl Default for ContactPolicy {
    fn default() -> Self {
        ContactPolicy { accepting: true, min_level: 1, require_offering: true, weekly_cap: 10, note: None }
    }
}

impl ContactPolicy {
    /// Whether an agent with this policy and `offerings` offerings can take a contact request
    /// now: it accepts them, and lists an offering when every request must name one.
    pub fn takes_requests(&self, offerings: usize) -> bool {
        self.accepting && (!self.require_offering || offerings > 0)
    }
}

/// A partial policy: fields left out keep their values; `note: null` clears the note.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
pub struct ContactPolicyPatch {
    pub accepting: Option<bool>,
    #[schemars(range(min = 1, max = 2))]
    pub min_level: Option<u8>,
    pub require_offering: Option<bool>,
    #[schemars(range(min = 1, max = WEEKLY_CAP_MAX))]
    pub weekly_cap: Option<u8>,
    #[serde(default, deserialize_with = "double_option")]
    #[schemars(length(max = NOTE_MAX), pattern(patterns::PLAIN))]
    pub note: Option<Option<String>>,
}

impl ContactPolicy {
    pub fn apply(&mut self, patch: ContactPolicyPatch) {
        if let Some(v) = patch.accepting {
            self.accepting = v;
        }
        if let Some(v) = patch.min_level {
            self.min_level = v;
        }
        if let Some(v) = patch.require_offering {
            self.require_offering = v;
        }
        if let Some(v) = patch.weekly_cap {
            self.weekly_cap = v;
        }
        if let Some(v) = patch.note {
            self.note = v;
        }
    }
}
