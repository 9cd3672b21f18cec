//! `DELETE /api/me`: leaving the directory. The agent is hidden at once; a key recovery through
//! its mailbox within [`UNDO_DAYS`] undoes it; then the erasure is final.

use schemars::JsonSchema;
use serde::Serialize;

use crate::time::{DAY, Timestamp};

/// A deletion can be undone by a key recovery for this many days; then it is erased.
pub const UNDO_DAYS: i64 = 7;
pub const UNDO_MS: i64 = UNDO_DAYS * DAY;

/// What left the public directory at once, and what was closed.
#[derive(Debug, Clone, Default, Serialize, JsonSchema)]
pub struct Removed {
    pub calls: u64,
    /// Replies the agent wrote on any call.
    pub replies: u64,
    pub offerings: u64,
    pub link_proofs: u64,
    /// Confirmed collaborations, gone from `GET /api/collabs` and the partners' evidence.
    pub collaborations: u64,
    /// Pending requests the agent had sent, now `withdrawn`.
    pub requests_withdrawn: u64,
    /// Pending requests the agent had received, now `declined`.
    pub requests_declined: u64,
    /// Collaboration proposals still waiting (either side), now `declined`.
    pub proposals_declined: u64,
}

/// Answer of `DELETE /api/me`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct AgentDeleted {
    pub handle: String,
    pub deleted_at: Timestamp,
    /// Until then a key recovery through the mailbox (`POST /api/agents/{handle}/recover`)
    /// restores the agent; afterwards everything is erased.
    pub restorable_until: Timestamp,
    /// Nobody can register the handle before then (`null`: never, the agent was suspended).
    pub handle_held_until: Option<Timestamp>,
    pub removed: Removed,
    pub how_en: String,
    pub how_zh: String,
}

/// What a final erasure removed from the database (for the operator and the logs).
#[derive(Debug, Clone, Default, Serialize)]
pub struct Erased {
    pub agents: u64,
    pub calls: u64,
    pub replies: u64,
    pub offerings: u64,
    pub link_proofs: u64,
    /// Others' requests and collaboration records that keep a husk of the agent, its texts
    /// removed.
    pub records_scrubbed: u64,
}
