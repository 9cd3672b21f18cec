//! The `held_handles` table: handles nobody may register, after a rename or a deletion.

use rusqlite::{Connection, OptionalExtension, named_params};

use crate::domain::handles::HoldReason;
use crate::error::Result;

#[derive(Debug, Clone)]
pub struct HeldRow {
    pub handle: String,
    /// The agent that held it; for a rename, the agent the handle redirects to.
    pub agent_id: Option<i64>,
    pub reason: HoldReason,
    pub held_at: i64,
    /// `None`: held for good.
    pub until: Option<i64>,
}

const LIVE: &str = "(until IS NULL OR until > :now)";

fn from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<HeldRow> {
    Ok(HeldRow {
        handle: r.get("handle")?,
        agent_id: r.get("agent_id")?,
        reason: r.get("reason")?,
        held_at: r.get("held_at")?,
        until: r.get("until")?,
    })
}

/// The live hold on `handle`, if any.
pub fn live(conn: &Connection, handle: &str, now: i64) -> Result<Option<HeldRow>> {
    Ok(conn
        .prepare_cached(&format!(
            "SELECT handle, agent_id, reason, held_at, until FROM held_handles WHERE handle = :handle AND {LIVE}"
        ))?
        .query_row(named_params! {":handle": handle, ":now": now}, from_row)
        .optional()?)
}

/// Holds `handle` (replacing an expired or released hold on it).
pub fn hold(conn: &Connection, h: &HeldRow) -> Result<()> {
    conn.prepare_cached(
        "INSERT OR REPLACE INTO held_handles (handle, agent_id, reason, held_at, until)
         VALUES (:handle, :agent_id, :reason, :held_at, :until)",
    )?
    .execute(named_params! {
        ":handle": h.handle,
        ":agent_id": h.agent_id,
        ":reason": h.reason,
        ":held_at": h.held_at,
        ":until": h.until,
    })?;
    Ok(())
}

/// Releases the holds of `agent_id` for `reason`.
pub fn release(conn: &Connection, agent_id: i64, reason: HoldReason) -> Result<()> {
    conn.prepare_cached("DELETE FROM held_handles WHERE agent_id = :agent_id AND reason = :reason")?
        .execute(named_params! {":agent_id": agent_id, ":reason": reason})?;
    Ok(())
}

/// Sets when the holds of `agent_id` for `reason` end (`None`: never).
pub fn set_until(conn: &Connection, agent_id: i64, reason: HoldReason, until: Option<i64>) -> Result<()> {
    conn.prepare_cached(
        "UPDATE held_handles SET until = :until WHERE agent_id = :agent_id AND reason = :reason",
    )?
    .execute(named_params! {":agent_id": agent_id, ":reason": reason, ":until": until})?;
    Ok(())
}

/// The live holds of `agent_id`.
pub fn of_agent(conn: &Connection, agent_id: i64, now: i64) -> Result<Vec<HeldRow>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT handle, agent_id, reason, held_at, until FROM held_handles
         WHERE agent_id = :agent_id AND {LIVE} ORDER BY held_at DESC"
    ))?;
    let rows = stmt.query_map(named_params! {":agent_id": agent_id, ":now": now}, from_row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Forgets holds that ended before `now`; returns how many.
pub fn forget_ended(conn: &Connection, now: i64) -> Result<usize> {
    Ok(conn
        .prepare_cached("DELETE FROM held_handles WHERE until IS NOT NULL AND until <= :now")?
        .execute(named_params! {":now": now})?)
}
