//! The `audit_log` table: who did what to whom, and why, for every operator action.

use rusqlite::{Connection, params};

use crate::error::Result;

pub fn record(
    conn: &Connection,
    action: &str,
    target: &str,
    actor: &str,
    reason: Option<&str>,
    at: i64,
) -> Result<()> {
    conn.execute(
        "INSERT INTO audit_log (action, target, actor, reason, at) VALUES (?1, ?2, ?3, ?4, ?5)",
        params![action, target, actor, reason, at],
    )?;
    Ok(())
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct AuditEntry {
    pub action: String,
    pub target: String,
    pub actor: String,
    pub reason: Option<String>,
    pub at: i64,
}

pub fn recent(conn: &Connection, limit: u32) -> Result<Vec<AuditEntry>> {
    let mut stmt =
        conn.prepare("SELECT action, target, actor, reason, at FROM audit_log ORDER BY id DESC LIMIT ?1")?;
    let rows = stmt.query_map([limit], |r| {
        Ok(AuditEntry {
            action: r.get(0)?,
            target: r.get(1)?,
            actor: r.get(2)?,
            reason: r.get(3)?,
            at: r.get(4)?,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}
