//! The `link_proofs` table: pages that proved they belong to an agent.

use std::collections::HashMap;

use rusqlite::{Connection, named_params};

use super::id_list;
use crate::error::Result;

#[derive(Debug, Clone)]
pub struct ProofRow {
    pub url: String,
    pub host: String,
    pub verified_at: i64,
}

fn from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<ProofRow> {
    Ok(ProofRow { url: r.get("url")?, host: r.get("host")?, verified_at: r.get("verified_at")? })
}

pub fn for_agent(conn: &Connection, agent_id: i64) -> Result<Vec<ProofRow>> {
    let mut stmt = conn.prepare_cached(
        "SELECT url, host, verified_at FROM link_proofs WHERE agent_id = :agent_id ORDER BY verified_at, url",
    )?;
    let rows = stmt.query_map(named_params! {":agent_id": agent_id}, from_row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// The proofs of several agents in one statement, each list in its order; agents without
/// proofs are absent.
pub fn for_agents(conn: &Connection, agent_ids: &[i64]) -> Result<HashMap<i64, Vec<ProofRow>>> {
    let mut stmt = conn.prepare_cached(
        "SELECT agent_id, url, host, verified_at FROM link_proofs
         WHERE agent_id IN (SELECT value FROM json_each(:agent_ids)) ORDER BY agent_id, verified_at, url",
    )?;
    let mut out: HashMap<i64, Vec<ProofRow>> = HashMap::new();
    let mut rows = stmt.query(named_params! {":agent_ids": id_list(agent_ids)})?;
    while let Some(r) = rows.next()? {
        out.entry(r.get("agent_id")?).or_default().push(from_row(r)?);
    }
    Ok(out)
}

/// Records (or renews) a proof found at `url` (where the text was, after redirects), for the
/// URL the agent `submitted`. What the submitted URL proved before under another URL is
/// removed: it leads elsewhere now, and proves only where it leads.
pub fn upsert(
    conn: &Connection,
    agent_id: i64,
    url: &str,
    submitted: &str,
    host: &str,
    at: i64,
) -> Result<()> {
    conn.prepare_cached(
        "DELETE FROM link_proofs WHERE agent_id = :agent_id AND url <> :url
            AND (url = :submitted OR submitted_url = :submitted)",
    )?
    .execute(named_params! {":agent_id": agent_id, ":url": url, ":submitted": submitted})?;
    conn.prepare_cached(
        "INSERT INTO link_proofs (agent_id, url, submitted_url, host, verified_at)
         VALUES (:agent_id, :url, :submitted, :host, :at)
         ON CONFLICT (agent_id, url) DO UPDATE SET submitted_url = excluded.submitted_url,
            host = excluded.host, verified_at = excluded.verified_at, expiry_noted = 0,
            expiring_noted = 0",
    )?
    .execute(
        named_params! {":agent_id": agent_id, ":url": url, ":submitted": submitted, ":host": host, ":at": at},
    )?;
    Ok(())
}

/// Removes the proof recorded under `url` or submitted as it; `written` is the same URL as the
/// fetcher writes it (the form the card shows), which matches too. False when there was none.
pub fn remove(conn: &Connection, agent_id: i64, url: &str, written: &str) -> Result<bool> {
    Ok(conn
        .prepare_cached(
            "DELETE FROM link_proofs WHERE agent_id = :agent_id
                AND (url IN (:url, :written) OR submitted_url IN (:url, :written))",
        )?
        .execute(named_params! {":agent_id": agent_id, ":url": url, ":written": written})?
        > 0)
}

/// A proof the server just noted (expiring or expired), with its agent.
#[derive(Debug, Clone)]
pub struct Noted {
    pub agent_id: i64,
    pub url: String,
    pub verified_at: i64,
}

fn noted(r: &rusqlite::Row<'_>) -> rusqlite::Result<Noted> {
    Ok(Noted { agent_id: r.get("agent_id")?, url: r.get("url")?, verified_at: r.get("verified_at")? })
}

/// Notes the proofs established at or before `established_before` that are not noted yet (they
/// have expired); the change log then records each agent's card as changed. Returns them.
pub fn note_expired(conn: &Connection, established_before: i64) -> Result<Vec<Noted>> {
    let mut stmt = conn.prepare_cached(
        "UPDATE link_proofs SET expiry_noted = 1 WHERE expiry_noted = 0 AND verified_at <= :before
         RETURNING agent_id, url, verified_at",
    )?;
    let rows = stmt.query_map(named_params! {":before": established_before}, noted)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Notes the live proofs established at or before `established_before` whose coming expiry is
/// not noted yet; returns them. The card does not change (its trigger ignores the column).
pub fn note_expiring(conn: &Connection, established_before: i64) -> Result<Vec<Noted>> {
    let mut stmt = conn.prepare_cached(
        "UPDATE link_proofs SET expiring_noted = 1
         WHERE expiry_noted = 0 AND expiring_noted = 0 AND verified_at <= :before
         RETURNING agent_id, url, verified_at",
    )?;
    let rows = stmt.query_map(named_params! {":before": established_before}, noted)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}
