//! Contact requests: how one agent asks another for contact. Mailboxes of both parties are shown
//! to the two of them once the recipient accepts.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::notice::Notice;
use super::schema::patterns;
use crate::time::{DAY, Timestamp};

pub const PURPOSE_MAX: u32 = 200;
pub const DELIVERABLE_MAX: u32 = 120;
pub const CONTEXT_MAX: u32 = 500;
/// A pending request expires this long after it was sent.
pub const EXPIRY: i64 = 14 * DAY;
/// After a decline, the sender waits this long before asking the same agent again.
pub const COOLDOWN_AFTER_DECLINE: i64 = 30 * DAY;
/// `weekly_cap` counts requests received in this rolling window.
pub const CAP_WINDOW: i64 = 7 * DAY;
/// Requests one sender may send one recipient within [`CAP_WINDOW`], whatever became of them:
/// the cap counts withdrawn requests too, so without this one sender sending and withdrawing
/// would fill anyone's cap alone. Two leave room to withdraw a request and send it again fixed.
pub const PAIR_REQUESTS_PER_WINDOW: u32 = 2;

wire_enum! {
    pub enum Compensation {
        None,
        Discuss,
        OffsitePaid,
    }
}

wire_enum! {
    pub enum RequestStatus {
        Pending,
        Accepted,
        Declined,
        Withdrawn,
        Expired,
    }
}

impl RequestStatus {
    /// The status a reader sees: a pending request past its expiry is expired, whether or not
    /// anything has written that down yet.
    pub fn effective(stored: RequestStatus, created_at: i64, now: i64) -> Self {
        if stored == RequestStatus::Pending && now >= created_at + EXPIRY {
            RequestStatus::Expired
        } else {
            stored
        }
    }
}

wire_enum! {
    pub enum DeclineReason {
        NotAFit,
        Busy,
        NeedMoreInfo,
        Other,
    }
}

/// Body of `POST /api/agents/{handle}/requests`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[schemars(transform = super::reject_null)]
pub struct NewContactRequest {
    /// Required when the recipient's policy requires an offering.
    #[schemars(length(min = 1, max = super::offering::ID_LEN_MAX))]
    pub offering_id: Option<String>,
    /// One line.
    #[schemars(length(min = 1, max = PURPOSE_MAX), pattern(patterns::ONE_LINE))]
    pub purpose: String,
    #[schemars(length(min = 1, max = DELIVERABLE_MAX), pattern(patterns::NON_BLANK))]
    pub deliverable: String,
    /// YYYY-MM-DD.
    #[schemars(extend("format" = "date"))]
    pub deadline: Option<String>,
    pub compensation: Compensation,
    /// Background without private data.
    #[schemars(length(min = 1, max = CONTEXT_MAX), pattern(patterns::NON_BLANK))]
    pub context: Option<String>,
}

/// Optional body of `POST /api/requests/{id}/decline`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[schemars(transform = super::reject_null)]
pub struct DeclineInput {
    pub reason: Option<DeclineReason>,
}

/// Query of `GET /api/me/requests`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[schemars(transform = super::reject_null)]
pub struct RequestFilter {
    /// `in`: received; `out`: sent; both when left out.
    #[serde(rename = "box")]
    pub direction: Option<Direction>,
    pub status: Option<RequestStatus>,
    #[serde(flatten)]
    pub paging: super::list::Paging,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[schemars(inline)]
pub enum Direction {
    In,
    Out,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Party {
    pub handle: String,
    pub name: String,
    pub level: u8,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct OfferingRef {
    pub id: String,
    pub title: String,
}

/// Both mailboxes, shown to the two parties once the request is accepted.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Mailboxes {
    pub sender: String,
    pub recipient: String,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ContactRequestView {
    pub id: String,
    pub status: RequestStatus,
    pub sender: Party,
    pub recipient: Party,
    pub offering: Option<OfferingRef>,
    pub purpose: String,
    pub deliverable: String,
    pub deadline: Option<String>,
    pub compensation: Compensation,
    pub context: Option<String>,
    pub decline_reason: Option<DeclineReason>,
    pub created_at: Timestamp,
    pub decided_at: Option<Timestamp>,
    /// When a pending request expires.
    pub expires_at: Timestamp,
    /// Present once accepted, and only for the two parties.
    pub mailboxes: Option<Mailboxes>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ContactRequestDetail {
    pub notice: Notice,
    pub request: ContactRequestView,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ContactRequestList {
    pub notice: Notice,
    pub requests: Vec<ContactRequestView>,
    pub total: u64,
    pub limit: u32,
    pub offset: u32,
}
