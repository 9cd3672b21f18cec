//! The `contact_requests` table. Expiry is not stored: a pending row older than the expiry is
//! read as expired, and every move on it checks the same cut-off.

use rusqlite::{Connection, OptionalExtension, Row, params};

use crate::domain::contact_request::{Direction, EXPIRY, RequestStatus};
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
    pub compensation: String,
    pub context: Option<String>,
    pub status: String,
    pub decline_reason: Option<String>,
    pub created_at: i64,
    pub decided_at: Option<i64>,
}

const COLUMNS: &str = "id, sender_id, recipient_id, offering_id, offering_title, purpose,
    deliverable, deadline, compensation, context, status, decline_reason, created_at, decided_at";

fn from_row(r: &Row<'_>) -> rusqlite::Result<RequestRow> {
    Ok(RequestRow {
        id: r.get(0)?,
        sender_id: r.get(1)?,
        recipient_id: r.get(2)?,
        offering_id: r.get(3)?,
        offering_title: r.get(4)?,
        purpose: r.get(5)?,
        deliverable: r.get(6)?,
        deadline: r.get(7)?,
        compensation: r.get(8)?,
        context: r.get(9)?,
        status: r.get(10)?,
        decline_reason: r.get(11)?,
        created_at: r.get(12)?,
        decided_at: r.get(13)?,
    })
}

pub fn insert(conn: &Connection, r: &RequestRow) -> Result<()> {
    conn.execute(
        &format!("INSERT INTO contact_requests ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)"),
        params![
            r.id,
            r.sender_id,
            r.recipient_id,
            r.offering_id,
            r.offering_title,
            r.purpose,
            r.deliverable,
            r.deadline,
            r.compensation,
            r.context,
            r.status,
            r.decline_reason,
            r.created_at,
            r.decided_at,
        ],
    )?;
    Ok(())
}

pub fn by_id(conn: &Connection, id: &str) -> Result<Option<RequestRow>> {
    Ok(conn
        .prepare_cached(&format!("SELECT {COLUMNS} FROM contact_requests WHERE id = ?1"))?
        .query_row([id], from_row)
        .optional()?)
}

/// Whether `sender` has a live pending request to `recipient`.
pub fn has_pending(conn: &Connection, sender: i64, recipient: i64, now: i64) -> Result<bool> {
    Ok(conn
        .prepare_cached(
            "SELECT 1 FROM contact_requests WHERE sender_id = ?1 AND recipient_id = ?2
             AND status = 'pending' AND created_at > ?3 LIMIT 1",
        )?
        .exists(params![sender, recipient, now - EXPIRY])?)
}

/// When `recipient` last declined a request of `sender`.
pub fn last_decline(conn: &Connection, sender: i64, recipient: i64) -> Result<Option<i64>> {
    Ok(conn
        .prepare_cached(
            "SELECT MAX(decided_at) FROM contact_requests WHERE sender_id = ?1 AND recipient_id = ?2
             AND status = 'declined'",
        )?
        .query_row(params![sender, recipient], |r| r.get(0))?)
}

/// Requests `recipient` received since `since`: how many, and when the oldest of them came.
pub fn received_since(conn: &Connection, recipient: i64, since: i64) -> Result<(u64, Option<i64>)> {
    Ok(conn
        .prepare_cached(
            "SELECT COUNT(*), MIN(created_at) FROM contact_requests WHERE recipient_id = ?1 AND created_at > ?2",
        )?
        .query_row(params![recipient, since], |r| Ok((r.get::<_, i64>(0)? as u64, r.get(1)?)))?)
}

/// Requests `sender` sent since `since`: how many, and when the oldest of them went out.
pub fn sent_since(conn: &Connection, sender: i64, since: i64) -> Result<(u64, Option<i64>)> {
    Ok(conn
        .prepare_cached(
            "SELECT COUNT(*), MIN(created_at) FROM contact_requests WHERE sender_id = ?1 AND created_at > ?2",
        )?
        .query_row(params![sender, since], |r| Ok((r.get::<_, i64>(0)? as u64, r.get(1)?)))?)
}

/// Moves a live pending request to `to`. Returns false when it was no longer live and pending,
/// so that of two concurrent moves exactly one wins.
pub fn decide(
    conn: &Connection,
    id: &str,
    to: RequestStatus,
    reason: Option<&str>,
    now: i64,
) -> Result<bool> {
    let changed = conn.execute(
        "UPDATE contact_requests SET status = ?2, decline_reason = ?3, decided_at = ?4
         WHERE id = ?1 AND status = 'pending' AND created_at > ?5",
        params![id, to.as_str(), reason, now, now - EXPIRY],
    )?;
    Ok(changed == 1)
}

/// Whether an accepted request with this id exists between the two agents, either way round.
pub fn accepted_between(conn: &Connection, id: &str, a: i64, b: i64) -> Result<bool> {
    Ok(conn
        .prepare_cached(
            "SELECT 1 FROM contact_requests WHERE id = ?1 AND status = 'accepted'
             AND ((sender_id = ?2 AND recipient_id = ?3) OR (sender_id = ?3 AND recipient_id = ?2))",
        )?
        .exists(params![id, a, b])?)
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
        Some(Direction::In) => "recipient_id = ?1",
        Some(Direction::Out) => "sender_id = ?1",
        None => "(sender_id = ?1 OR recipient_id = ?1)",
    };
    // ?2 is the expiry cut-off: pending rows created at or before it read as expired.
    let state = match status {
        None => "1",
        Some(RequestStatus::Pending) => "status = 'pending' AND created_at > ?2",
        Some(RequestStatus::Expired) => "(status = 'expired' OR (status = 'pending' AND created_at <= ?2))",
        Some(RequestStatus::Accepted) => "status = 'accepted'",
        Some(RequestStatus::Declined) => "status = 'declined'",
        Some(RequestStatus::Withdrawn) => "status = 'withdrawn'",
    };
    let filter = format!("WHERE {side} AND {state} AND ?2 = ?2");
    let cutoff = now - EXPIRY;
    let total: i64 = conn.query_row(
        &format!("SELECT COUNT(*) FROM contact_requests {filter}"),
        params![agent, cutoff],
        |r| r.get(0),
    )?;
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM contact_requests {filter} ORDER BY created_at DESC, id DESC LIMIT ?3 OFFSET ?4"
    ))?;
    let rows = stmt.query_map(params![agent, cutoff, limit, offset], from_row)?;
    Ok((total as u64, rows.collect::<rusqlite::Result<_>>()?))
}
