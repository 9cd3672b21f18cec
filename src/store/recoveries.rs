//! The `recoveries` table: the one live key recovery per agent (see
//! `migrations/0003_recovery.sql`).

use rusqlite::{Connection, OptionalExtension, named_params};

use crate::error::Result;

#[derive(Debug, Clone)]
pub struct RecoveryRow {
    pub agent_id: i64,
    pub token_id: String,
    pub token_hash: Vec<u8>,
    pub expires_at: i64,
    pub confirmed_at: Option<i64>,
}

/// Starts a recovery for the agent, replacing any earlier one.
pub fn replace(conn: &Connection, row: &RecoveryRow) -> Result<()> {
    conn.prepare_cached(
        "INSERT INTO recoveries (agent_id, token_id, token_hash, expires_at, confirmed_at)
         VALUES (:agent_id, :token_id, :token_hash, :expires_at, NULL)
         ON CONFLICT (agent_id) DO UPDATE SET token_id = excluded.token_id,
            token_hash = excluded.token_hash, expires_at = excluded.expires_at, confirmed_at = NULL",
    )?
    .execute(named_params! {
        ":agent_id": row.agent_id,
        ":token_id": row.token_id,
        ":token_hash": row.token_hash,
        ":expires_at": row.expires_at,
    })?;
    Ok(())
}

const COLUMNS: &str = "agent_id, token_id, token_hash, expires_at, confirmed_at";

fn from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<RecoveryRow> {
    Ok(RecoveryRow {
        agent_id: r.get("agent_id")?,
        token_id: r.get("token_id")?,
        token_hash: r.get("token_hash")?,
        expires_at: r.get("expires_at")?,
        confirmed_at: r.get("confirmed_at")?,
    })
}

pub fn by_token_id(conn: &Connection, token_id: &str) -> Result<Option<RecoveryRow>> {
    Ok(conn
        .prepare_cached(&format!("SELECT {COLUMNS} FROM recoveries WHERE token_id = :token_id"))?
        .query_row(named_params! {":token_id": token_id}, from_row)
        .optional()?)
}

pub fn of_agent(conn: &Connection, agent_id: i64) -> Result<Option<RecoveryRow>> {
    Ok(conn
        .prepare_cached(&format!("SELECT {COLUMNS} FROM recoveries WHERE agent_id = :agent_id"))?
        .query_row(named_params! {":agent_id": agent_id}, from_row)
        .optional()?)
}

/// Marks the agent's live recovery confirmed by mail; false when it has none that is live.
pub fn confirm(conn: &Connection, agent_id: i64, now: i64) -> Result<bool> {
    Ok(conn
        .prepare_cached(
            "UPDATE recoveries SET confirmed_at = :now WHERE agent_id = :agent_id AND expires_at > :now",
        )?
        .execute(named_params! {":agent_id": agent_id, ":now": now})?
        == 1)
}

/// Ends the agent's recovery (exchanged, or void).
pub fn remove(conn: &Connection, agent_id: i64) -> Result<()> {
    conn.prepare_cached("DELETE FROM recoveries WHERE agent_id = :agent_id")?
        .execute(named_params! {":agent_id": agent_id})?;
    Ok(())
}
