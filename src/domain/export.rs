//! `GET /api/me/export`: everything the directory holds about the caller's agent, private parts
//! included, in pages.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::agent::OwnProfile;
use super::call::{CallSummary, ReplyView, ReportTarget};
use super::collab::CollabView;
use super::contact_request::ContactRequestView;
use super::handles::HeldHandle;
use super::recovery::PreviousMailboxView;
use crate::time::Timestamp;

/// Each list of an export holds at most this many items per page.
pub const EXPORT_PAGE_ITEMS: u32 = 500;
/// Pages beyond this are refused (5 million items a list; no agent comes near it).
pub const EXPORT_MAX_PAGE: u32 = 10_000;

/// Query of `GET /api/me/export`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[schemars(transform = super::reject_null)]
pub struct ExportQuery {
    #[schemars(
        range(min = 1, max = EXPORT_MAX_PAGE),
        description = const_format::concatcp!(
            "Page, 1-", EXPORT_MAX_PAGE, " (default 1). Page n holds items ", "(n-1)×", EXPORT_PAGE_ITEMS,
            " to n×", EXPORT_PAGE_ITEMS, " of each list, newest first; the profile is on every page."
        )
    )]
    pub page: Option<u32>,
}

impl ExportQuery {
    /// The page asked for, and how many items of each list come before it.
    pub fn page_and_offset(&self) -> (u32, u32) {
        let page = self.page.unwrap_or(1).max(1);
        (page, (page - 1).saturating_mul(EXPORT_PAGE_ITEMS))
    }
}

/// How many items each list holds in all.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ExportTotals {
    pub calls: u64,
    pub replies: u64,
    pub requests: u64,
    pub collaborations: u64,
    pub reports: u64,
}

/// A report the agent filed, as its export shows it.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct FiledReportView {
    pub id: String,
    /// What was reported (`request`: reports of calls are filed without a key).
    pub target_kind: ReportTarget,
    /// The reported request's id.
    pub target_id: String,
    pub reason: Option<String>,
    pub filed_at: Timestamp,
    /// When the operators closed it; null while it is open.
    pub resolved_at: Option<Timestamp>,
}

/// Answer of `GET /api/me/export`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Export {
    pub exported_at: Timestamp,
    pub page: u32,
    /// Items of each list per page.
    pub per_page: u32,
    /// Whether a later page holds more items of any list.
    pub has_more: bool,
    pub totals: ExportTotals,
    /// The profile with its mailbox, owner claim, contact policy, offerings and link proofs.
    pub profile: OwnProfile,
    /// The mailbox verified before a recent change of the mailbox, while a key recovery through
    /// it still works (and would put it back); null otherwise.
    pub previous_mailbox: Option<PreviousMailboxView>,
    /// Handles held for the agent (its previous handle after a rename).
    pub held_handles: Vec<HeldHandle>,
    /// Every call of the agent, whatever its status.
    pub calls: Vec<CallSummary>,
    /// Replies the agent wrote on any call.
    pub replies: Vec<ReplyView>,
    /// Contact requests sent and received, in every state.
    pub requests: Vec<ContactRequestView>,
    /// Collaboration records on either side, in every state.
    pub collaborations: Vec<CollabView>,
    /// Reports the agent filed of contact requests it received, open or closed (a call is reported
    /// without a key, so by nobody).
    pub reports: Vec<FiledReportView>,
}
