//! The `collaborations` table, and the evidence count derived from it.

use rusqlite::{Connection, OptionalExtension, Row, params};

use crate::error::Result;

#[derive(Debug, Clone)]
pub struct CollabRow {
    pub id: String,
    pub proposer_id: i64,
    pub partner_id: i64,
    pub summary: String,
    pub post_id: Option<String>,
    pub request_id: Option<String>,
    pub status: String,
    pub created_at: i64,
    pub decided_at: Option<i64>,
    pub proposer: (String, String, bool),
    pub partner: (String, String, bool),
}

const SELECT: &str = "SELECT c.id, c.proposer_id, c.partner_id, c.summary, c.post_id,
    c.request_id, c.status, c.created_at, c.decided_at,
    p.handle, p.name, p.mailbox_verified_at IS NOT NULL,
    q.handle, q.name, q.mailbox_verified_at IS NOT NULL
    FROM collaborations c JOIN agents p ON p.id = c.proposer_id JOIN agents q ON q.id = c.partner_id";

fn from_row(r: &Row<'_>) -> rusqlite::Result<CollabRow> {
    Ok(CollabRow {
        id: r.get(0)?,
        proposer_id: r.get(1)?,
        partner_id: r.get(2)?,
        summary: r.get(3)?,
        post_id: r.get(4)?,
        request_id: r.get(5)?,
        status: r.get(6)?,
        created_at: r.get(7)?,
        decided_at: r.get(8)?,
        proposer: (r.get(9)?, r.get(10)?, r.get(11)?),
        partner: (r.get(12)?, r.get(13)?, r.get(14)?),
    })
}

pub struct NewCollabRow<'a> {
    pub id: &'a str,
    pub proposer_id: i64,
    pub partner_id: i64,
    pub summary: &'a str,
    pub post_id: Option<&'a str>,
    pub request_id: Option<&'a str>,
    pub created_at: i64,
}

pub fn insert(conn: &Connection, c: &NewCollabRow<'_>) -> Result<()> {
    conn.execute(
        "INSERT INTO collaborations (id, proposer_id, partner_id, summary, post_id, request_id, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        params![c.id, c.proposer_id, c.partner_id, c.summary, c.post_id, c.request_id, c.created_at],
    )?;
    Ok(())
}

pub fn by_id(conn: &Connection, id: &str) -> Result<Option<CollabRow>> {
    Ok(conn.prepare_cached(&format!("{SELECT} WHERE c.id = ?1"))?.query_row([id], from_row).optional()?)
}

/// Moves a proposed collaboration to `to`; false when it was no longer proposed.
pub fn decide(conn: &Connection, id: &str, to: &str, now: i64) -> Result<bool> {
    let n = conn.execute(
        "UPDATE collaborations SET status = ?2, decided_at = ?3 WHERE id = ?1 AND status = 'proposed'",
        params![id, to, now],
    )?;
    Ok(n == 1)
}

const PUBLIC: &str = "c.status = 'confirmed' AND p.suspended_at IS NULL AND q.suspended_at IS NULL";

/// Confirmed collaborations, newest first, optionally of one agent.
pub fn confirmed(
    conn: &Connection,
    handle: Option<&str>,
    limit: u32,
    offset: u32,
) -> Result<(u64, Vec<CollabRow>)> {
    let filter = format!("WHERE {PUBLIC} AND (?1 IS NULL OR p.handle = ?1 OR q.handle = ?1)");
    let total: i64 = conn.query_row(
        &format!(
            "SELECT COUNT(*) FROM collaborations c JOIN agents p ON p.id = c.proposer_id
             JOIN agents q ON q.id = c.partner_id {filter}"
        ),
        [handle],
        |r| r.get(0),
    )?;
    let mut stmt = conn.prepare_cached(&format!(
        "{SELECT} {filter} ORDER BY c.decided_at DESC, c.id DESC LIMIT ?2 OFFSET ?3"
    ))?;
    let rows = stmt.query_map(params![handle, limit, offset], from_row)?;
    Ok((total as u64, rows.collect::<rusqlite::Result<_>>()?))
}

/// The public ones among `ids` (confirmed, neither party suspended), in any order.
pub fn public_by_ids(conn: &Connection, ids: &[String]) -> Result<Vec<CollabRow>> {
    let list = serde_json::to_string(ids).unwrap_or_else(|_| "[]".into());
    let mut stmt = conn
        .prepare_cached(&format!("{SELECT} WHERE {PUBLIC} AND c.id IN (SELECT value FROM json_each(?1))"))?;
    let rows = stmt.query_map([list], from_row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Every collaboration record of one agent, either side, any status, newest first.
pub fn of_agent(conn: &Connection, agent: i64, limit: u32, offset: u32) -> Result<(u64, Vec<CollabRow>)> {
    let total: i64 = conn.query_row(
        "SELECT COUNT(*) FROM collaborations WHERE proposer_id = ?1 OR partner_id = ?1",
        [agent],
        |r| r.get(0),
    )?;
    let mut stmt = conn.prepare_cached(&format!(
        "{SELECT} WHERE c.proposer_id = ?1 OR c.partner_id = ?1 ORDER BY c.created_at DESC, c.id DESC LIMIT ?2 OFFSET ?3"
    ))?;
    let rows = stmt.query_map(params![agent, limit, offset], from_row)?;
    Ok((total as u64, rows.collect::<rusqlite::Result<_>>()?))
}

/// The rule behind `evidence.confirmed_collaborations` and the stats: confirmed, and both agents
/// claimed by owners with different emails (compared case-insensitively).
const COUNTED: &str = "c.status = 'confirmed'
    AND p.owner_claimed_at IS NOT NULL AND q.owner_claimed_at IS NOT NULL
    AND lower(p.owner_email) != lower(q.owner_email)";

pub fn evidence_count(conn: &Connection, agent: i64) -> Result<u64> {
    let n: i64 = conn
        .prepare_cached(&format!(
            "SELECT COUNT(*) FROM collaborations c JOIN agents p ON p.id = c.proposer_id
             JOIN agents q ON q.id = c.partner_id
             WHERE (c.proposer_id = ?1 OR c.partner_id = ?1) AND {COUNTED}"
        ))?
        .query_row([agent], |r| r.get(0))?;
    Ok(n as u64)
}

pub fn counted_total(conn: &Connection) -> Result<u64> {
    let n: i64 = conn.query_row(
        &format!(
            "SELECT COUNT(*) FROM collaborations c JOIN agents p ON p.id = c.proposer_id
             JOIN agents q ON q.id = c.partner_id WHERE {COUNTED}"
        ),
        [],
        |r| r.get(0),
    )?;
    Ok(n as u64)
}
