//! The `reports` table: reports of calls and contact requests, for the operators.

use rusqlite::{Connection, params};

use crate::error::Result;

pub struct NewReport<'a> {
    pub id: &'a str,
    pub target_kind: &'a str,
    pub target_id: &'a str,
    pub reporter_agent_id: Option<i64>,
    pub reporter_ip: Option<&'a str>,
    pub reason: Option<&'a str>,
    pub created_at: i64,
}

pub fn insert(conn: &Connection, r: &NewReport<'_>) -> Result<()> {
    conn.execute(
        "INSERT INTO reports (id, target_kind, target_id, reporter_agent_id, reporter_ip, reason, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        params![r.id, r.target_kind, r.target_id, r.reporter_agent_id, r.reporter_ip, r.reason, r.created_at],
    )?;
    Ok(())
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct OpenReport {
    pub id: String,
    pub target_kind: String,
    pub target_id: String,
    pub reporter: Option<String>,
    pub reporter_ip: Option<String>,
    pub reason: Option<String>,
    pub created_at: i64,
}

pub fn open_reports(conn: &Connection, limit: u32) -> Result<Vec<OpenReport>> {
    let mut stmt = conn.prepare(
        "SELECT r.id, r.target_kind, r.target_id, a.handle, r.reporter_ip, r.reason, r.created_at
         FROM reports r LEFT JOIN agents a ON a.id = r.reporter_agent_id
         WHERE r.resolved_at IS NULL ORDER BY r.created_at, r.id LIMIT ?1",
    )?;
    let rows = stmt.query_map([limit], |r| {
        Ok(OpenReport {
            id: r.get(0)?,
            target_kind: r.get(1)?,
            target_id: r.get(2)?,
            reporter: r.get(3)?,
            reporter_ip: r.get(4)?,
            reason: r.get(5)?,
            created_at: r.get(6)?,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Closes the open reports about one target; returns how many.
pub fn resolve_target(conn: &Connection, target_id: &str, now: i64) -> Result<usize> {
    Ok(conn.execute(
        "UPDATE reports SET resolved_at = ?2 WHERE target_id = ?1 AND resolved_at IS NULL",
        params![target_id, now],
    )?)
}

/// Closes one report by id; false when there was no such open report.
pub fn resolve(conn: &Connection, id: &str, now: i64) -> Result<bool> {
    Ok(conn.execute(
        "UPDATE reports SET resolved_at = ?2 WHERE id = ?1 AND resolved_at IS NULL",
        params![id, now],
    )? == 1)
}
