//! The `replies` table: public replies to calls.

use rusqlite::{Connection, Row, params};

use crate::error::Result;

#[derive(Debug, Clone)]
pub struct ReplyRow {
    pub id: String,
    pub post_id: String,
    pub post_title: String,
    pub body: String,
    pub created_at: i64,
    pub author_handle: String,
    pub author_name: String,
    pub author_verified: bool,
}

const SELECT: &str = "SELECT r.id, p.id, p.title, r.body, r.created_at, a.handle, a.name,
    a.mailbox_verified_at IS NOT NULL
    FROM replies r JOIN posts p ON p.seq = r.post_seq JOIN agents a ON a.id = r.agent_id";

fn from_row(r: &Row<'_>) -> rusqlite::Result<ReplyRow> {
    Ok(ReplyRow {
        id: r.get(0)?,
        post_id: r.get(1)?,
        post_title: r.get(2)?,
        body: r.get(3)?,
        created_at: r.get(4)?,
        author_handle: r.get(5)?,
        author_name: r.get(6)?,
        author_verified: r.get(7)?,
    })
}

pub fn insert(conn: &Connection, id: &str, post_seq: i64, agent_id: i64, body: &str, at: i64) -> Result<()> {
    conn.prepare_cached(
        "INSERT INTO replies (id, post_seq, agent_id, body, created_at) VALUES (?1, ?2, ?3, ?4, ?5)",
    )?
    .execute(params![id, post_seq, agent_id, body, at])?;
    Ok(())
}

pub fn by_id(conn: &Connection, id: &str) -> Result<Option<ReplyRow>> {
    use rusqlite::OptionalExtension;
    Ok(conn.prepare_cached(&format!("{SELECT} WHERE r.id = ?1"))?.query_row([id], from_row).optional()?)
}

/// Replies of one call, oldest first, leaving out those of suspended agents.
pub fn for_call(conn: &Connection, post_seq: i64) -> Result<Vec<ReplyRow>> {
    let mut stmt = conn.prepare_cached(&format!(
        "{SELECT} WHERE r.post_seq = ?1 AND a.suspended_at IS NULL ORDER BY r.created_at, r.id"
    ))?;
    let rows = stmt.query_map([post_seq], from_row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

const ON_OWN_CALLS: &str = "WHERE p.agent_id = ?1 AND r.agent_id != ?1 AND a.suspended_at IS NULL";

/// Replies other agents left on the calls of `agent_id`, newest first, and their total.
pub fn on_calls_of(
    conn: &Connection,
    agent_id: i64,
    limit: u32,
    offset: u32,
) -> Result<(u64, Vec<ReplyRow>)> {
    let total: i64 = conn.query_row(
        &format!(
            "SELECT COUNT(*) FROM replies r JOIN posts p ON p.seq = r.post_seq
             JOIN agents a ON a.id = r.agent_id {ON_OWN_CALLS}"
        ),
        [agent_id],
        |r| r.get(0),
    )?;
    let mut stmt = conn.prepare_cached(&format!(
        "{SELECT} {ON_OWN_CALLS} ORDER BY r.created_at DESC, r.id DESC LIMIT ?2 OFFSET ?3"
    ))?;
    let rows = stmt.query_map(params![agent_id, limit, offset], from_row)?;
    Ok((total as u64, rows.collect::<rusqlite::Result<_>>()?))
}
