//! The `calls` table: calls, their status, and the summaries shown in lists and cards.

use std::collections::HashMap;

use rusqlite::{Connection, OptionalExtension, Row, named_params};

use super::{AUTHOR, JsonList, id_list, to_json};
use crate::domain::call::{CallKind, CallStatus, CallSummary, Lang};
use crate::error::Result;
use crate::time::Timestamp;

/// The one rule of a call the public may see, over a call `p` and its author `a`: active (not
/// hidden by the operators), and its author listed (neither suspended nor deleted).
pub(crate) const VISIBLE: &str = "p.status = 'active' AND a.listed";

/// A call as stored, with what its summary shows.
#[derive(Debug, Clone)]
pub struct CallRow {
    /// Its key (the `seq` column), as the change log, the index and the cache name it.
    pub key: i64,
    pub agent_id: i64,
    /// Readable by the public (see [`VISIBLE`]).
    pub visible: bool,
    pub summary: CallSummary,
}

const SELECT: &str = "SELECT p.seq, p.id, p.agent_id, p.kind, p.title, p.body, p.deliverable,
    p.deadline, p.constraints, p.languages, p.tags, p.lang, p.status, p.created_at,
    (SELECT COUNT(*) FROM replies r JOIN agents ra ON ra.id = r.agent_id
        WHERE r.call_seq = p.seq AND ra.listed) AS reply_count,
    a.handle AS author_handle, a.name AS author_name,
    a.mailbox_verified_at IS NOT NULL AS author_verified,
    p.status = 'active' AND a.listed AS visible
    FROM calls p JOIN agents a ON a.id = p.agent_id";

fn from_row(r: &Row<'_>) -> rusqlite::Result<CallRow> {
    Ok(CallRow {
        key: r.get("seq")?,
        agent_id: r.get("agent_id")?,
        visible: r.get("visible")?,
        summary: CallSummary {
            id: r.get("id")?,
            kind: r.get("kind")?,
            title: r.get("title")?,
            body: r.get("body")?,
            deliverable: r.get("deliverable")?,
            deadline: r.get("deadline")?,
            constraints: r.get("constraints")?,
            languages: r.get::<_, JsonList>("languages")?.0,
            tags: r.get::<_, JsonList>("tags")?.0,
            lang: r.get("lang")?,
            created_at: Timestamp(r.get("created_at")?),
            reply_count: r.get::<_, i64>("reply_count")? as u64,
            status: r.get("status")?,
            author: AUTHOR.read(r)?,
        },
    })
}

pub struct NewCallRow<'a> {
    pub id: &'a str,
    pub agent_id: i64,
    pub kind: CallKind,
    pub title: &'a str,
    pub body: &'a str,
    pub deliverable: Option<&'a str>,
    pub deadline: Option<&'a str>,
    pub constraints: Option<&'a str>,
    pub languages: &'a [String],
    pub tags: &'a [String],
    pub lang: Lang,
    pub created_at: i64,
}

pub fn insert(conn: &Connection, c: &NewCallRow<'_>) -> Result<i64> {
    conn.prepare_cached(&format!(
        "INSERT INTO calls (seq, id, agent_id, kind, title, body, deliverable, deadline, constraints,
                languages, tags, lang, created_at)
             VALUES ({}, :id, :agent_id, :kind, :title, :body, :deliverable, :deadline, :constraints,
                :languages, :tags, :lang, :created_at)",
        super::next_key("calls", "seq")
    ))?
    .execute(named_params! {
        ":id": c.id,
        ":agent_id": c.agent_id,
        ":kind": c.kind,
        ":title": c.title,
        ":body": c.body,
        ":deliverable": c.deliverable,
        ":deadline": c.deadline,
        ":constraints": c.constraints,
        ":languages": to_json(c.languages),
        ":tags": to_json(c.tags),
        ":lang": c.lang,
        ":created_at": c.created_at,
    })?;
    Ok(conn.last_insert_rowid())
}

pub fn by_id(conn: &Connection, id: &str) -> Result<Option<CallRow>> {
    Ok(conn
        .prepare_cached(&format!("{SELECT} WHERE p.id = :id"))?
        .query_row(named_params! {":id": id}, from_row)
        .optional()?)
}

pub fn by_key(conn: &Connection, key: i64) -> Result<Option<CallRow>> {
    Ok(conn
        .prepare_cached(&format!("{SELECT} WHERE p.seq = :seq"))?
        .query_row(named_params! {":seq": key}, from_row)
        .optional()?)
}

/// Rows for the given keys, in the order given (missing ones skipped; a repeated key is
/// returned once), in one statement.
pub fn by_keys(conn: &Connection, keys: &[i64]) -> Result<Vec<CallRow>> {
    let mut stmt =
        conn.prepare_cached(&format!("{SELECT} WHERE p.seq IN (SELECT value FROM json_each(:seqs))"))?;
    let mut found: HashMap<i64, CallRow> = stmt
        .query_map(named_params! {":seqs": id_list(keys)}, from_row)?
        .map(|r| r.map(|c| (c.key, c)))
        .collect::<rusqlite::Result<_>>()?;
    Ok(keys.iter().filter_map(|key| found.remove(key)).collect())
}

/// The newest visible calls of one agent.
pub fn recent_of(conn: &Connection, agent_id: i64, limit: usize) -> Result<Vec<CallRow>> {
    let mut stmt = conn.prepare_cached(&format!(
        "{SELECT} WHERE p.agent_id = :agent_id AND {VISIBLE} ORDER BY p.created_at DESC, p.seq DESC LIMIT :limit"
    ))?;
    let rows = stmt.query_map(named_params! {":agent_id": agent_id, ":limit": limit as i64}, from_row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Every call of one agent, whatever its status, newest first, and their total.
pub fn of_agent(conn: &Connection, agent_id: i64, limit: u32, offset: u32) -> Result<(u64, Vec<CallRow>)> {
    let total: i64 = conn
        .prepare_cached("SELECT COUNT(*) AS n FROM calls WHERE agent_id = :agent_id")?
        .query_row(named_params! {":agent_id": agent_id}, |r| r.get("n"))?;
    let mut stmt = conn.prepare_cached(&format!(
        "{SELECT} WHERE p.agent_id = :agent_id ORDER BY p.created_at DESC, p.seq DESC LIMIT :limit OFFSET :offset"
    ))?;
    let rows =
        stmt.query_map(named_params! {":agent_id": agent_id, ":limit": limit, ":offset": offset}, from_row)?;
    Ok((total as u64, rows.collect::<rusqlite::Result<_>>()?))
}

pub fn delete(conn: &Connection, key: i64) -> Result<()> {
    conn.prepare_cached("DELETE FROM calls WHERE seq = :seq")?.execute(named_params! {":seq": key})?;
    Ok(())
}

pub fn set_status(conn: &Connection, key: i64, status: CallStatus) -> Result<()> {
    conn.prepare_cached("UPDATE calls SET status = :status WHERE seq = :seq")?
        .execute(named_params! {":seq": key, ":status": status})?;
    Ok(())
}
