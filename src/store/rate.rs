//! The `rate_events` table: events counted by the rate limits that must survive a restart.

use rusqlite::{Connection, named_params};

use crate::error::Result;

/// Events of `name` by `subject` since `since`: how many, and the time of the oldest.
pub fn count_since(conn: &Connection, name: &str, subject: &str, since: i64) -> Result<(u64, Option<i64>)> {
    Ok(conn
        .prepare_cached(
            "SELECT COUNT(*) AS n, MIN(at) AS oldest FROM rate_events
             WHERE name = :name AND subject = :subject AND at > :since",
        )?
        .query_row(named_params! {":name": name, ":subject": subject, ":since": since}, |r| {
            Ok((r.get::<_, i64>("n")? as u64, r.get("oldest")?))
        })?)
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
            "SELECT at FROM rate_events WHERE name = :name AND subject = :subject AND at > :since
             ORDER BY at DESC LIMIT 1 OFFSET :skip",
        )?
        .query_row(
            named_params! {":name": name, ":subject": subject, ":since": since, ":skip": n.saturating_sub(1) as i64},
            |r| r.get("at"),
        )
        .optional()?)
}

pub fn record(conn: &Connection, name: &str, subject: &str, at: i64) -> Result<()> {
    conn.prepare_cached("INSERT INTO rate_events (name, subject, at) VALUES (:name, :subject, :at)")?
        .execute(named_params! {":name": name, ":subject": subject, ":at": at})?;
    Ok(())
}

/// Forgets events older than any window looks back.
pub fn prune(conn: &Connection, before: i64) -> Result<usize> {
    Ok(conn
        .prepare_cached("DELETE FROM rate_events WHERE at < :before")?
        .execute(named_params! {":before": before})?)
}

/// Forgets the events of `subject` (an erased agent's).
pub fn forget_subject(conn: &Connection, subject: &str) -> Result<()> {
    conn.prepare_cached("DELETE FROM rate_events WHERE subject = :subject")?
        .execute(named_params! {":subject": subject})?;
    Ok(())
}
