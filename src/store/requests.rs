//! The `contact_requests` table. A pending row older than the expiry reads as expired, and every
//! move on it checks the same cut-off; the server marks such rows expired soon after
//! (`expire_due`), to tell both parties.

use rusqlite::{Connection, OptionalExtension, Row, named_params};

use crate::domain::contact_request::{Compensation, DeclineReason, Direction, EXPIRY, RequestStatus};
use crate::error::Result;

#[derive(Debug, Clone)]
pub struct RequestRow {
    pub id: String,
    pub sender_id: i64,
    pub recipient_id: i64,
    pub offering_id: Option<String>,
    pub offering_title: Option<String>,
    pub purpose: String,
    pub deliverable: String,
    pub deadline: Option<String>,
    pub compensation: Compensation,
    pub context: Option<String>,
    /// As stored: a pending request past its expiry still says pending here (see
    /// `RequestStatus::effective`).
    pub status: RequestStatus,
    pub decline_reason: Option<DeclineReason>,
    pub created_at: i64,
    pub decided_at: Option<i64>,
}

const COLUMNS: &str = "id, sender_id, recipient_id, offering_id, offering_title, purpose,
    deliverable, deadline, compensation, context, status, decline_reason, created_at, decided_at";

fn from_row(r: &Row<'_>) -> rusqlite::Result<RequestRow> {
    Ok(RequestRow {
        id: r.get("id")?,
        sender_id: r.get("sender_id")?,
        recipient_id: r.get("recipient_id")?,
        offering_id: r.get("offering_id")?,
        offering_title: r.get("offering_title")?,
        purpose: r.get("purpose")?,
        deliverable: r.get("deliverable")?,
        deadline: r.get("deadline")?,
        compensation: r.get("compensation")?,
        context: r.get("context")?,
        status: r.get("status")?,
        decline_reason: r.get("decline_reason")?,
        created_at: r.get("created_at")?,
        decided_at: r.get("decided_at")?,
    })
}

pub fn insert(conn: &Connection, r: &RequestRow) -> Result<()> {
    conn.prepare_cached(&format!(
        "INSERT INTO contact_requests ({COLUMNS}) VALUES (:id, :sender_id, :recipient_id, :offering_id,
            :offering_title, :purpose, :deliverable, :deadline, :compensation, :context, :status,
            :decline_reason, :created_at, :decided_at)"
    ))?
    .execute(named_params! {
        ":id": r.id,
        ":sender_id": r.sender_id,
        ":recipient_id": r.recipient_id,
        ":offering_id": r.offering_id,
        ":offering_title": r.offering_title,
        ":purpose": r.purpose,
        ":deliverable": r.deliverable,
        ":deadline": r.deadline,
        ":compensation": r.compensation,
        ":context": r.context,
        ":status": r.status,
        ":decline_reason": r.decline_reason,
        ":created_at": r.created_at,
        ":decided_at": r.decided_at,
    })?;
    Ok(())
}

pub fn by_id(conn: &Connection, id: &str) -> Result<Option<RequestRow>> {
    Ok(conn
        .prepare_cached(&format!("SELECT {COLUMNS} FROM contact_requests WHERE id = :id"))?
        .query_row(named_params! {":id": id}, from_row)
        .optional()?)
}

/// Whether `sender` has a live pending request to `recipient`.
pub fn has_pending(conn: &Connection, sender: i64, recipient: i64, now: i64) -> Result<bool> {
    Ok(conn
        .prepare_cached(
            "SELECT 1 FROM contact_requests WHERE sender_id = :sender AND recipient_id = :recipient
             AND status = 'pending' AND created_at > :cutoff LIMIT 1",
        )?
        .exists(named_params! {":sender": sender, ":recipient": recipient, ":cutoff": now - EXPIRY})?)
}

/// When `recipient` last declined a request of `sender` (its deletion declines none).
pub fn last_decline(conn: &Connection, sender: i64, recipient: i64) -> Result<Option<i64>> {
    Ok(conn
        .prepare_cached(
            "SELECT MAX(decided_at) AS at FROM contact_requests
             WHERE sender_id = :sender AND recipient_id = :recipient AND status = 'declined'
               AND declined_by_deletion = 0",
        )?
        .query_row(named_params! {":sender": sender, ":recipient": recipient}, |r| r.get("at"))?)
}

/// When the `nth` newest (from 1) of the requests `recipient` received since `since` came; none
/// when it received fewer.
pub fn nth_newest_since(conn: &Connection, recipient: i64, since: i64, nth: u32) -> Result<Option<i64>> {
    Ok(conn
        .prepare_cached(
            "SELECT created_at FROM contact_requests WHERE recipient_id = :recipient AND created_at > :since
             ORDER BY created_at DESC LIMIT 1 OFFSET :skip",
        )?
        .query_row(
            named_params! {":recipient": recipient, ":since": since, ":skip": i64::from(nth.saturating_sub(1))},
            |r| r.get("created_at"),
        )
        .optional()?)
}

/// Moves a live pending request to `to`. Returns false when it was no longer live and pending,
/// so that of two concurrent moves exactly one wins.
pub fn decide(
    conn: &Connection,
    id: &str,
    to: RequestStatus,
    reason: Option<DeclineReason>,
    now: i64,
) -> Result<bool> {
    let changed = conn
        .prepare_cached(
            "UPDATE contact_requests SET status = :to, decline_reason = :reason, decided_at = :now
             WHERE id = :id AND status = 'pending' AND created_at > :cutoff",
        )?
        .execute(
            named_params! {":id": id, ":to": to, ":reason": reason, ":now": now, ":cutoff": now - EXPIRY},
        )?;
    Ok(changed == 1)
}

/// A request the server just marked expired.
#[derive(Debug, Clone)]
pub struct Expired {
    pub id: String,
    pub sender_id: i64,
    pub recipient_id: i64,
}

/// Marks expired the pending requests past their expiry at `now`, at most `limit`; returns them.
pub fn expire_due(conn: &Connection, now: i64, limit: u32) -> Result<Vec<Expired>> {
    let mut stmt = conn.prepare_cached(
        "UPDATE contact_requests SET status = 'expired'
         WHERE id IN (SELECT id FROM contact_requests WHERE status = 'pending' AND created_at <= :cutoff
                      ORDER BY created_at LIMIT :limit)
         RETURNING id, sender_id, recipient_id",
    )?;
    let rows = stmt.query_map(named_params! {":cutoff": now - EXPIRY, ":limit": limit}, |r| {
        Ok(Expired { id: r.get("id")?, sender_id: r.get("sender_id")?, recipient_id: r.get("recipient_id")? })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Whether an accepted request with this id exists between the two agents, either way round.
pub fn accepted_between(conn: &Connection, id: &str, a: i64, b: i64) -> Result<bool> {
    Ok(conn
        .prepare_cached(
            "SELECT 1 FROM contact_requests WHERE id = :id AND status = 'accepted'
             AND ((sender_id = :a AND recipient_id = :b) OR (sender_id = :b AND recipient_id = :a))",
        )?
        .exists(named_params! {":id": id, ":a": a, ":b": b})?)
}

/// The requests of `agent`, newest first, with their total.
pub fn list_for(
    conn: &Connection,
    agent: i64,
    direction: Option<Direction>,
    status: Option<RequestStatus>,
    now: i64,
    limit: u32,
    offset: u32,
) -> Result<(u64, Vec<RequestRow>)> {
    let side = match direction {
        Some(Direction::In) => "recipient_id = :agent",
        Some(Direction::Out) => "sender_id = :agent",
        None => "(sender_id = :agent OR recipient_id = :agent)",
    };
    // Pending rows created at or before the cut-off read as expired.
    let (state, cutoff) = match status {
        None => ("1", None),
        Some(RequestStatus::Pending) => ("status = 'pending' AND created_at > :cutoff", Some(now - EXPIRY)),
        Some(RequestStatus::Expired) => {
            ("(status = 'expired' OR (status = 'pending' AND created_at <= :cutoff))", Some(now - EXPIRY))
        }
        Some(RequestStatus::Accepted) => ("status = 'accepted'", None),
        Some(RequestStatus::Declined) => ("status = 'declined'", None),
        Some(RequestStatus::Withdrawn) => ("status = 'withdrawn'", None),
    };
    let filter = format!("WHERE {side} AND {state}");
    let count_sql = format!("SELECT COUNT(*) AS n FROM contact_requests {filter}");
    let page_sql = format!(
        "SELECT {COLUMNS} FROM contact_requests {filter} ORDER BY created_at DESC, id DESC LIMIT :limit OFFSET :offset"
    );
    let (total, rows): (i64, Vec<RequestRow>) = match cutoff {
        Some(cutoff) => (
            conn.prepare_cached(&count_sql)?
                .query_row(named_params! {":agent": agent, ":cutoff": cutoff}, |r| r.get("n"))?,
            conn.prepare_cached(&page_sql)?
                .query_map(
                    named_params! {":agent": agent, ":cutoff": cutoff, ":limit": limit, ":offset": offset},
                    from_row,
                )?
                .collect::<rusqlite::Result<_>>()?,
        ),
        None => (
            conn.prepare_cached(&count_sql)?.query_row(named_params! {":agent": agent}, |r| r.get("n"))?,
            conn.prepare_cached(&page_sql)?
                .query_map(named_params! {":agent": agent, ":limit": limit, ":offset": offset}, from_row)?
                .collect::<rusqlite::Result<_>>()?,
        ),
    };
    Ok((total as u64, rows))
}
