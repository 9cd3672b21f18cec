//! The `audit_log` table: who did what to whom, and why, for every operator action.

use rusqlite::{Connection, named_params};

use crate::error::Result;

pub fn record(
    conn: &Connection,
    action: &str,
    target: &str,
    actor: &str,
    reason: Option<&str>,
    at: i64,
) -> Result<()> {
    conn.prepare_cached(
        "INSERT INTO audit_log (action, target, actor, reason, at) VALUES (:action, :target, :actor, :reason, :at)",
    )?
    .execute(named_params! {":action": action, ":target": target, ":actor": actor, ":reason": reason, ":at": at})?;
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
    let mut stmt = conn.prepare_cached(
        "SELECT action, target, actor, reason, at FROM audit_log ORDER BY id DESC LIMIT :limit",
    )?;
    let rows = stmt.query_map(named_params! {":limit": limit}, |r| {
        Ok(AuditEntry {
            action: r.get("action")?,
            target: r.get("target")?,
            actor: r.get("actor")?,
            reason: r.get("reason")?,
            at: r.get("at")?,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}
