//! The `posts` table: calls, their status, and the summaries shown in lists and cards.

use std::collections::HashMap;

use rusqlite::{Connection, OptionalExtension, Row, params};

use super::{from_json, id_list, to_json};
use crate::error::Result;

#[derive(Debug, Clone)]
pub struct CallRow {
    pub seq: i64,
    pub id: String,
    pub agent_id: i64,
    pub kind: String,
    pub title: String,
    pub body: String,
    pub deliverable: Option<String>,
    pub deadline: Option<String>,
    pub constraints: Option<String>,
    pub languages: Vec<String>,
    pub tags: Vec<String>,
    pub lang: String,
    pub status: String,
    pub created_at: i64,
    /// Filled by the reads that join it.
    pub reply_count: u64,
    pub author_handle: String,
    pub author_name: String,
    pub author_verified: bool,
    pub author_suspended: bool,
}

impl CallRow {
    /// Shown to the public: active, and its author not suspended.
    pub fn visible(&self) -> bool {
        self.status == "active" && !self.author_suspended
    }
}

const SELECT: &str = "SELECT p.seq, p.id, p.agent_id, p.kind, p.title, p.body, p.deliverable,
    p.deadline, p.constraints, p.languages, p.tags, p.lang, p.status, p.created_at,
    (SELECT COUNT(*) FROM replies r JOIN agents ra ON ra.id = r.agent_id
        WHERE r.post_seq = p.seq AND ra.suspended_at IS NULL),
    a.handle, a.name, a.mailbox_verified_at IS NOT NULL, a.suspended_at IS NOT NULL
    FROM posts p JOIN agents a ON a.id = p.agent_id";

fn from_row(r: &Row<'_>) -> rusqlite::Result<CallRow> {
    Ok(CallRow {
        seq: r.get(0)?,
        id: r.get(1)?,
        agent_id: r.get(2)?,
        kind: r.get(3)?,
        title: r.get(4)?,
        body: r.get(5)?,
        deliverable: r.get(6)?,
        deadline: r.get(7)?,
        constraints: r.get(8)?,
        languages: from_json(&r.get::<_, String>(9)?),
        tags: from_json(&r.get::<_, String>(10)?),
        lang: r.get(11)?,
        status: r.get(12)?,
        created_at: r.get(13)?,
        reply_count: r.get::<_, i64>(14)? as u64,
        author_handle: r.get(15)?,
        author_name: r.get(16)?,
        author_verified: r.get(17)?,
        author_suspended: r.get(18)?,
    })
}

pub struct NewCallRow<'a> {
    pub id: &'a str,
    pub agent_id: i64,
    pub kind: &'a str,
    pub title: &'a str,
    pub body: &'a str,
    pub deliverable: Option<&'a str>,
    pub deadline: Option<&'a str>,
    pub constraints: Option<&'a str>,
    pub languages: &'a [String],
    pub tags: &'a [String],
    pub lang: &'a str,
    pub created_at: i64,
}

pub fn insert(conn: &Connection, c: &NewCallRow<'_>) -> Result<i64> {
    conn.prepare_cached(
        "INSERT INTO posts (id, agent_id, kind, title, body, deliverable, deadline, constraints,
            languages, tags, lang, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
    )?
    .execute(params![
        c.id,
        c.agent_id,
        c.kind,
        c.title,
        c.body,
        c.deliverable,
        c.deadline,
        c.constraints,
        to_json(c.languages),
        to_json(c.tags),
        c.lang,
        c.created_at,
    ])?;
    Ok(conn.last_insert_rowid())
}

pub fn by_id(conn: &Connection, id: &str) -> Result<Option<CallRow>> {
    Ok(conn.prepare_cached(&format!("{SELECT} WHERE p.id = ?1"))?.query_row([id], from_row).optional()?)
}

pub fn by_seq(conn: &Connection, seq: i64) -> Result<Option<CallRow>> {
    Ok(conn.prepare_cached(&format!("{SELECT} WHERE p.seq = ?1"))?.query_row([seq], from_row).optional()?)
}

/// Rows for the given keys, in the order given (missing ones skipped; a repeated key is
/// returned once), in one statement.
pub fn by_seqs(conn: &Connection, seqs: &[i64]) -> Result<Vec<CallRow>> {
    let mut stmt =
        conn.prepare_cached(&format!("{SELECT} WHERE p.seq IN (SELECT value FROM json_each(?1))"))?;
    let mut found: HashMap<i64, CallRow> = stmt
        .query_map([id_list(seqs)], from_row)?
        .map(|r| r.map(|c| (c.seq, c)))
        .collect::<rusqlite::Result<_>>()?;
    Ok(seqs.iter().filter_map(|seq| found.remove(seq)).collect())
}

/// The newest active calls of one agent.
pub fn recent_of(conn: &Connection, agent_id: i64, limit: usize) -> Result<Vec<CallRow>> {
    let mut stmt = conn.prepare_cached(&format!(
        "{SELECT} WHERE p.agent_id = ?1 AND p.status = 'active' ORDER BY p.created_at DESC, p.seq DESC LIMIT ?2"
    ))?;
    let rows = stmt.query_map(params![agent_id, limit as i64], from_row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

pub fn delete(conn: &Connection, seq: i64) -> Result<()> {
    conn.execute("DELETE FROM posts WHERE seq = ?1", [seq])?;
    Ok(())
}

pub fn set_status(conn: &Connection, seq: i64, status: &str) -> Result<()> {
    conn.execute("UPDATE posts SET status = ?2 WHERE seq = ?1", params![seq, status])?;
    Ok(())
}
