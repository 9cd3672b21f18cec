//! The `changes` table: the compacted change log every follower reads (see
//! `migrations/0002_change_log.sql` for what the triggers record and why).

use rusqlite::types::{FromSql, FromSqlError, FromSqlResult, ToSqlOutput, ValueRef};
use rusqlite::{Connection, OptionalExtension, ToSql, named_params};

use crate::error::Result;

/// What kind of public entity a change is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ChangeKind {
    /// An agent: its card (the id is the handle).
    Agent,
    /// A call with its replies (the id is the `post_` id).
    Call,
    /// A confirmed collaboration (the id is the `col_` id).
    Collab,
}

impl ChangeKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ChangeKind::Agent => "agent",
            ChangeKind::Call => "call",
            ChangeKind::Collab => "collab",
        }
    }
}

impl ToSql for ChangeKind {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::from(self.as_str()))
    }
}

impl FromSql for ChangeKind {
    fn column_result(value: ValueRef<'_>) -> FromSqlResult<Self> {
        match value.as_str()? {
            "agent" => Ok(ChangeKind::Agent),
            "call" => Ok(ChangeKind::Call),
            "collab" => Ok(ChangeKind::Collab),
            other => Err(FromSqlError::Other(format!("unknown change kind {other:?}").into())),
        }
    }
}

/// One row of the log: the latest change of one entity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub seq: u64,
    pub kind: ChangeKind,
    /// The public id: handle, post id or collab id.
    pub id: String,
    /// The search index's key of the entity (agents.id, posts.seq; 0 for collaborations).
    pub key: i64,
    /// Unix milliseconds.
    pub at: i64,
}

/// The newest seq ever handed out (compaction and pruning never lower it).
pub fn max_seq(conn: &Connection) -> Result<u64> {
    let seq: Option<i64> = conn
        .prepare_cached("SELECT seq FROM sqlite_sequence WHERE name = 'changes'")?
        .query_row([], |r| r.get("seq"))
        .optional()?;
    Ok(seq.unwrap_or(0).max(0) as u64)
}

/// Entities changed after `seq`, oldest change first, at most `limit`: one indexed range scan.
pub fn after(conn: &Connection, seq: u64, limit: u32) -> Result<Vec<Change>> {
    let mut stmt = conn.prepare_cached(
        "SELECT seq, kind, id, key, at FROM changes WHERE seq > :after ORDER BY seq LIMIT :limit",
    )?;
    let rows = stmt.query_map(named_params! {":after": seq as i64, ":limit": limit}, |r| {
        Ok(Change {
            seq: r.get::<_, i64>("seq")? as u64,
            kind: r.get("kind")?,
            id: r.get("id")?,
            key: r.get("key")?,
            at: r.get("at")?,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}
