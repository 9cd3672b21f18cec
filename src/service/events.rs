//! The agent's inbox: what the operations record as they write (`tell`, in the transaction of
//! the write that caused it), and reading it (`GET /api/me/events`): the agent's events after
//! its cursor, each with its summary and, where another agent wrote something it is about, that
//! text under `untrusted`, read as the agent reads it elsewhere.
//!
//! A read that finds nothing and may wait is two steps, so the adapter can give back what it
//! holds between them: `poll_events` answers at once or hands back a place among the waiting
//! polls (`app::waiting`), and `events_when_they_come` waits on that place for the agent's
//! next event (or the end of its wait) with no connection held, then reads again.

use std::time::Duration;

use rusqlite::Connection;
use tokio::time::Instant;

use super::{App, Caller};
use crate::app::waiting::Ticket;
use crate::derived::views;
use crate::domain::events::{
    ChangedBy, Cursor, DEFAULT_LIMIT, Event, EventDetail, EventKind, EventPage, EventsQuery,
    RECOVERY_COALESCE_MS, RETENTION_MS, SubjectKind, UNTRUSTED_NOTICE, Untrusted, gone_reply_summary,
    summary,
};
use crate::domain::notice::NOTICE;
use crate::error::{Error, Result, Rule};
use crate::store::agents::AgentRow;
use crate::store::events::{self as events_store, EventRow, NewEvent};
use crate::store::{agents, collabs, replies, requests};
use crate::time::{Timestamp, now_ms};

/// Records an event for `agent` about `subject_id`, inside the caller's transaction.
pub(crate) fn tell(
    tx: &Connection,
    agent: i64,
    kind: EventKind,
    subject_kind: SubjectKind,
    subject_id: &str,
    detail: EventDetail,
    now: i64,
) -> Result<()> {
    events_store::record(tx, &NewEvent { agent_id: agent, kind, subject_kind, subject_id, detail, at: now })
}

/// Tells the agent `before` shows (as it stood before the change, in this transaction) when its
/// trust level moved, with `why` (who moved it, and an operator's category and public note).
pub(crate) fn tell_trust(tx: &Connection, before: &AgentRow, why: EventDetail, now: i64) -> Result<()> {
    let after = agents::by_id(tx, before.id)?.ok_or(Error::Internal)?;
    if after.level() == before.level() {
        return Ok(());
    }
    let detail = EventDetail { level: Some(after.level()), previous_level: Some(before.level()), ..why };
    tell(tx, before.id, EventKind::TrustChanged, SubjectKind::Agent, &before.public_id, detail, now)
}

/// Who changed the agent, as an event's detail says it.
pub(crate) fn by(who: ChangedBy) -> EventDetail {
    EventDetail { by: Some(who), ..EventDetail::default() }
}

/// Tells agent `agent` (public id `sub`) that someone started a key recovery of it: one event per
/// [`RECOVERY_COALESCE_MS`] from the first start, counting the starts.
pub(crate) fn tell_recovery_started(tx: &Connection, agent: i64, sub: &str, now: i64) -> Result<()> {
    events_store::record_coalesced(
        tx,
        &NewEvent {
            agent_id: agent,
            kind: EventKind::RecoveryStarted,
            subject_kind: SubjectKind::Agent,
            subject_id: sub,
            detail: EventDetail::default(),
            at: now,
        },
        RECOVERY_COALESCE_MS,
    )
}

/// What another agent wrote that `row` is about, as `caller` reads it elsewhere; `None` when
/// the event is about nothing another agent wrote, or the record is gone.
fn untrusted(conn: &Connection, caller: i64, row: &EventRow, now: i64) -> Result<Option<Untrusted>> {
    let mut out = Untrusted { notice: UNTRUSTED_NOTICE, request: None, reply: None, collab: None };
    match row.subject_kind {
        SubjectKind::Request => {
            let Some(r) = requests::by_id(conn, &row.subject_id)? else { return Ok(None) };
            if r.sender_id != caller && r.recipient_id != caller {
                return Ok(None);
            }
            let sender = agents::by_id(conn, r.sender_id)?.ok_or(Error::Internal)?;
            let recipient = agents::by_id(conn, r.recipient_id)?.ok_or(Error::Internal)?;
            out.request = Some(views::request(r, &sender, &recipient, now));
        }
        SubjectKind::Reply => {
            let Some(r) = replies::on_call_of(conn, &row.subject_id, caller)? else { return Ok(None) };
            out.reply = Some(views::reply_on_own_call(r));
        }
        SubjectKind::Collab => {
            let Some(c) = collabs::by_id(conn, &row.subject_id)? else { return Ok(None) };
            if c.proposer_id != caller && c.partner_id != caller {
                return Ok(None);
            }
            out.collab = Some(views::collab(c, true));
        }
        SubjectKind::Call | SubjectKind::Endpoint | SubjectKind::LinkProof | SubjectKind::Agent => {
            return Ok(None);
        }
    }
    Ok(Some(out))
}

fn event(conn: &Connection, caller: i64, row: EventRow, now: i64) -> Result<Event> {
    let untrusted = untrusted(conn, caller, &row, now)?;
    let (summary_en, summary_zh) = match (row.kind, &untrusted) {
        (EventKind::ReplyReceived, None) => gone_reply_summary(&row.subject_id, &row.detail),
        _ => summary(row.kind, &row.subject_id, &row.detail, row.count),
    };
    Ok(Event {
        cursor: Cursor { seq: row.seq, at: row.at }.to_string(),
        kind: row.kind,
        at: Timestamp(row.at),
        subject: crate::domain::events::Subject { kind: row.subject_kind, id: row.subject_id },
        summary_en,
        summary_zh,
        count: (row.kind == EventKind::RecoveryStarted).then_some(row.count),
        detail: row.detail,
        untrusted,
    })
}

/// Where a read of the inbox starts: the given cursor (400 when no node could have written it:
/// not the server's form, its time ahead of the clock, or its seq past `newest`, the newest ever
/// handed out; 410 when events after it may have been forgotten), or the beginning. The seq is
/// judged before the age, so a cursor of another feed is told it is not one of the inbox's.
pub(crate) fn start(after: Option<&str>, now: i64, newest: u64) -> Result<u64> {
    let Some(text) = after else { return Ok(0) };
    let cursor = Cursor::parse(text)
        .filter(|c| c.written_by(now) && c.seq <= newest)
        .ok_or(Error::validation("after", Rule::Cursor))?;
    if cursor.expired(now) {
        return Err(Error::EventCursorExpired);
    }
    Ok(cursor.seq)
}

/// One page of `caller`'s inbox after `after`, read in one snapshot.
pub(crate) fn page(conn: &Connection, caller: i64, after: u64, limit: u32, now: i64) -> Result<EventPage> {
    let snapshot = conn.unchecked_transaction()?;
    let mut rows = events_store::of_agent(&snapshot, caller, after, limit + 1)?;
    let has_more = rows.len() > limit as usize;
    rows.truncate(limit as usize);
    // The reader holds everything up to the last event it gets; when more follow, nothing
    // younger than that event is missing, else nothing up to now.
    let next = match rows.last() {
        Some(last) if has_more => Cursor { seq: last.seq, at: last.at },
        Some(last) => Cursor { seq: last.seq, at: now },
        None => Cursor { seq: after, at: now },
    };
    let events = rows.into_iter().map(|row| event(&snapshot, caller, row, now)).collect::<Result<_>>()?;
    Ok(EventPage { notice: NOTICE, events, next: next.to_string(), has_more })
}

/// What a read of the inbox found at once.
pub enum Polled {
    /// The answer: events, or none and no wait asked for.
    Now(EventPage),
    /// Nothing yet, and the caller asked to wait: its place among the waiting polls.
    Later(Waiter),
}

/// A poll waiting for the caller's next event.
pub struct Waiter {
    caller: Caller,
    after: u64,
    limit: u32,
    until: Instant,
    ticket: Ticket,
}

impl App {
    /// `GET /api/me/events`: the caller's events after its cursor, or, when there are none and
    /// it asked to `wait`, a place among the waiting polls (429 past the agent's share, 503 past
    /// the server's), to be awaited with [`App::events_when_they_come`].
    pub async fn poll_events(&self, caller: Caller, q: EventsQuery) -> Result<Polled> {
        let now = now_ms();
        let limit = q.limit.unwrap_or(DEFAULT_LIMIT);
        let wait = Duration::from_secs(u64::from(q.wait.unwrap_or(0))).min(self.settings.longest_wait);
        let until = Instant::now() + wait;
        let id = caller.id;
        let (after, found) = self
            .blocking(move |app| {
                let conn = app.read()?;
                // Past the newest seq ever handed out, no node issued it. (The inbox is keyed: a
                // replica passes it to the primary, so this reads the primary's own table.)
                let after = start(q.after.as_deref(), now, events_store::max_seq(&conn)?)?;
                Ok((after, page(&conn, id, after, limit, now)?))
            })
            .await?;
        if !found.events.is_empty() || wait.is_zero() {
            return Ok(Polled::Now(found));
        }
        let ticket = self.waiting.enter(caller.id)?;
        Ok(Polled::Later(Waiter { caller, after, limit, until, ticket }))
    }

    /// Waits for the next event of the waiting poll's agent, or the end of its wait, then
    /// answers as `poll_events` does. Holds no database connection while it waits: each look is
    /// a short read. The wake-up is registered before each look, so an event committed after
    /// the look wakes it. Each look checks the caller's key again: a wait that outlives it (a
    /// rotation, a recovery, a deletion: say a thief's poll, and the owner's recovery the event
    /// it waited for) answers 401.
    pub async fn events_when_they_come(&self, waiter: Waiter) -> Result<EventPage> {
        let Waiter { caller, after, limit, until, ticket } = waiter;
        let notify = ticket.notify();
        let look = |caller: Caller| {
            self.blocking(move |app| {
                let conn = app.read()?;
                caller.current(&conn)?;
                page(&conn, caller.id, after, limit, now_ms())
            })
        };
        loop {
            let woken = notify.notified();
            tokio::pin!(woken);
            woken.as_mut().enable();
            let found = look(caller.clone()).await?;
            if !found.events.is_empty() || Instant::now() >= until {
                return Ok(found);
            }
            if tokio::time::timeout_at(until, woken).await.is_err() {
                return look(caller).await;
            }
        }
    }

    /// Forgets events older than their retention (the primary's upkeep).
    pub(crate) fn forget_old_events(&self) -> Result<usize> {
        let before = now_ms() - RETENTION_MS;
        self.write_blocking(move |tx| events_store::prune(tx, before))
    }
}
