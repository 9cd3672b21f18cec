//! The `moderation_log` table: the public record of operator actions (see
//! `migrations/0014_moderation_log.sql`). Operator commands append to it beside the audit log.

use rusqlite::{Connection, Row, named_params};

use crate::domain::moderation::{ModerationAction, ReasonCategory, TargetKind};
use crate::error::Result;

/// One action, as stored.
#[derive(Debug, Clone)]
pub struct ModerationRow {
    pub seq: u64,
    pub action: ModerationAction,
    pub target_kind: TargetKind,
    pub agent_sub: Option<String>,
    pub handle: Option<String>,
    pub call_id: Option<String>,
    pub new_handle: Option<String>,
    pub category: ReasonCategory,
    pub public_note: Option<String>,
    pub at: i64,
}

/// An action to append.
pub struct NewAction<'a> {
    pub action: ModerationAction,
    pub target_kind: TargetKind,
    pub agent_sub: Option<&'a str>,
    pub handle: Option<&'a str>,
    pub call_id: Option<&'a str>,
    pub new_handle: Option<&'a str>,
    pub category: ReasonCategory,
    pub public_note: Option<&'a str>,
    pub at: i64,
}

fn from_row(r: &Row<'_>) -> rusqlite::Result<ModerationRow> {
    Ok(ModerationRow {
        seq: r.get::<_, i64>("seq")? as u64,
        action: r.get("action")?,
        target_kind: r.get("target_kind")?,
        agent_sub: r.get("agent_sub")?,
        handle: r.get("handle")?,
        call_id: r.get("call_id")?,
        new_handle: r.get("new_handle")?,
        category: r.get("category")?,
        public_note: r.get("public_note")?,
        at: r.get("at")?,
    })
}

pub fn record(conn: &Connection, a: &NewAction<'_>) -> Result<()> {
    conn.prepare_cached(
        "INSERT INTO moderation_log (action, target_kind, agent_sub, handle, call_id, new_handle, category,
            public_note, at)
         VALUES (:action, :target_kind, :agent_sub, :handle, :call_id, :new_handle, :category, :public_note, :at)",
    )?
    .execute(named_params! {
        ":action": a.action,
        ":target_kind": a.target_kind,
        ":agent_sub": a.agent_sub,
        ":handle": a.handle,
        ":call_id": a.call_id,
        ":new_handle": a.new_handle,
        ":category": a.category,
        ":public_note": a.public_note,
        ":at": a.at,
    })?;
    Ok(())
}

/// The newest seq ever handed out.
pub fn max_seq(conn: &Connection) -> Result<u64> {
    super::newest_seq(conn, "moderation_log")
}

/// Whether an operator deleted the agent `agent_sub` at `since` or later.
pub fn deleted_by_an_operator_since(conn: &Connection, agent_sub: &str, since: i64) -> Result<bool> {
    Ok(conn
        .prepare_cached(
            "SELECT EXISTS (SELECT 1 FROM moderation_log
                WHERE agent_sub = :sub AND action = 'agent_deleted' AND at >= :since) AS deleted",
        )?
        .query_row(named_params! {":sub": agent_sub, ":since": since}, |r| r.get("deleted"))?)
}

/// The actions after `after`, oldest first, at most `limit`.
pub fn after(conn: &Connection, after: u64, limit: u32) -> Result<Vec<ModerationRow>> {
    let mut stmt = conn.prepare_cached(
        "SELECT seq, action, target_kind, agent_sub, handle, call_id, new_handle, category, public_note, at
         FROM moderation_log WHERE seq > :after ORDER BY seq LIMIT :limit",
    )?;
    let rows = stmt.query_map(
        named_params! {":after": i64::try_from(after).unwrap_or(i64::MAX), ":limit": limit},
        from_row,
    )?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}
