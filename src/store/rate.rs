//! The `rate_events` table: events counted by the rate limits that must survive a restart.

use rusqlite::{Connection, params};

use crate::error::Result;

/// Events of `name` by `subject` since `since`: how many, and the time of the oldest.
pub fn count_since(conn: &Connection, name: &str, subject: &str, since: i64) -> Result<(u64, Option<i64>)> {
    Ok(conn
        .prepare_cached(
            "SELECT COUNT(*), MIN(at) FROM rate_events WHERE name = ?1 AND subject = ?2 AND at > ?3",
        )?
        .query_row(params![name, subject, since], |r| Ok((r.get::<_, i64>(0)? as u64, r.get(1)?)))?)
}

/// The time of the `n`-th newest event (1-based) since `since`: when the window frees a slot.
pub fn nth_newest_since(
    conn: &Connection,
    name: &str,
    subject: &str,
    since: i64,
    n: u64,
) -> Result<Option<i64>> {
    use rusqlite::OptionalExtension;
    Ok(conn
        .prepare_cached(
            "SELECT at FROM rate_events WHERE name = ?1 AND subject = ?2 AND at > ?3
             ORDER BY at DESC LIMIT 1 OFFSET ?4",
        )?
        .query_row(params![name, subject, since, n.saturating_sub(1) as i64], |r| r.get(0))
        .optional()?)
}

pub fn record(conn: &Connection, name: &str, subject: &str, at: i64) -> Result<()> {
    conn.prepare_cached("INSERT INTO rate_events (name, subject, at) VALUES (?1, ?2, ?3)")?
        .execute(params![name, subject, at])?;
    Ok(())
}

/// Forgets events older than any window looks back.
pub fn prune(conn: &Connection, before: i64) -> Result<usize> {
    Ok(conn.execute("DELETE FROM rate_events WHERE at < ?1", [before])?)
}
