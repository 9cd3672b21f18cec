//! The `collaborations` table, and the evidence count derived from it.

use rusqlite::{Connection, OptionalExtension, Row, named_params};

use super::{PARTNER, PROPOSER};
use crate::domain::AgentRef;
use crate::domain::collab::CollabStatus;
use crate::domain::handles::DELETED;
use crate::error::Result;

#[derive(Debug, Clone)]
pub struct CollabRow {
    pub id: String,
    pub proposer_id: i64,
    pub partner_id: i64,
    pub summary: String,
    /// The public id of the call the work came from.
    pub call_id: Option<String>,
    pub request_id: Option<String>,
    pub status: CollabStatus,
    pub created_at: i64,
    pub decided_at: Option<i64>,
    pub proposer: AgentRef,
    pub partner: AgentRef,
}

/// A collaboration `c` with its proposer `p` and partner `q`.
const FROM: &str =
    "FROM collaborations c JOIN agents p ON p.id = c.proposer_id JOIN agents q ON q.id = c.partner_id";

/// A deleted party shows only as [`DELETED`], and the summary it proposed is not shown.
const SELECT: &str = const_format::concatcp!(
    "SELECT c.id, c.proposer_id, c.partner_id,
    CASE WHEN p.deleted_at IS NULL THEN c.summary ELSE '' END AS summary, c.call_id,
    c.request_id, c.status, c.created_at, c.decided_at,
    CASE WHEN p.deleted_at IS NULL THEN p.handle ELSE '",
    DELETED,
    "' END AS proposer_handle,
    CASE WHEN p.deleted_at IS NULL THEN p.name ELSE '",
    DELETED,
    "' END AS proposer_name,
    p.deleted_at IS NULL AND p.mailbox_verified_at IS NOT NULL AS proposer_verified,
    CASE WHEN q.deleted_at IS NULL THEN q.handle ELSE '",
    DELETED,
    "' END AS partner_handle,
    CASE WHEN q.deleted_at IS NULL THEN q.name ELSE '",
    DELETED,
    "' END AS partner_name,
    q.deleted_at IS NULL AND q.mailbox_verified_at IS NOT NULL AS partner_verified"
);

fn from_row(r: &Row<'_>) -> rusqlite::Result<CollabRow> {
    Ok(CollabRow {
        id: r.get("id")?,
        proposer_id: r.get("proposer_id")?,
        partner_id: r.get("partner_id")?,
        summary: r.get("summary")?,
        call_id: r.get("call_id")?,
        request_id: r.get("request_id")?,
        status: r.get("status")?,
        created_at: r.get("created_at")?,
        decided_at: r.get("decided_at")?,
        proposer: PROPOSER.read(r)?,
        partner: PARTNER.read(r)?,
    })
}

pub struct NewCollabRow<'a> {
    pub id: &'a str,
    pub proposer_id: i64,
    pub partner_id: i64,
    pub summary: &'a str,
    pub call_id: Option<&'a str>,
    pub request_id: Option<&'a str>,
    pub created_at: i64,
}

pub fn insert(conn: &Connection, c: &NewCollabRow<'_>) -> Result<()> {
    conn.prepare_cached(
        "INSERT INTO collaborations (id, proposer_id, partner_id, summary, call_id, request_id, created_at)
         VALUES (:id, :proposer_id, :partner_id, :summary, :call_id, :request_id, :created_at)",
    )?
    .execute(named_params! {
        ":id": c.id,
        ":proposer_id": c.proposer_id,
        ":partner_id": c.partner_id,
        ":summary": c.summary,
        ":call_id": c.call_id,
        ":request_id": c.request_id,
        ":created_at": c.created_at,
    })?;
    Ok(())
}

pub fn by_id(conn: &Connection, id: &str) -> Result<Option<CollabRow>> {
    Ok(conn
        .prepare_cached(&format!("{SELECT} {FROM} WHERE c.id = :id"))?
        .query_row(named_params! {":id": id}, from_row)
        .optional()?)
}

/// Moves a proposed collaboration to `to`; false when it was no longer proposed.
pub fn decide(conn: &Connection, id: &str, to: CollabStatus, now: i64) -> Result<bool> {
    let n = conn
        .prepare_cached(
            "UPDATE collaborations SET status = :to, decided_at = :now WHERE id = :id AND status = 'proposed'",
        )?
        .execute(named_params! {":id": id, ":to": to, ":now": now})?;
    Ok(n == 1)
}

/// The one rule of a collaboration the public may see: confirmed, both parties listed (neither
/// suspended nor deleted).
pub(crate) const PUBLIC: &str = "c.status = 'confirmed' AND p.listed AND q.listed";

/// Confirmed collaborations, newest first, optionally of one agent.
pub fn confirmed(
    conn: &Connection,
    handle: Option<&str>,
    limit: u32,
    offset: u32,
) -> Result<(u64, Vec<CollabRow>)> {
    let filter = format!("WHERE {PUBLIC} AND (:handle IS NULL OR p.handle = :handle OR q.handle = :handle)");
    let total: i64 = conn
        .prepare_cached(&format!("SELECT COUNT(*) AS n {FROM} {filter}"))?
        .query_row(named_params! {":handle": handle}, |r| r.get("n"))?;
    let mut stmt = conn.prepare_cached(&format!(
        "{SELECT} {FROM} {filter} ORDER BY c.decided_at DESC, c.id DESC LIMIT :limit OFFSET :offset"
    ))?;
    let rows =
        stmt.query_map(named_params! {":handle": handle, ":limit": limit, ":offset": offset}, from_row)?;
    Ok((total as u64, rows.collect::<rusqlite::Result<_>>()?))
}

/// The public ones among `ids`, in any order.
pub fn public_by_ids(conn: &Connection, ids: &[String]) -> Result<Vec<CollabRow>> {
    let list = serde_json::to_string(ids).unwrap_or_else(|_| "[]".into());
    let mut stmt = conn.prepare_cached(&format!(
        "{SELECT} {FROM} WHERE {PUBLIC} AND c.id IN (SELECT value FROM json_each(:ids))"
    ))?;
    let rows = stmt.query_map(named_params! {":ids": list}, from_row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Every collaboration record of one agent, either side, any status, newest first.
pub fn of_agent(conn: &Connection, agent: i64, limit: u32, offset: u32) -> Result<(u64, Vec<CollabRow>)> {
    let total: i64 = conn
        .prepare_cached(
            "SELECT COUNT(*) AS n FROM collaborations WHERE proposer_id = :agent OR partner_id = :agent",
        )?
        .query_row(named_params! {":agent": agent}, |r| r.get("n"))?;
    let mut stmt = conn.prepare_cached(&format!(
        "{SELECT} {FROM} WHERE c.proposer_id = :agent OR c.partner_id = :agent
         ORDER BY c.created_at DESC, c.id DESC LIMIT :limit OFFSET :offset"
    ))?;
    let rows =
        stmt.query_map(named_params! {":agent": agent, ":limit": limit, ":offset": offset}, from_row)?;
    Ok((total as u64, rows.collect::<rusqlite::Result<_>>()?))
}

/// The rule behind `evidence.confirmed_collaborations` and the stats: confirmed, and both agents
/// claimed by owners with different emails (compared case-insensitively), both listed (neither
/// suspended nor deleted: what the public may not see of a collaboration counts for nobody).
const COUNTED: &str = "c.status = 'confirmed' AND p.listed AND q.listed
    AND p.owner_claimed_at IS NOT NULL AND q.owner_claimed_at IS NOT NULL
    AND lower(p.owner_email) != lower(q.owner_email)";

pub fn evidence_count(conn: &Connection, agent: i64) -> Result<u64> {
    let n: i64 = conn
        .prepare_cached(&format!(
            "SELECT COUNT(*) AS n {FROM} WHERE (c.proposer_id = :agent OR c.partner_id = :agent) AND {COUNTED}"
        ))?
        .query_row(named_params! {":agent": agent}, |r| r.get("n"))?;
    Ok(n as u64)
}

/// [`evidence_count`] of every agent that has any, in one pass (at start). A counted
/// collaboration has two distinct parties (their owners differ), so each counts it once.
pub fn evidence_counts(conn: &Connection) -> Result<Vec<(i64, u64)>> {
    let mut stmt = conn.prepare(&format!(
        "SELECT agent_id, COUNT(*) AS n FROM (
             SELECT c.proposer_id AS agent_id {FROM} WHERE {COUNTED}
             UNION ALL SELECT c.partner_id AS agent_id {FROM} WHERE {COUNTED})
         GROUP BY agent_id"
    ))?;
    let rows = stmt.query_map([], |r| Ok((r.get("agent_id")?, r.get::<_, i64>("n")? as u64)))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

pub fn counted_total(conn: &Connection) -> Result<u64> {
    let n: i64 = conn
        .prepare_cached(&format!("SELECT COUNT(*) AS n {FROM} WHERE {COUNTED}"))?
        .query_row([], |r| r.get("n"))?;
    Ok(n as u64)
}
