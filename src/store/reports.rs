//! The `reports` table: reports of calls and contact requests, for the operators.

use rusqlite::{Connection, named_params};

use crate::domain::call::ReportTarget;
use crate::error::Result;

pub struct NewReport<'a> {
    pub id: &'a str,
    pub target_kind: ReportTarget,
    pub target_id: &'a str,
    pub reporter_agent_id: Option<i64>,
    pub reporter_ip: Option<&'a str>,
    pub reason: Option<&'a str>,
    pub created_at: i64,
}

pub fn insert(conn: &Connection, r: &NewReport<'_>) -> Result<()> {
    conn.prepare_cached(
        "INSERT INTO reports (id, target_kind, target_id, reporter_agent_id, reporter_ip, reason, created_at)
         VALUES (:id, :target_kind, :target_id, :reporter_agent_id, :reporter_ip, :reason, :created_at)",
    )?
    .execute(named_params! {
        ":id": r.id,
        ":target_kind": r.target_kind,
        ":target_id": r.target_id,
        ":reporter_agent_id": r.reporter_agent_id,
        ":reporter_ip": r.reporter_ip,
        ":reason": r.reason,
        ":created_at": r.created_at,
    })?;
    Ok(())
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct OpenReport {
    pub id: String,
    pub target_kind: ReportTarget,
    pub target_id: String,
    pub reporter: Option<String>,
    pub reporter_ip: Option<String>,
    pub reason: Option<String>,
    pub created_at: i64,
}

pub fn open_reports(conn: &Connection, limit: u32) -> Result<Vec<OpenReport>> {
    let mut stmt = conn.prepare_cached(
        "SELECT r.id, r.target_kind, r.target_id, a.handle AS reporter, r.reporter_ip, r.reason, r.created_at
         FROM reports r LEFT JOIN agents a ON a.id = r.reporter_agent_id
         WHERE r.resolved_at IS NULL ORDER BY r.created_at, r.id LIMIT :limit",
    )?;
    let rows = stmt.query_map(named_params! {":limit": limit}, |r| {
        Ok(OpenReport {
            id: r.get("id")?,
            target_kind: r.get("target_kind")?,
            target_id: r.get("target_id")?,
            reporter: r.get("reporter")?,
            reporter_ip: r.get("reporter_ip")?,
            reason: r.get("reason")?,
            created_at: r.get("created_at")?,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// A report as its reporter's export shows it.
pub struct FiledReport {
    pub id: String,
    pub target_kind: ReportTarget,
    pub target_id: String,
    pub reason: Option<String>,
    pub created_at: i64,
    pub resolved_at: Option<i64>,
}

/// The reports `agent` filed, newest first, and how many in all.
pub fn filed_by(conn: &Connection, agent: i64, limit: u32, offset: u32) -> Result<(u64, Vec<FiledReport>)> {
    let total: i64 = conn
        .prepare_cached("SELECT COUNT(*) AS n FROM reports WHERE reporter_agent_id = :agent")?
        .query_row(named_params! {":agent": agent}, |r| r.get("n"))?;
    let mut stmt = conn.prepare_cached(
        "SELECT id, target_kind, target_id, reason, created_at, resolved_at FROM reports
         WHERE reporter_agent_id = :agent ORDER BY created_at DESC, id DESC LIMIT :limit OFFSET :offset",
    )?;
    let rows = stmt.query_map(named_params! {":agent": agent, ":limit": limit, ":offset": offset}, |r| {
        Ok(FiledReport {
            id: r.get("id")?,
            target_kind: r.get("target_kind")?,
            target_id: r.get("target_id")?,
            reason: r.get("reason")?,
            created_at: r.get("created_at")?,
            resolved_at: r.get("resolved_at")?,
        })
    })?;
    Ok((total as u64, rows.collect::<rusqlite::Result<_>>()?))
}

/// Closes the open reports about one target; returns how many.
pub fn resolve_target(conn: &Connection, target_id: &str, now: i64) -> Result<usize> {
    Ok(conn
        .prepare_cached(
            "UPDATE reports SET resolved_at = :now WHERE target_id = :target_id AND resolved_at IS NULL",
        )?
        .execute(named_params! {":target_id": target_id, ":now": now})?)
}

/// Closes one report by id; false when there was no such open report.
pub fn resolve(conn: &Connection, id: &str, now: i64) -> Result<bool> {
    Ok(conn
        .prepare_cached("UPDATE reports SET resolved_at = :now WHERE id = :id AND resolved_at IS NULL")?
        .execute(named_params! {":id": id, ":now": now})?
        == 1)
}
