//! The `link_proofs` table: pages that proved they belong to an agent.

use std::collections::HashMap;

use rusqlite::{Connection, params};

use super::id_list;
use crate::error::Result;

#[derive(Debug, Clone)]
pub struct ProofRow {
    pub url: String,
    pub host: String,
    pub verified_at: i64,
}

pub fn for_agent(conn: &Connection, agent_id: i64) -> Result<Vec<ProofRow>> {
    let mut stmt = conn.prepare_cached(
        "SELECT url, host, verified_at FROM link_proofs WHERE agent_id = ?1 ORDER BY verified_at, url",
    )?;
    let rows = stmt.query_map([agent_id], |r| {
        Ok(ProofRow { url: r.get(0)?, host: r.get(1)?, verified_at: r.get(2)? })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// The proofs of several agents in one statement, each list in its order; agents without
/// proofs are absent.
pub fn for_agents(conn: &Connection, agent_ids: &[i64]) -> Result<HashMap<i64, Vec<ProofRow>>> {
    let mut stmt = conn.prepare_cached(
        "SELECT agent_id, url, host, verified_at FROM link_proofs
         WHERE agent_id IN (SELECT value FROM json_each(?1)) ORDER BY agent_id, verified_at, url",
    )?;
    let mut out: HashMap<i64, Vec<ProofRow>> = HashMap::new();
    let mut rows = stmt.query([id_list(agent_ids)])?;
    while let Some(r) = rows.next()? {
        let proof = ProofRow { url: r.get(1)?, host: r.get(2)?, verified_at: r.get(3)? };
        out.entry(r.get(0)?).or_default().push(proof);
    }
    Ok(out)
}

/// Records (or renews) a proof.
pub fn upsert(conn: &Connection, agent_id: i64, url: &str, host: &str, at: i64) -> Result<()> {
    conn.execute(
        "INSERT INTO link_proofs (agent_id, url, host, verified_at) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT (agent_id, url) DO UPDATE SET host = excluded.host, verified_at = excluded.verified_at,
            expiry_noted = 0",
        params![agent_id, url, host, at],
    )?;
    Ok(())
}

/// Removes a proof; false when there was none for this url.
pub fn remove(conn: &Connection, agent_id: i64, url: &str) -> Result<bool> {
    Ok(conn.execute("DELETE FROM link_proofs WHERE agent_id = ?1 AND url = ?2", params![agent_id, url])? == 1)
}

pub fn count(conn: &Connection, agent_id: i64) -> Result<u64> {
    let n: i64 =
        conn.query_row("SELECT COUNT(*) FROM link_proofs WHERE agent_id = ?1", [agent_id], |r| r.get(0))?;
    Ok(n as u64)
}

/// Notes the proofs established at or before `established_before` that are not noted yet (they
/// have expired); the change log then records each agent's card as changed.
pub fn note_expired(conn: &Connection, established_before: i64) -> Result<usize> {
    Ok(conn
        .prepare_cached(
            "UPDATE link_proofs SET expiry_noted = 1 WHERE expiry_noted = 0 AND verified_at <= ?1",
        )?
        .execute([established_before])?)
}
