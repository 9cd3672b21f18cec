//! The follower of the change log: keeps what is derived from SQLite (the search index) in line
//! with it. Every write appends its changes to the log inside its transaction (the triggers of
//! `migrations/0002_change_log.sql`); the follower applies everything after the seq it has
//! applied. The writer thread calls it after each batch, before answering (read-your-writes);
//! searches call it before they read, and the background pass every second, which picks up the
//! writes of other processes (inbound mail, operator commands).
//!
//! Applying is cheap: the index keeps what it applied in memory (its overlay) and searches see it
//! at once. The background pass flushes it to disk, off the writer's path; after a crash the
//! index opens at its last flushed seq and `repair_index` replays the log from there.

use std::sync::atomic::{AtomicI64, Ordering};

use agentdir_search_index::{Change as IndexChange, SearchIndex};
use rusqlite::Connection;

use super::Directory;
use crate::derived::Derived;
use crate::domain::trust::LINK_PROOF_DAYS;
use crate::error::{Error, Result};
use crate::meaning::Meaning;
use crate::progress::Progress;
use crate::store::changes::{self, ChangeKind};
use crate::store::{Pool, meta, proofs, search};
use crate::time::DAY;

/// Log rows applied per index commit.
const BATCH: u32 = 5_000;
/// `meta` key set by `agentdir admin reindex` when the running server holds the index.
pub const REINDEX_REQUESTED: &str = "reindex_requested";

fn index_error(e: impl std::fmt::Display) -> Error {
    tracing::error!(error = %e, "search index failure");
    Error::Internal
}

/// Applies the log after the index's seq to the index, and evicts the cached views it
/// changed. Cheap when there is nothing new (one indexed read).
pub fn follow(
    conn: &Connection,
    index: &SearchIndex,
    views: Option<&Derived>,
    meaning: Option<&Meaning>,
) -> Result<()> {
    if let Some(meaning) = meaning {
        meaning.apply_vectors(conn)?;
    }
    loop {
        let applied = index.applied_seq();
        let batch = changes::after(conn, applied, BATCH)?;
        let Some(last) = batch.last().map(|c| c.seq) else {
            return Ok(());
        };
        let mut docs = Vec::with_capacity(batch.len());
        let mut authors = Vec::new();
        for change in &batch {
            match change.kind {
                ChangeKind::Agent => docs.push(search::agent_change(conn, change.key)?),
                ChangeKind::Call => {
                    docs.push(search::call_change(conn, change.key)?);
                    // A hidden call is an operator action its author's ranking weighs.
                    authors.extend(search::call_author(conn, change.key)?);
                }
                ChangeKind::Collab => {}
            }
        }
        let mut agents: Vec<_> = docs
            .iter()
            .filter(|d| matches!(d, IndexChange::UpsertAgent(_) | IndexChange::RemoveAgent(_)))
            .cloned()
            .collect();
        for author in authors {
            agents.push(search::agent_change(conn, author)?);
        }
        index.apply(docs, last).map_err(index_error)?;
        if let Some(meaning) = meaning {
            meaning.apply_agents(conn, index, &agents)?;
        }
        if let Some(views) = views {
            views.evict(&batch, last);
        }
    }
}

/// Evicts the cached views changed after the cache's position. Cheap when there is nothing new
/// (one indexed read).
pub fn follow_views(conn: &Connection, views: &Derived) -> Result<()> {
    loop {
        let batch = changes::after(conn, views.applied(), BATCH)?;
        let Some(last) = batch.last().map(|c| c.seq) else {
            return Ok(());
        };
        views.evict(&batch, last);
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
    search::with_all_docs(conn, |docs| index.rebuild(docs.inspect(|_| progress.inc(1)), seq))?
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

impl Directory {
    fn follower(&self) -> std::sync::MutexGuard<'_, Connection> {
        self.follower.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Brings the followers up to the newest committed change.
    pub fn follow(&self) -> Result<()> {
        let conn = self.follower();
        if self.replica.is_some() {
            conn.release_memory()?; // see `Directory::read`
        }
        follow(&conn, &self.index, Some(&self.derived), Some(&self.meaning))
    }

    /// Before a search: brings the index (and the views) up to the newest commit, whoever made
    /// it. This server's writes are answered before the applier has indexed them, so this is
    /// what makes a search see every write answered before it started.
    pub fn catch_up(&self) -> Result<()> {
        self.catch_up_with(&self.seen_by_index, || self.follow())
    }

    /// Before serving a cached view: evicts the views that writes of other processes changed
    /// (this server's writer evicts its own before answering).
    pub fn catch_up_views(&self) -> Result<()> {
        self.catch_up_with(&self.seen_by_views, || follow_views(&*self.read()?, &self.derived))
    }

    /// Runs `follow` when anyone committed since `seen` was last brought up to date: one
    /// question to SQLite (`PRAGMA data_version`, answered from shared memory, no page read)
    /// when nothing changed.
    fn catch_up_with(&self, seen: &AtomicI64, follow: impl FnOnce() -> Result<()>) -> Result<()> {
        // A replica's copy changes under Litestream, not SQLite's change counter: its own loop
        // follows it (`replica::link::run`), and reads that need a position wait for it.
        if self.replica.is_some() {
            return Ok(());
        }
        let version: i64 = {
            let watch = self.watch.lock().unwrap_or_else(|e| e.into_inner());
            watch.prepare_cached("PRAGMA data_version")?.query_row([], |r| r.get(0))?
        };
        if version == seen.load(Ordering::Acquire) {
            return Ok(());
        }
        follow()?;
        seen.store(version, Ordering::Release);
        Ok(())
    }

    /// On the writer thread after a commit, before its jobs are answered. A failure here does
    /// not undo the write; it drops every cached view instead, so none can be stale.
    pub(crate) fn evict_after_write(&self, conn: &Connection, seq: u64) {
        if let Err(e) = follow_views(conn, &self.derived) {
            tracing::warn!(error = %e, "reading the change log after a write failed; dropping every cached view");
            self.derived.clear(seq);
        }
    }

    /// On the applier thread after commits. A failure here does not undo the write: the next
    /// search and the background pass retry.
    pub(crate) fn follow_after_write(&self) {
        if let Err(e) = self.follow() {
            tracing::warn!(error = %e, "following the change log after a write failed; will retry");
        }
    }

    fn rebuild_index(&self) -> Result<()> {
        rebuild(&self.follower(), &self.index, &mut Progress::silent())?;
        if self.replica.is_some() {
            return Ok(());
        }
        self.write_blocking(|tx| meta::remove(tx, REINDEX_REQUESTED))
    }

    /// (A replica's index is its own: the primary's requests are not for it.)
    fn rebuild_requested(&self) -> Result<bool> {
        if self.replica.is_some() {
            return Ok(false);
        }
        Ok(meta::get(&*self.read()?, REINDEX_REQUESTED)?.is_some())
    }

    /// At start: rebuild when the index was missing, corrupt or of an older schema, or when a
    /// rebuild was asked for; then catch up with whatever was committed to SQLite but never
    /// reached the index (a crash between the two commits).
    pub fn repair_index(&self) -> Result<()> {
        if self.index.needs_rebuild() || self.rebuild_requested()? {
            self.rebuild_index()?;
        }
        self.follow()
    }

    /// The periodic pass of a running server: honour a rebuild request from another process,
    /// apply changes other processes made even when nobody reads, and let the change feed
    /// forget deletions past their retention.
    pub fn background_pass(&self) -> Result<()> {
        if self.rebuild_requested()? {
            self.rebuild_index()?;
        }
        if let Some(link) = &self.replica {
            return crate::replica::link::catch_up(self, link);
        }
        self.follow()?;
        self.index.flush().map_err(index_error)?;
        self.note_expired_proofs()?;
        self.forget_old_deletions().map(|_| ())
    }

    /// Records in the change log the cards whose link proofs have passed their lifetime.
    fn note_expired_proofs(&self) -> Result<usize> {
        let established_before = crate::time::now_ms() - LINK_PROOF_DAYS * DAY;
        self.write_blocking(move |tx| proofs::note_expired(tx, established_before))
    }
}
