//! The `recoveries` table: key recoveries, each started on its own (see
//! `migrations/0005_recoveries_of_their_own.sql` and `0009_previous_mailbox.sql`).

use rusqlite::{Connection, OptionalExtension, named_params};

use crate::error::Result;

#[derive(Debug, Clone)]
pub struct RecoveryRow {
    pub token_id: String,
    pub agent_id: i64,
    pub token_hash: Vec<u8>,
    /// The code the confirming mail's subject carries.
    pub code: String,
    pub expires_at: i64,
    pub confirmed_at: Option<i64>,
    /// The mailbox the confirming mail came from (the agent's, or its previous one).
    pub confirmed_from: Option<String>,
}

pub fn insert(conn: &Connection, row: &RecoveryRow) -> Result<()> {
    conn.prepare_cached(
        "INSERT INTO recoveries (token_id, agent_id, token_hash, code, expires_at, confirmed_at, confirmed_from)
         VALUES (:token_id, :agent_id, :token_hash, :code, :expires_at, NULL, NULL)",
    )?
    .execute(named_params! {
        ":token_id": row.token_id,
        ":agent_id": row.agent_id,
        ":token_hash": row.token_hash,
        ":code": row.code,
        ":expires_at": row.expires_at,
    })?;
    Ok(())
}

const COLUMNS: &str = "token_id, agent_id, token_hash, code, expires_at, confirmed_at, confirmed_from";

fn from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<RecoveryRow> {
    Ok(RecoveryRow {
        token_id: r.get("token_id")?,
        agent_id: r.get("agent_id")?,
        token_hash: r.get("token_hash")?,
        code: r.get("code")?,
        expires_at: r.get("expires_at")?,
        confirmed_at: r.get("confirmed_at")?,
        confirmed_from: r.get("confirmed_from")?,
    })
}

pub fn by_token_id(conn: &Connection, token_id: &str) -> Result<Option<RecoveryRow>> {
    Ok(conn
        .prepare_cached(&format!("SELECT {COLUMNS} FROM recoveries WHERE token_id = :token_id"))?
        .query_row(named_params! {":token_id": token_id}, from_row)
        .optional()?)
}

pub fn by_code(conn: &Connection, code: &str) -> Result<Option<RecoveryRow>> {
    Ok(conn
        .prepare_cached(&format!("SELECT {COLUMNS} FROM recoveries WHERE code = :code"))?
        .query_row(named_params! {":code": code}, from_row)
        .optional()?)
}

/// Marks the recovery of `token_id` confirmed by a mail from `from`; false when it is no longer
/// live or was confirmed before (a code works once).
pub fn confirm(conn: &Connection, token_id: &str, from: &str, now: i64) -> Result<bool> {
    Ok(conn
        .prepare_cached(
            "UPDATE recoveries SET confirmed_at = :now, confirmed_from = :from
             WHERE token_id = :token_id AND expires_at > :now AND confirmed_at IS NULL",
        )?
        .execute(named_params! {":token_id": token_id, ":from": from, ":now": now})?
        == 1)
}

/// Ends the recoveries of the agent: one was exchanged, or the agent was deleted. With
/// `kept_from`, those not confirmed yet and those a mail from `kept_from` confirmed stay.
pub fn remove_of_agent(conn: &Connection, agent_id: i64, kept_from: Option<&str>) -> Result<()> {
    conn.prepare_cached(
        "DELETE FROM recoveries WHERE agent_id = :agent_id
            AND NOT (:kept_from IS NOT NULL
                AND (confirmed_at IS NULL OR COALESCE(lower(confirmed_from) = lower(:kept_from), 0)))",
    )?
    .execute(named_params! {":agent_id": agent_id, ":kept_from": kept_from})?;
    Ok(())
}

/// Ends the recovery of `token_id`: it was exchanged.
pub fn remove(conn: &Connection, token_id: &str) -> Result<()> {
    conn.prepare_cached("DELETE FROM recoveries WHERE token_id = :token_id")?
        .execute(named_params! {":token_id": token_id})?;
    Ok(())
}

/// Forgets recoveries that expired before `before`; returns how many.
pub fn prune(conn: &Connection, before: i64) -> Result<usize> {
    Ok(conn
        .prepare_cached("DELETE FROM recoveries WHERE expires_at <= :before")?
        .execute(named_params! {":before": before})?)
}
