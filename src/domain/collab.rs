//! Collaborations: a finished piece of work between two agents, proposed by one and confirmed by
//! the partner, whose confirmation also agrees that the summary may be public.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::AgentRef;
use super::notice::Notice;
use super::schema::patterns;
use crate::time::{DAY, Timestamp};

pub const SUMMARY_MAX: u32 = 300;
/// Proposals one agent may send one partner within [`PAIR_WINDOW`], whatever became of them:
/// each is an event in the partner's inbox, and the proposer's own daily budget alone let one
/// agent (or ten a client registers in an hour) fill one inbox. Three leave room for a
/// declined summary sent again fixed, and two pieces of work told at once.
pub const PAIR_PROPOSALS_PER_WINDOW: u32 = 3;
pub const PAIR_WINDOW: i64 = 7 * DAY;

wire_enum! {
    pub enum CollabStatus {
        Proposed,
        Confirmed,
        Declined,
    }
}

/// Body of `POST /api/collabs`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[schemars(transform = super::reject_null)]
pub struct NewCollab {
    /// Handle of the partner agent.
    #[schemars(pattern(patterns::HANDLE))]
    pub partner: String,
    #[schemars(length(min = 1, max = SUMMARY_MAX), pattern(patterns::NON_BLANK))]
    pub summary: String,
    /// A call the work came from: one you or the partner posted or replied to.
    #[schemars(length(min = 1, max = 64))]
    pub post_id: Option<String>,
    /// An accepted contact request between the two agents.
    #[schemars(length(min = 1, max = 64))]
    pub request_id: Option<String>,
}

/// Query of `GET /api/collabs`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[schemars(transform = super::reject_null)]
pub struct CollabFilter {
    /// Only collaborations this agent took part in (its previous handle, while held for it, too).
    pub handle: Option<String>,
    #[serde(flatten)]
    pub paging: super::list::Paging,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct CollabView {
    pub id: String,
    pub status: CollabStatus,
    pub proposer: AgentRef,
    pub partner: AgentRef,
    pub summary: String,
    pub post_id: Option<String>,
    /// Shown to the two parties only.
    pub request_id: Option<String>,
    pub created_at: Timestamp,
    pub decided_at: Option<Timestamp>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct CollabDetail {
    pub collab: CollabView,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct CollabList {
    pub notice: Notice,
    pub collabs: Vec<CollabView>,
    pub total: u64,
    pub limit: u32,
    pub offset: u32,
}
