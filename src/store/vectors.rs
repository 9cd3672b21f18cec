//! The `agent_vectors` table (see `migrations/0008_meaning.sql`) and the evidence ranking reads
//! about each agent.

use std::collections::HashMap;

use agentdir_meaning::Quantized;
use rusqlite::{Connection, OptionalExtension, named_params};

use crate::error::Result;

/// One stored vector.
#[derive(Debug, Clone)]
pub struct StoredVector {
    pub stamp: i64,
    pub agent_id: i64,
    pub model: String,
    pub text_hash: Vec<u8>,
    pub vector: Option<Quantized>,
}

fn from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<StoredVector> {
    Ok(StoredVector {
        stamp: r.get("stamp")?,
        agent_id: r.get("agent_id")?,
        model: r.get("model")?,
        text_hash: r.get("text_hash")?,
        vector: Quantized::from_bytes(&r.get::<_, Vec<u8>>("vector")?),
    })
}

/// Stores (replaces) the vector of an agent; it gets a new stamp.
pub fn upsert(
    tx: &Connection,
    agent_id: i64,
    model: &str,
    text_hash: &[u8],
    vector: &Quantized,
) -> Result<()> {
    tx.prepare_cached(
        "INSERT OR REPLACE INTO agent_vectors (agent_id, model, text_hash, vector)
         VALUES (:agent, :model, :hash, :vector)",
    )?
    .execute(
        named_params! {":agent": agent_id, ":model": model, ":hash": text_hash, ":vector": vector.to_bytes()},
    )?;
    Ok(())
}

/// The stored vectors of the agents whose ids are from `first` to `last`.
pub fn between(conn: &Connection, first: i64, last: i64) -> Result<Vec<StoredVector>> {
    let mut stmt = conn.prepare_cached(
        "SELECT stamp, agent_id, model, text_hash, vector FROM agent_vectors
         WHERE agent_id BETWEEN :first AND :last",
    )?;
    let rows = stmt.query_map(named_params! {":first": first, ":last": last}, from_row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// How many vectors are stored (read from the smallest index).
pub fn count(conn: &Connection) -> Result<usize> {
    let n: i64 = conn.query_row("SELECT count(*) AS n FROM agent_vectors", [], |r| r.get("n"))?;
    Ok(usize::try_from(n).unwrap_or(0))
}

/// The newest stamp of any stored vector (0 when none).
pub fn newest_stamp(conn: &Connection) -> Result<i64> {
    Ok(conn.query_row("SELECT COALESCE(max(stamp), 0) AS stamp FROM agent_vectors", [], |r| r.get("stamp"))?)
}

/// Vectors written after `stamp`, oldest first, at most `limit`.
pub fn after(conn: &Connection, stamp: i64, limit: u32) -> Result<Vec<StoredVector>> {
    let mut stmt = conn.prepare_cached(
        "SELECT stamp, agent_id, model, text_hash, vector FROM agent_vectors
         WHERE stamp > :after ORDER BY stamp LIMIT :limit",
    )?;
    let rows = stmt.query_map(named_params! {":after": stamp, ":limit": limit}, from_row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// A vector already computed for this text by this model (equal texts share a computation).
pub fn by_text(conn: &Connection, model: &str, text_hash: &[u8]) -> Result<Option<Quantized>> {
    let bytes: Option<Vec<u8>> = conn
        .prepare_cached(
            "SELECT vector FROM agent_vectors WHERE text_hash = :hash AND model = :model LIMIT 1",
        )?
        .query_row(named_params! {":hash": text_hash, ":model": model}, |r| r.get("vector"))
        .optional()?;
    Ok(bytes.as_deref().and_then(Quantized::from_bytes))
}

/// What the directory knows of an agent beyond its words, for ranking.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EvidenceCounts {
    /// Link proofs verified within their lifetime.
    pub live_proofs: u32,
    /// Confirmed collaborations between distinct claimed owners (the card's rule).
    pub collaborations: u32,
    /// Calls an operator hid and has not restored, deleted since or not.
    pub hidden_calls: u32,
    /// Suspensions an operator imposed, past or present, as the public moderation log shows them
    /// (so `explain` tells no more of an agent's moderation history than that log).
    pub suspensions: u32,
}

/// The evidence ranking counts, each rule once, as the rows it counts by agent: the single
/// agent's count and every agent's count at start are both read from these (SQLite flattens the
/// subquery, so the single agent's count still reads its index).
const LIVE_PROOFS: &str = "SELECT agent_id FROM link_proofs WHERE verified_at >= :after";
/// Calls an operator hid and did not restore, as the moderation log tells it: the author deleting
/// a hidden call does not take back the operator's action (nor does a restore of the database
/// that lost the call).
const HIDDEN_CALLS: &str =
    "SELECT a.id AS agent_id FROM moderation_log m JOIN agents a ON a.public_id = m.agent_sub
    WHERE m.action = 'call_hidden' AND NOT EXISTS (
        SELECT 1 FROM moderation_log r
        WHERE r.call_id = m.call_id AND r.action = 'call_restored' AND r.seq > m.seq)";
const SUSPENSIONS: &str =
    "SELECT a.id AS agent_id FROM moderation_log m JOIN agents a ON a.public_id = m.agent_sub
    WHERE m.action = 'agent_suspended'";

fn clamp(n: impl TryInto<u32>) -> u32 {
    n.try_into().unwrap_or(u32::MAX)
}

/// The evidence of agent `id`; proofs verified before `live_after` have expired.
pub fn evidence(conn: &Connection, id: i64, live_after: i64) -> Result<EvidenceCounts> {
    let count = |rule: &str, params: &[(&str, &dyn rusqlite::ToSql)]| -> Result<u32> {
        let sql = format!("SELECT COUNT(*) AS n FROM ({rule}) WHERE agent_id = :id");
        let n: i64 = conn.prepare_cached(&sql)?.query_row(params, |r| r.get("n"))?;
        Ok(clamp(n))
    };
    Ok(EvidenceCounts {
        live_proofs: count(LIVE_PROOFS, named_params! {":id": id, ":after": live_after})?,
        collaborations: clamp(super::collabs::evidence_count(conn, id)?),
        hidden_calls: count(HIDDEN_CALLS, named_params! {":id": id})?,
        suspensions: count(SUSPENSIONS, named_params! {":id": id})?,
    })
}

/// The evidence of every agent that has any (at start, in one pass over each table instead of
/// four reads an agent); proofs verified before `live_after` have expired.
pub fn all_evidence(conn: &Connection, live_after: i64) -> Result<HashMap<i64, EvidenceCounts>> {
    let mut all: HashMap<i64, EvidenceCounts> = HashMap::new();
    let mut add =
        |rule: &str, params: &[(&str, &dyn rusqlite::ToSql)], field: fn(&mut EvidenceCounts) -> &mut u32| {
            let mut stmt =
                conn.prepare(&format!("SELECT agent_id, COUNT(*) AS n FROM ({rule}) GROUP BY agent_id"))?;
            let mut rows = stmt.query(params)?;
            while let Some(r) = rows.next()? {
                let n: i64 = r.get("n")?;
                *field(all.entry(r.get("agent_id")?).or_default()) = clamp(n);
            }
            Ok::<_, crate::error::Error>(())
        };
    add(LIVE_PROOFS, named_params! {":after": live_after}, |e| &mut e.live_proofs)?;
    add(HIDDEN_CALLS, &[], |e| &mut e.hidden_calls)?;
    add(SUSPENSIONS, &[], |e| &mut e.suspensions)?;
    for (agent, n) in super::collabs::evidence_counts(conn)? {
        all.entry(agent).or_default().collaborations = clamp(n);
    }
    Ok(all)
}

/// The stored vector of one agent.
pub fn for_agent(conn: &Connection, agent_id: i64) -> Result<Option<StoredVector>> {
    Ok(conn
        .prepare_cached(
            "SELECT stamp, agent_id, model, text_hash, vector FROM agent_vectors WHERE agent_id = :agent",
        )?
        .query_row(named_params! {":agent": agent_id}, from_row)
        .optional()?)
}
