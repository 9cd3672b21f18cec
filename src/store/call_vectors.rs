//! The `call_vectors` table (see `migrations/0016_call_vectors.sql`) and what the in-memory
//! call vectors load of each visible call.

use agentdir_meaning::Quantized;
use rusqlite::{Connection, OptionalExtension, named_params};

use super::JsonList;
use super::calls::VISIBLE;
use crate::error::Result;

/// One stored call vector.
#[derive(Debug, Clone)]
pub struct StoredCallVector {
    pub stamp: i64,
    pub call_seq: i64,
    pub model: String,
    pub vector: Option<Quantized>,
}

fn from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<StoredCallVector> {
    Ok(StoredCallVector {
        stamp: r.get("stamp")?,
        call_seq: r.get("call_seq")?,
        model: r.get("model")?,
        vector: Quantized::from_bytes(&r.get::<_, Vec<u8>>("vector")?),
    })
}

/// Stores (replaces) the vector of a call that still exists; it gets a new stamp.
pub fn upsert(tx: &Connection, call_seq: i64, model: &str, vector: &Quantized) -> Result<()> {
    tx.prepare_cached(
        "INSERT OR REPLACE INTO call_vectors (call_seq, model, vector)
         SELECT :seq, :model, :vector WHERE EXISTS (SELECT 1 FROM calls WHERE seq = :seq)",
    )?
    .execute(named_params! {":seq": call_seq, ":model": model, ":vector": vector.to_bytes()})?;
    Ok(())
}

/// Vectors written after `stamp`, oldest first, at most `limit`.
pub fn after(conn: &Connection, stamp: i64, limit: u32) -> Result<Vec<StoredCallVector>> {
    let mut stmt = conn.prepare_cached(
        "SELECT stamp, call_seq, model, vector FROM call_vectors
         WHERE stamp > :after ORDER BY stamp LIMIT :limit",
    )?;
    let rows = stmt.query_map(named_params! {":after": stamp, ":limit": limit}, from_row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// The stored vector of one call.
pub fn for_call(conn: &Connection, call_seq: i64) -> Result<Option<StoredCallVector>> {
    Ok(conn
        .prepare_cached("SELECT stamp, call_seq, model, vector FROM call_vectors WHERE call_seq = :seq")?
        .query_row(named_params! {":seq": call_seq}, from_row)
        .optional()?)
}

/// What a call search by meaning filters on, of one visible call.
#[derive(Debug, Clone)]
pub struct CallFilterValues {
    pub seq: i64,
    pub kind: String,
    pub tags: Vec<String>,
}

/// Calls `f` with the filter values of every visible call, in `seq` order (at start).
pub fn each_visible(conn: &Connection, mut f: impl FnMut(CallFilterValues)) -> Result<()> {
    let mut stmt = conn.prepare(&format!(
        "SELECT p.seq, p.kind, p.tags FROM calls p JOIN agents a ON a.id = p.agent_id
         WHERE {VISIBLE} ORDER BY p.seq"
    ))?;
    let mut rows = stmt.query([])?;
    while let Some(r) = rows.next()? {
        f(CallFilterValues {
            seq: r.get("seq")?,
            kind: r.get("kind")?,
            tags: r.get::<_, JsonList>("tags")?.0,
        });
    }
    Ok(())
}
