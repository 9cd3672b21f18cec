//! The `link_proofs` table: pages that proved they belong to an agent.

use rusqlite::{Connection, params};

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

/// Records (or renews) a proof.
pub fn upsert(conn: &Connection, agent_id: i64, url: &str, host: &str, at: i64) -> Result<()> {
    conn.execute(
        "INSERT INTO link_proofs (agent_id, url, host, verified_at) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT (agent_id, url) DO UPDATE SET host = excluded.host, verified_at = excluded.verified_at",
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
