//! The `events` table: each agent's inbox (see `migrations/0012_events.sql`). Operations record
//! an event inside the transaction of the write that caused it; the server reads an agent's
//! events after a seq, and the seqs committed since it last looked to wake waiting polls.

use rusqlite::{Connection, Row, named_params};

use crate::domain::events::{EventDetail, EventKind, SubjectKind};
use crate::error::{Error, Result};

/// One stored event.
#[derive(Debug, Clone)]
pub struct EventRow {
    pub seq: u64,
    pub agent_id: i64,
    pub kind: EventKind,
    pub subject_kind: SubjectKind,
    pub subject_id: String,
    pub detail: EventDetail,
    pub count: u32,
    pub at: i64,
}

/// An event to record for agent `agent_id`, at `at` (unix ms).
pub struct NewEvent<'a> {
    pub agent_id: i64,
    pub kind: EventKind,
    pub subject_kind: SubjectKind,
    pub subject_id: &'a str,
    pub detail: EventDetail,
    pub at: i64,
}

const COLUMNS: &str = "seq, agent_id, kind, subject_kind, subject_id, detail, count, at";

fn from_row(r: &Row<'_>) -> rusqlite::Result<EventRow> {
    let detail: String = r.get("detail")?;
    Ok(EventRow {
        seq: r.get::<_, i64>("seq")? as u64,
        agent_id: r.get("agent_id")?,
        kind: r.get("kind")?,
        subject_kind: r.get("subject_kind")?,
        subject_id: r.get("subject_id")?,
        detail: serde_json::from_str(&detail).map_err(|e| {
            rusqlite::Error::FromSqlConversionFailure(0, rusqlite::types::Type::Text, Box::new(e))
        })?,
        count: u32::try_from(r.get::<_, i64>("count")?).unwrap_or(u32::MAX),
        at: r.get("at")?,
    })
}

fn insert(conn: &Connection, e: &NewEvent<'_>, count: i64, first_at: i64) -> Result<()> {
    let detail = serde_json::to_string(&e.detail).map_err(|_| Error::Internal)?;
    conn.prepare_cached(
        "INSERT INTO events (agent_id, kind, subject_kind, subject_id, detail, count, first_at, at)
         VALUES (:agent_id, :kind, :subject_kind, :subject_id, :detail, :count, :first_at, :at)",
    )?
    .execute(named_params! {
        ":agent_id": e.agent_id,
        ":kind": e.kind,
        ":subject_kind": e.subject_kind,
        ":subject_id": e.subject_id,
        ":detail": detail,
        ":count": count,
        ":first_at": first_at,
        ":at": e.at,
    })?;
    Ok(())
}

/// Records one event.
pub fn record(conn: &Connection, e: &NewEvent<'_>) -> Result<()> {
    insert(conn, e, 1, e.at)
}

/// Records an event that occurrences of the same kind and subject within `window` (ms) of the
/// first join: the event they join moves to the end of the inbox with its count raised (the
/// change log's compaction, applied to one inbox), so a reader sees one event per window, and
/// learns of each new occurrence.
pub fn record_coalesced(conn: &Connection, e: &NewEvent<'_>, window: i64) -> Result<()> {
    let joined: Option<(i64, i64, i64)> = conn
        .prepare_cached(
            "SELECT seq, count, first_at FROM events
             WHERE agent_id = :agent_id AND kind = :kind AND subject_id = :subject_id AND first_at > :since
             ORDER BY seq DESC LIMIT 1",
        )?
        .query_map(
            named_params! {
                ":agent_id": e.agent_id, ":kind": e.kind, ":subject_id": e.subject_id, ":since": e.at - window,
            },
            |r| Ok((r.get("seq")?, r.get("count")?, r.get("first_at")?)),
        )?
        .next()
        .transpose()?;
    match joined {
        Some((seq, count, first_at)) => {
            conn.prepare_cached("DELETE FROM events WHERE seq = :seq")?
                .execute(named_params! {":seq": seq})?;
            insert(conn, e, count.saturating_add(1), first_at)
        }
        None => insert(conn, e, 1, e.at),
    }
}

/// The events of `agent` after `after`, oldest first, at most `limit`.
pub fn of_agent(conn: &Connection, agent: i64, after: u64, limit: u32) -> Result<Vec<EventRow>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM events WHERE agent_id = :agent AND seq > :after ORDER BY seq LIMIT :limit"
    ))?;
    let rows = stmt.query_map(
        named_params! {":agent": agent, ":after": i64::try_from(after).unwrap_or(i64::MAX), ":limit": limit},
        from_row,
    )?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// The newest seq ever handed out (0 before the first event).
pub fn max_seq(conn: &Connection) -> Result<u64> {
    super::newest_seq(conn, "events")
}

/// The agents with events after `after`, and the newest seq among them (`after` when none).
pub fn agents_after(conn: &Connection, after: u64) -> Result<(Vec<i64>, u64)> {
    let mut stmt = conn.prepare_cached(
        "SELECT agent_id, MAX(seq) AS newest FROM events WHERE seq > :after GROUP BY agent_id",
    )?;
    let mut newest = after;
    let mut agents = Vec::new();
    let mut rows = stmt.query(named_params! {":after": i64::try_from(after).unwrap_or(i64::MAX)})?;
    while let Some(r) = rows.next()? {
        agents.push(r.get("agent_id")?);
        newest = newest.max(r.get::<_, i64>("newest")? as u64);
    }
    Ok((agents, newest))
}

/// Forgets events from before `before` (unix ms); returns how many.
pub fn prune(conn: &Connection, before: i64) -> Result<usize> {
    Ok(conn
        .prepare_cached("DELETE FROM events WHERE at < :before")?
        .execute(named_params! {":before": before})?)
}
