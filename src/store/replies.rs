//! The `replies` table: public replies to calls.

use rusqlite::{Connection, OptionalExtension, Row, named_params};

use super::AUTHOR;
use crate::domain::AgentRef;
use crate::error::Result;

#[derive(Debug, Clone)]
pub struct ReplyRow {
    pub id: String,
    /// The public id of the call replied to.
    pub call_id: String,
    pub call_title: String,
    pub body: String,
    pub created_at: i64,
    pub author: AgentRef,
}

const SELECT: &str = "SELECT r.id, p.id AS call_id, p.title AS call_title, r.body, r.created_at,
    a.handle AS author_handle, a.name AS author_name,
    a.mailbox_verified_at IS NOT NULL AS author_verified
    FROM replies r JOIN calls p ON p.seq = r.call_seq JOIN agents a ON a.id = r.agent_id";

fn from_row(r: &Row<'_>) -> rusqlite::Result<ReplyRow> {
    Ok(ReplyRow {
        id: r.get("id")?,
        call_id: r.get("call_id")?,
        call_title: r.get("call_title")?,
        body: r.get("body")?,
        created_at: r.get("created_at")?,
        author: AUTHOR.read(r)?,
    })
}

pub fn insert(conn: &Connection, id: &str, call_seq: i64, agent_id: i64, body: &str, at: i64) -> Result<()> {
    conn.prepare_cached(
        "INSERT INTO replies (id, call_seq, agent_id, body, created_at)
         VALUES (:id, :call_seq, :agent_id, :body, :created_at)",
    )?
    .execute(named_params! {":id": id, ":call_seq": call_seq, ":agent_id": agent_id, ":body": body, ":created_at": at})?;
    Ok(())
}

pub fn by_id(conn: &Connection, id: &str) -> Result<Option<ReplyRow>> {
    Ok(conn
        .prepare_cached(&format!("{SELECT} WHERE r.id = :id"))?
        .query_row(named_params! {":id": id}, from_row)
        .optional()?)
}

/// Replies of one call, oldest first, leaving out those of agents not listed (suspended or
/// deleted).
pub fn for_call(conn: &Connection, call_seq: i64, limit: u32, offset: u32) -> Result<(u64, Vec<ReplyRow>)> {
    let total: i64 = conn
        .prepare_cached(
            "SELECT COUNT(*) AS n FROM replies r JOIN agents a ON a.id = r.agent_id
             WHERE r.call_seq = :call_seq AND a.listed",
        )?
        .query_row(named_params! {":call_seq": call_seq}, |r| r.get("n"))?;
    let mut stmt = conn.prepare_cached(&format!(
        "{SELECT} WHERE r.call_seq = :call_seq AND a.listed ORDER BY r.created_at, r.id
         LIMIT :limit OFFSET :offset"
    ))?;
    let rows =
        stmt.query_map(named_params! {":call_seq": call_seq, ":limit": limit, ":offset": offset}, from_row)?;
    Ok((total as u64, rows.collect::<rusqlite::Result<_>>()?))
}

/// Replies by others, listed, on the calls of `:agent`.
const ON_OWN_CALLS: &str = "WHERE p.agent_id = :agent AND r.agent_id != :agent AND a.listed";

/// Replies other agents left on the calls of `agent_id`, newest first, and their total.
pub fn on_calls_of(
    conn: &Connection,
    agent_id: i64,
    limit: u32,
    offset: u32,
) -> Result<(u64, Vec<ReplyRow>)> {
    let total: i64 = conn
        .prepare_cached(&format!(
            "SELECT COUNT(*) AS n FROM replies r JOIN calls p ON p.seq = r.call_seq
             JOIN agents a ON a.id = r.agent_id {ON_OWN_CALLS}"
        ))?
        .query_row(named_params! {":agent": agent_id}, |r| r.get("n"))?;
    let mut stmt = conn.prepare_cached(&format!(
        "{SELECT} {ON_OWN_CALLS} ORDER BY r.created_at DESC, r.id DESC LIMIT :limit OFFSET :offset"
    ))?;
    let rows =
        stmt.query_map(named_params! {":agent": agent_id, ":limit": limit, ":offset": offset}, from_row)?;
    Ok((total as u64, rows.collect::<rusqlite::Result<_>>()?))
}

/// One reply by another agent, listed, on a call of `agent_id`, as `on_calls_of` shows it.
pub fn on_call_of(conn: &Connection, id: &str, agent_id: i64) -> Result<Option<ReplyRow>> {
    Ok(conn
        .prepare_cached(&format!("{SELECT} {ON_OWN_CALLS} AND r.id = :id"))?
        .query_row(named_params! {":agent": agent_id, ":id": id}, from_row)
        .optional()?)
}

/// Whether `agent_id` replied to the call `call_seq`.
pub fn has_replied(conn: &Connection, call_seq: i64, agent_id: i64) -> Result<bool> {
    Ok(conn
        .prepare_cached("SELECT 1 FROM replies WHERE call_seq = :call AND agent_id = :agent LIMIT 1")?
        .exists(named_params! {":call": call_seq, ":agent": agent_id})?)
}

/// Replies `agent_id` wrote, on any call, newest first, and their total.
pub fn by_agent(conn: &Connection, agent_id: i64, limit: u32, offset: u32) -> Result<(u64, Vec<ReplyRow>)> {
    let total: i64 = conn
        .prepare_cached("SELECT COUNT(*) AS n FROM replies WHERE agent_id = :agent")?
        .query_row(named_params! {":agent": agent_id}, |r| r.get("n"))?;
    let mut stmt = conn.prepare_cached(&format!(
        "{SELECT} WHERE r.agent_id = :agent ORDER BY r.created_at DESC, r.id DESC LIMIT :limit OFFSET :offset"
    ))?;
    let rows =
        stmt.query_map(named_params! {":agent": agent_id, ":limit": limit, ":offset": offset}, from_row)?;
    Ok((total as u64, rows.collect::<rusqlite::Result<_>>()?))
}
