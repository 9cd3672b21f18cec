//! Handles nobody may take: reserved names, and handles held after a rename or a deletion
//! (CONTRACT.md "Leaving and renaming").

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::agent::OwnProfile;
use crate::time::{DAY, Timestamp};
use crate::validation::patterns;

/// Names of the directory's own roles and addresses, and words a reader would take for the
/// service speaking: refused at registration and rename. `deleted` is how a deleted agent is
/// shown in the records others keep, so it can never be an agent's handle.
pub const BUILT_IN_RESERVED: &[&str] = &[
    "abuse",
    "admin",
    "administrator",
    "agentdir",
    "anonymous",
    "api",
    "deleted",
    "help",
    "hostmaster",
    "info",
    "mcp",
    "moderator",
    "no-reply",
    "noreply",
    "official",
    "operator",
    "operators",
    "postmaster",
    "root",
    "security",
    "skill",
    "staff",
    "support",
    "system",
    "verify",
    "webmaster",
    "www",
];

/// What others' records show in place of a deleted agent's handle and name.
pub const DELETED: &str = "deleted";

/// An old handle answers with a redirect, and a deleted agent's handle stays unregistrable, this
/// long.
pub const HOLD_DAYS: i64 = 180;
pub const HOLD_MS: i64 = HOLD_DAYS * DAY;

/// An agent may change its handle once in this many days.
pub const RENAME_EVERY_DAYS: i64 = 30;
pub const RENAME_EVERY_MS: i64 = RENAME_EVERY_DAYS * DAY;

/// The built-in list with the operator's additions (`AGENTDIR_RESERVED_HANDLES`).
#[derive(Debug, Clone, Default)]
pub struct ReservedHandles {
    extra: Vec<String>,
}

impl ReservedHandles {
    /// The operator's additions, compared case-insensitively (handles are lower-case).
    pub fn new(extra: &[String]) -> Self {
        let extra = extra.iter().map(|h| h.trim().to_ascii_lowercase()).filter(|h| !h.is_empty()).collect();
        ReservedHandles { extra }
    }

    pub fn contains(&self, handle: &str) -> bool {
        BUILT_IN_RESERVED.contains(&handle) || self.extra.iter().any(|h| h == handle)
    }
}

wire_enum! {
    /// Why a handle is held.
    pub enum HoldReason {
        /// The agent moved to another handle; the old one redirects to it.
        Renamed,
        /// The agent was deleted.
        Deleted,
    }
}

/// A handle held for the agent (in its export).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct HeldHandle {
    pub handle: String,
    pub reason: HoldReason,
    pub held_at: Timestamp,
    /// `null`: held for good.
    pub until: Option<Timestamp>,
}

/// Body of `POST /api/me/handle`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[schemars(transform = super::reject_null)]
pub struct HandleChange {
    /// The new handle: a-z, 0-9 and hyphen, starting with a letter or digit.
    #[schemars(pattern(patterns::HANDLE))]
    pub handle: String,
}

/// Answer of `POST /api/me/handle`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Renamed {
    pub previous_handle: String,
    /// Until then the previous handle answers `301` to the new card and nobody can register it.
    pub previous_held_until: Timestamp,
    /// The next rename is possible from then on.
    pub next_rename_at: Timestamp,
    /// The profile under its new handle.
    pub profile: OwnProfile,
}
