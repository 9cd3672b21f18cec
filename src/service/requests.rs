//! Contact requests: sending under the recipient's policy, reading by the two parties, and the
//! moves accept, decline, withdraw and report.

use super::events::tell;
use super::{App, Caller};
use crate::app::limits::{InMemory, Persistent};
use crate::derived::views;
use crate::domain::call::{ReportInput, ReportTarget, Reported};
use crate::domain::contact_request::{
    CAP_WINDOW, COOLDOWN_AFTER_DECLINE, ContactRequestDetail, ContactRequestList, ContactRequestView,
    DeclineInput, DeclineReason, NewContactRequest, PAIR_REQUESTS_PER_WINDOW, RequestFilter, RequestStatus,
};
use crate::domain::events::{EventDetail, EventKind, RequestSide, SubjectKind};
use crate::domain::list::Page;
use crate::domain::notice::NOTICE;
use crate::error::{Error, RateRule, Result};
use crate::ids;
use crate::store::requests::{self as requests_store, RequestRow};
use crate::store::{self, agents, offerings, reports};
use crate::time::{day_passed, now_ms, seconds_until};

/// The roles a move needs.
#[derive(Clone, Copy, PartialEq)]
enum Role {
    Sender,
    Recipient,
}

/// One request as a party sees it; anyone else gets 404.
fn request_for(conn: &rusqlite::Connection, caller: &Caller, id: &str) -> Result<ContactRequestDetail> {
    let (row, _) = party_request(conn, caller, id)?;
    let sender = agents::by_id(conn, row.sender_id)?.ok_or(Error::NotFound)?;
    let recipient = agents::by_id(conn, row.recipient_id)?.ok_or(Error::NotFound)?;
    Ok(ContactRequestDetail { notice: NOTICE, request: views::request(row, &sender, &recipient, now_ms()) })
}

fn party_request(conn: &rusqlite::Connection, caller: &Caller, id: &str) -> Result<(RequestRow, Role)> {
    if !ids::has_prefix(id, ids::REQUEST) {
        return Err(Error::NotFound);
    }
    let row = requests_store::by_id(conn, id)?.ok_or(Error::NotFound)?;
    let role = if row.sender_id == caller.id {
        Role::Sender
    } else if row.recipient_id == caller.id {
        Role::Recipient
    } else {
        return Err(Error::NotFound);
    };
    Ok((row, role))
}

impl App {
    pub async fn send_request(
        &self,
        caller: Caller,
        handle: String,
        input: NewContactRequest,
    ) -> Result<ContactRequestDetail> {
        let now = now_ms();
        if input.deadline.as_deref().is_some_and(|d| day_passed(d, now)) {
            return Err(Error::DeadlinePassed);
        }
        let id = ids::new_id(ids::REQUEST);
        let app = self.clone();
        self.write(move |tx| {
            let recipient = super::handles::reachable_agent(tx, &handle, now)?;
            let sender = caller.row(tx)?;
            if recipient.id == sender.id {
                return Err(Error::SelfTarget);
            }
            let policy = &recipient.policy;
            let required = policy.min_level.max(1);
            if sender.level() < required {
                return Err(Error::TrustTooLow { required });
            }
            if !policy.accepting {
                return Err(Error::NotAccepting);
            }
            let listed = offerings::for_agent(tx, recipient.id)?;
            let offering = match &input.offering_id {
                None if policy.require_offering => {
                    return Err(Error::OfferingRequired { none_listed: listed.is_empty() });
                }
                None => None,
                Some(oid) => Some(
                    listed
                        .into_iter()
                        .find(|o| &o.id == oid)
                        .ok_or(Error::UnknownOffering { field: "offering_id".into() })?,
                ),
            };
            if requests_store::has_pending(tx, sender.id, recipient.id, now)? {
                return Err(Error::AlreadyPending);
            }
            if let Some(declined_at) = requests_store::last_decline(tx, sender.id, recipient.id)?
                && now < declined_at + COOLDOWN_AFTER_DECLINE
            {
                let retry_after = seconds_until(declined_at + COOLDOWN_AFTER_DECLINE, now);
                return Err(Error::CooldownAfterDecline { retry_after });
            }
            // One sender takes at most its pair's share of the recipient's cap.
            let share = PAIR_REQUESTS_PER_WINDOW;
            let pair = (sender.id, recipient.id);
            let window =
                store::nth_newest_of_pair_since(tx, &store::CONTACT_REQUESTS, pair, now - CAP_WINDOW, share)?;
            if let Some(at) = window {
                let retry_after = seconds_until(at + CAP_WINDOW, now);
                return Err(Error::RateLimited { retry_after, rule: RateRule::PairRequests });
            }
            // The window holds the cap's worth when its cap-th newest request is in it; a request
            // is taken again once that one has left (the oldest, unless the cap was lowered
            // below what the window already holds).
            let cap = u32::from(policy.weekly_cap);
            if let Some(at) = requests_store::nth_newest_since(tx, recipient.id, now - CAP_WINDOW, cap)? {
                let retry_after = seconds_until(at + CAP_WINDOW, now);
                return Err(Error::WeeklyCapReached { retry_after });
            }
            app.limits.check_agent(tx, Persistent::Requests, sender.id, now)?;
            requests_store::insert(
                tx,
                &RequestRow {
                    id: id.clone(),
                    sender_id: sender.id,
                    recipient_id: recipient.id,
                    offering_title: offering.as_ref().map(|o| o.title.clone()),
                    offering_id: offering.map(|o| o.id),
                    purpose: input.purpose,
                    deliverable: input.deliverable,
                    deadline: input.deadline,
                    compensation: input.compensation,
                    context: input.context,
                    status: RequestStatus::Pending,
                    decline_reason: None,
                    created_at: now,
                    decided_at: None,
                },
            )?;
            app.limits.record_agent(tx, Persistent::Requests, sender.id, now)?;
            agents::touch(tx, sender.id, now, false)?;
            let received = EventDetail::default();
            tell(tx, recipient.id, EventKind::RequestReceived, SubjectKind::Request, &id, received, now)?;
            request_for(tx, &caller, &id)
        })
        .await
    }

    pub async fn get_request(&self, caller: Caller, id: String) -> Result<ContactRequestDetail> {
        self.blocking(move |app| request_for(&*app.read()?, &caller, &id)).await
    }

    async fn move_request(
        &self,
        caller: Caller,
        id: String,
        needs: Role,
        to: RequestStatus,
        reason: Option<DeclineReason>,
    ) -> Result<ContactRequestDetail> {
        let now = now_ms();
        self.write(move |tx| {
            let (row, role) = party_request(tx, &caller, &id)?;
            if role != needs {
                return Err(Error::Forbidden);
            }
            // Accepting shows both mailboxes: not to a sender the directory suspended (or that
            // left), which nobody may reach meanwhile. Declining stays possible.
            if to == RequestStatus::Accepted
                && !agents::by_id(tx, row.sender_id)?.is_some_and(|a| a.is_listed())
            {
                return Err(Error::NotFound);
            }
            if !requests_store::decide(tx, &id, to, reason, now)? {
                let status = RequestStatus::effective(row.status, row.created_at, now);
                return Err(Error::InvalidState { status: status.as_str() });
            }
            // The other party hears of the move.
            let (told, kind) = match to {
                RequestStatus::Accepted => (row.sender_id, EventKind::RequestAccepted),
                RequestStatus::Declined => (row.sender_id, EventKind::RequestDeclined),
                _ => (row.recipient_id, EventKind::RequestWithdrawn),
            };
            let detail = EventDetail { decline_reason: reason, ..EventDetail::default() };
            tell(tx, told, kind, SubjectKind::Request, &id, detail, now)?;
            agents::touch(tx, caller.id, now, false)?;
            request_for(tx, &caller, &id)
        })
        .await
    }

    pub async fn accept_request(&self, caller: Caller, id: String) -> Result<ContactRequestDetail> {
        self.move_request(caller, id, Role::Recipient, RequestStatus::Accepted, None).await
    }

    pub async fn decline_request(
        &self,
        caller: Caller,
        id: String,
        input: DeclineInput,
    ) -> Result<ContactRequestDetail> {
        let reason = input.reason;
        self.move_request(caller, id, Role::Recipient, RequestStatus::Declined, reason).await
    }

    pub async fn withdraw_request(&self, caller: Caller, id: String) -> Result<ContactRequestDetail> {
        self.move_request(caller, id, Role::Sender, RequestStatus::Withdrawn, None).await
    }

    /// The recipient reports a request to the operators; its state does not change.
    pub async fn report_request(
        &self,
        caller: Caller,
        id: String,
        input: ReportInput,
        client_ip: String,
    ) -> Result<Reported> {
        let report_id = ids::new_id(ids::REPORT);
        let reported = report_id.clone();
        let app = self.clone();
        self.write(move |tx| {
            let (_, role) = party_request(tx, &caller, &id)?;
            if role != Role::Recipient {
                return Err(Error::Forbidden);
            }
            // The same budget as reports of calls, so reports cannot flood the operators' queue.
            app.limits.take(InMemory::Reports, &client_ip)?;
            reports::insert(
                tx,
                &reports::NewReport {
                    id: &report_id,
                    target_kind: ReportTarget::Request,
                    target_id: &id,
                    reporter_agent_id: Some(caller.id),
                    reporter_ip: None,
                    reason: input.reason.as_deref(),
                    created_at: now_ms(),
                },
            )
        })
        .await?;
        Ok(Reported { id: reported, reported: true })
    }

    pub async fn my_requests(&self, caller: Caller, f: RequestFilter) -> Result<ContactRequestList> {
        self.blocking(move |app| {
            let page = Page::from(f.paging);
            let now = now_ms();
            let conn = app.read()?;
            let (total, rows) = requests_store::list_for(
                &conn,
                caller.id,
                f.direction,
                f.status,
                now,
                page.limit,
                page.offset,
            )?;
            let requests = request_views(&conn, rows, now)?;
            Ok(ContactRequestList { notice: NOTICE, requests, total, limit: page.limit, offset: page.offset })
        })
        .await
    }
}

/// Requests expired at most this many at a time (the pass runs every second).
const EXPIRED_PER_PASS: u32 = 1_000;

/// Marks expired the pending requests past their expiry at `now`, inside the caller's
/// transaction, and tells both parties of each. Returns how many.
pub(crate) fn expire_due(tx: &rusqlite::Connection, now: i64) -> Result<usize> {
    let expired = requests_store::expire_due(tx, now, EXPIRED_PER_PASS)?;
    for r in &expired {
        for (agent, side) in [(r.sender_id, RequestSide::Sender), (r.recipient_id, RequestSide::Recipient)] {
            let detail = EventDetail { side: Some(side), ..EventDetail::default() };
            tell(tx, agent, EventKind::RequestExpired, SubjectKind::Request, &r.id, detail, now)?;
        }
    }
    Ok(expired.len())
}

/// Requests as their parties see them.
pub(crate) fn request_views(
    conn: &rusqlite::Connection,
    rows: Vec<RequestRow>,
    now: i64,
) -> Result<Vec<ContactRequestView>> {
    let mut requests = Vec::with_capacity(rows.len());
    for row in rows {
        let sender = agents::by_id(conn, row.sender_id)?.ok_or(Error::Internal)?;
        let recipient = agents::by_id(conn, row.recipient_id)?.ok_or(Error::Internal)?;
        requests.push(views::request(row, &sender, &recipient, now));
    }
    Ok(requests)
}
