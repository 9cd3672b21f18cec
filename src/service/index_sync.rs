//! Keeps the search index in line with SQLite. Writers append to the change log inside their
//! transactions (triggers do it); `sync` applies everything after the index's high-water mark.
//! Writes call it before they return (read-your-writes) and searches call it before they read,
//! which also picks up changes made by other processes (inbound mail, operator commands).

use std::sync::Mutex;

use agentdir_search_index::{Change, SearchIndex};

use super::Directory;
use crate::error::{Error, Result};
use crate::store::{self, Pool, meta, search};

/// Log rows applied per index commit.
const BATCH: u32 = 5_000;
/// `meta` key set by `agentdir admin reindex` when the running server holds the index.
pub const REINDEX_REQUESTED: &str = "reindex_requested";

fn index_error(e: impl std::fmt::Display) -> Error {
    tracing::error!(error = %e, "search index failure");
    Error::Internal
}

/// Applies pending changes. Cheap when there are none (one indexed read).
pub fn sync(pool: &Pool, index: &SearchIndex, lock: &Mutex<()>) -> Result<()> {
    let conn = pool.get()?;
    if search::max_seq(&conn)? <= index.applied_seq() {
        return Ok(());
    }
    // One syncer at a time; those who waited usually find their change already applied.
    let _guard = lock.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        let applied = index.applied_seq();
        let (last, entities) = search::changes_after(&conn, applied, BATCH)?;
        if last <= applied {
            return Ok(());
        }
        let changes: Vec<Change> = entities
            .iter()
            .map(|(entity, key)| search::change_for(&conn, entity, *key))
            .collect::<Result<_>>()?;
        index.apply(changes, last).map_err(index_error)?;
        search::prune(&conn, last)?;
    }
}

/// Rebuilds the whole index from SQLite.
pub fn rebuild(pool: &Pool, index: &SearchIndex, lock: &Mutex<()>) -> Result<()> {
    let _guard = lock.lock().unwrap_or_else(|e| e.into_inner());
    let conn = pool.get()?;
    // The high-water mark is read first: changes landing during the rebuild are replayed after.
    let seq = search::max_seq(&conn)?;
    let started = std::time::Instant::now();
    search::with_all_docs(&conn, |docs| index.rebuild(docs, seq))?.map_err(index_error)?;
    search::prune(&conn, seq)?;
    store::write(&mut *pool.get()?, |tx| meta::remove(tx, REINDEX_REQUESTED))?;
    tracing::info!(elapsed_ms = started.elapsed().as_millis() as u64, "search index rebuilt");
    Ok(())
}

/// Asks the running server to rebuild its index at its next background pass.
pub fn request_rebuild(pool: &Pool) -> Result<()> {
    store::write(&mut *pool.get()?, |tx| meta::set(tx, REINDEX_REQUESTED, &crate::time::now_ms().to_string()))
}

impl Directory {
    pub fn sync_index(&self) -> Result<()> {
        sync(&self.pool, &self.index, &self.sync_lock)
    }

    pub fn rebuild_index(&self) -> Result<()> {
        rebuild(&self.pool, &self.index, &self.sync_lock)
    }

    /// At start: rebuild when the index was missing, corrupt or of an older schema, or when a
    /// rebuild was asked for; then catch up with whatever was committed to SQLite but never
    /// reached the index (a crash between the two commits).
    pub fn repair_index(&self) -> Result<()> {
        let requested = meta::get(&*self.conn()?, REINDEX_REQUESTED)?.is_some();
        if self.index.needs_rebuild() || requested {
            self.rebuild_index()?;
        }
        self.sync_index()
    }

    /// The periodic pass of a running server: honour a rebuild request from another process,
    /// apply changes other processes made even when nobody searches, and forget old rate events.
    pub fn background_pass(&self) -> Result<()> {
        if meta::get(&*self.conn()?, REINDEX_REQUESTED)?.is_some() {
            self.rebuild_index()?;
        }
        self.sync_index()
    }
}
