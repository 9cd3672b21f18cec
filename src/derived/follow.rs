//! The follower of the change log: keeps what is derived from SQLite (the search index, the
//! vectors, the view cache) in line with it. Every write appends its changes to the log
//! (table `changes`) inside its transaction (the triggers of `migrations/0002_change_log.sql`);
//! the follower applies everything after the [`ChangeSeq`] it has applied. The writer thread
//! calls it after each batch, before answering (read-your-writes);
//! searches call it before they read, and the background pass every second, which picks up the
//! writes of other processes (inbound mail, operator commands).
//!
//! Applying is cheap: the index keeps what it applied in memory (its overlay) and searches see it
//! at once. The background pass flushes it to disk, off the writer's path; after a crash the
//! index opens at its last flushed seq and `repair_index` replays the log from there.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

use agentdir_search_index::{Change as IndexChange, SearchIndex};
use rusqlite::Connection;

use super::cache::Cache;
use super::vectors::Vectors;
use crate::error::{Error, Result};
use crate::progress::Progress;
use crate::store::changes::{self, ChangeKind};
use crate::store::positions::{ChangeSeq, DataVersion};
use crate::store::wal_index::CommitStamp;
use crate::store::{Pool, meta, search};

/// Log rows applied per index commit.
const BATCH: u32 = 5_000;
/// `meta` key set by `agentdir admin reindex` when the running server holds the index.
pub const REINDEX_REQUESTED: &str = "reindex_requested";

pub(crate) fn index_error(e: impl std::fmt::Display) -> Error {
    tracing::error!(error = %e, "search index failure");
    Error::Internal
}

/// Applies the log after the index's seq to the index, and evicts the cached documents and items it
/// changed. Cheap when there is nothing new (one indexed read).
pub fn follow(
    conn: &Connection,
    index: &SearchIndex,
    cache: Option<&Cache>,
    vectors: Option<&Vectors>,
) -> Result<()> {
    if let Some(vectors) = vectors {
        vectors.apply_vectors(conn)?;
        vectors.calls.apply_vectors(conn)?;
    }
    loop {
        let applied = ChangeSeq::new(index.applied_seq());
        let batch = changes::after(conn, applied, BATCH)?;
        let Some(last) = batch.last().map(|c| c.seq) else {
            return Ok(());
        };
        let mut docs = Vec::with_capacity(batch.len());
        for change in &batch {
            match change.kind {
                ChangeKind::Agent => docs.push(search::agent_change(conn, change.key)?),
                ChangeKind::Call => docs.push(search::call_change(conn, change.key)?),
                ChangeKind::Collab => {}
            }
        }
        let agents = changed_agents(conn, &batch, &docs)?;
        if let Some(vectors) = vectors {
            vectors.calls.apply_calls(conn, &docs)?;
        }
        index.apply(docs, last.get()).map_err(index_error)?;
        if let Some(vectors) = vectors {
            vectors.apply_agents(conn, &agents)?;
        }
        if let Some(cache) = cache {
            cache.evict(&batch, last);
        }
    }
}

/// Applies to the vectors again the agents the log changed after `seq`, and the authors of the
/// calls it changed. At start the load reads its own snapshots while the follower applies what
/// is written meanwhile, so it may place an older snapshot of an agent over what the follower
/// applied; this puts the newer back.
pub fn reapply_agents_after(conn: &Connection, vectors: &Vectors, mut seq: ChangeSeq) -> Result<()> {
    loop {
        let batch = changes::after(conn, seq, BATCH)?;
        let Some(last) = batch.last().map(|c| c.seq) else {
            return Ok(());
        };
        let docs = batch
            .iter()
            .filter(|c| c.kind == ChangeKind::Agent)
            .map(|c| search::agent_change(conn, c.key))
            .collect::<Result<Vec<_>>>()?;
        vectors.apply_agents(conn, &changed_agents(conn, &batch, &docs)?)?;
        seq = last;
    }
}

/// What a batch of the log changed of the agents the vectors hold: the agents' own changes
/// (`docs`, as read for the index) and the authors of the calls it changed, each author once
/// however many of its calls the batch holds (a hidden call is an operator action its author's
/// ranking weighs; a burst of calls by a few agents would read the same facts thousands of times).
fn changed_agents(
    conn: &Connection,
    batch: &[changes::Change],
    docs: &[IndexChange],
) -> Result<Vec<IndexChange>> {
    let mut authors = Vec::new();
    for change in batch.iter().filter(|c| c.kind == ChangeKind::Call) {
        authors.extend(search::call_author(conn, change.key)?);
    }
    authors.sort_unstable();
    authors.dedup();
    let mut agents: Vec<_> = docs
        .iter()
        .filter(|d| matches!(d, IndexChange::UpsertAgent(_) | IndexChange::RemoveAgent(_)))
        .cloned()
        .collect();
    for author in authors {
        agents.push(search::agent_change(conn, author)?);
    }
    Ok(agents)
}

/// Evicts the cached documents and items changed after the cache's position. Cheap when there is nothing new
/// (one indexed read).
pub fn follow_cache(conn: &Connection, cache: &Cache) -> Result<()> {
    loop {
        let batch = changes::after(conn, cache.applied(), BATCH)?;
        let Some(last) = batch.last().map(|c| c.seq) else {
            return Ok(());
        };
        cache.evict(&batch, last);
    }
}

/// Rebuilds the whole index from SQLite, reporting each document to `progress`. The seq is read
/// first: changes landing during the rebuild are applied by the next `follow`.
pub fn rebuild(conn: &Connection, index: &SearchIndex, progress: &mut Progress) -> Result<()> {
    let seq = changes::max_seq(conn)?;
    let started = std::time::Instant::now();
    if progress.reports() {
        progress.start(search::count_all_docs(conn)?);
    }
    search::with_all_docs(conn, |docs| index.rebuild(docs.inspect(|_| progress.inc(1)), seq.get()))?
        .map_err(index_error)?;
    progress.finish();
    tracing::info!(elapsed_ms = started.elapsed().as_millis() as u64, "search index rebuilt");
    Ok(())
}

/// `agentdir admin reindex` while no server holds the index.
pub fn rebuild_alone(pool: &Pool, index: &SearchIndex, progress: &mut Progress) -> Result<()> {
    rebuild(&*pool.get()?, index, progress)?;
    crate::store::write(&mut *pool.get()?, |tx| meta::remove(tx, REINDEX_REQUESTED))
}

/// Asks the running server to rebuild its index at its next background pass.
pub fn request_rebuild(pool: &Pool) -> Result<()> {
    crate::store::write(&mut *pool.get()?, |tx| {
        meta::set(tx, REINDEX_REQUESTED, &crate::time::now_ms().to_string())
    })
}

/// The data version at which a follower last caught up, and the WAL-index stamp read before it
/// (no commit since that stamp: nothing to follow).
pub(crate) struct Seen {
    version: AtomicI64,
    stamp: AtomicU64,
}

impl Seen {
    pub(crate) fn is(&self, version: DataVersion) -> bool {
        self.version.load(Ordering::Acquire) == version.get()
    }

    pub(crate) fn set(&self, version: DataVersion) {
        self.version.store(version.get(), Ordering::Release);
    }

    /// Whether the follower had caught up with every commit up to `stamp`. (Racing callers may
    /// leave an older stamp: that costs a question to SQLite, never a change missed.)
    pub(crate) fn stamped(&self, stamp: CommitStamp) -> bool {
        self.stamp.load(Ordering::Acquire) == stamp.get()
    }

    pub(crate) fn stamp(&self, stamp: CommitStamp) {
        self.stamp.store(stamp.get(), Ordering::Release);
    }
}

impl Default for Seen {
    fn default() -> Seen {
        Seen { version: AtomicI64::new(DataVersion::UNSEEN.get()), stamp: AtomicU64::new(CommitStamp::NONE) }
    }
}

/// What each follower that catches up by data version last saw.
#[derive(Default)]
pub(crate) struct SeenBy {
    pub(crate) by_index: Seen,
    pub(crate) by_cache: Seen,
}
