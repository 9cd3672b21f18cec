//! When the app's followers of the change log run (see `derived::follow` for what following
//! does): on the writer thread after each commit, before its writes are answered (the cache);
//! on the applier thread after commits (the index and the vectors); before a search or a
//! cached read when another process committed; at start, with a rebuild when the index needs
//! one; and on a replica whenever Litestream moved its copy.

use rusqlite::Connection;

use super::{App, Replica, Role};
use crate::derived::follow::{REINDEX_REQUESTED, Seen, follow, follow_cache, rebuild};
use crate::error::Result;
use crate::progress::Progress;
use crate::store::positions::ChangeSeq;
use crate::store::{changes, meta};

impl App {
    /// Brings the followers up to the newest committed change.
    pub(crate) fn follow(&self) -> Result<()> {
        follow(&*self.follower()?, &self.index, Some(&self.cache), Some(&self.vectors))
    }

    /// Before a search: brings the index (and the cache) up to the newest commit, whoever made
    /// it. This server's writes are answered before the applier has indexed them, so this is
    /// what makes a search see every write answered before it started.
    pub fn catch_up(&self) -> Result<()> {
        self.catch_up_with(&self.seen.by_index, || self.follow())
    }

    /// Before serving a cached document: evicts what writes of other processes changed
    /// (this server's writer evicts its own before answering).
    pub(crate) fn catch_up_cache(&self) -> Result<()> {
        self.catch_up_with(&self.seen.by_cache, || follow_cache(&*self.read()?, &self.cache))
    }

    /// Runs `follow` when anyone committed since `seen` was last brought up to date. When the
    /// WAL-index shows no commit since then, that is all: two reads of shared memory, no lock, so
    /// reads on every core at once do not wait for one another. Otherwise one question to SQLite
    /// (its data version) on the watcher's connection, and `follow` when it moved.
    fn catch_up_with(&self, seen: &Seen, follow: impl FnOnce() -> Result<()>) -> Result<()> {
        // A replica's copy changes under Litestream, not SQLite's data version: the replica's
        // loop follows it (`follow_copy`), and reads that need a position wait for it.
        if let Role::Replica(_) = self.role() {
            return Ok(());
        }
        // Read before SQLite is asked: what is followed below covers every commit it counts.
        let stamp = self.commits_now();
        if stamp.is_some_and(|stamp| seen.stamped(stamp)) {
            return Ok(());
        }
        let version = crate::store::data_version(&self.watch())?;
        if !seen.is(version) {
            follow()?;
            seen.set(version);
        }
        if let Some(stamp) = stamp {
            seen.stamp(stamp);
        }
        Ok(())
    }

    /// On the writer thread after a commit, before its jobs are answered. A failure here does
    /// not undo the write; it drops every cached view instead, so none can be stale.
    pub(crate) fn evict_after_write(&self, conn: &Connection, seq: ChangeSeq) {
        if let Err(e) = follow_cache(conn, &self.cache) {
            tracing::warn!(error = %e, "reading the change log after a write failed; dropping every cached view");
            self.cache.clear(seq);
        }
        self.wake_waiting(conn);
    }

    /// Wakes the polls waiting for the agents that have events committed since the last look
    /// (one indexed read): on the writer thread after each commit, and at the background pass
    /// for the commits of other processes. A failure wakes nobody now; the next look does.
    pub(crate) fn wake_waiting(&self, conn: &Connection) {
        if let Err(e) = self.waiting.wake_after(|through| crate::store::events::agents_after(conn, through)) {
            tracing::warn!(error = %e, "looking for new events failed; waiting polls wake at the next look");
        }
    }

    /// On the applier thread after commits. A failure here does not undo the write: the next
    /// search and the background pass retry.
    pub(crate) fn follow_after_write(&self) {
        if let Err(e) = self.follow() {
            tracing::warn!(error = %e, "following the change log after a write failed; will retry");
        }
    }

    /// A replica, when Litestream applied something since the last look: reads the copy's
    /// write position, then follows its change log (so everything up to that position is
    /// applied), then tells whoever waits for a position. A primary has no copy to follow.
    /// The look at Litestream's position file is a small read on the calling thread; only a
    /// change goes to the blocking pool.
    pub async fn follow_copy(&self) -> Result<()> {
        let Role::Replica(replica) = self.role() else { return Ok(()) };
        let Some(txid) = replica.copy_changed() else { return Ok(()) };
        self.blocking(move |app| match app.role() {
            Role::Replica(replica) => app.apply_copy(replica, txid),
            Role::Primary(_) => Ok(()),
        })
        .await
    }

    /// `follow_copy` on the calling thread (the background pass).
    pub(crate) fn follow_copy_now(&self) -> Result<()> {
        match self.role() {
            Role::Replica(replica) => match replica.copy_changed() {
                Some(txid) => self.apply_copy(replica, txid),
                None => Ok(()),
            },
            Role::Primary(_) => Ok(()),
        }
    }

    fn apply_copy(&self, replica: &Replica, txid: Option<Vec<u8>>) -> Result<()> {
        let position = crate::store::replica::position(&*self.read()?)?;
        self.follow()?;
        replica.applied(position, txid);
        Ok(())
    }

    pub(crate) fn rebuild_index(&self) -> Result<()> {
        rebuild(&*self.follower()?, &self.index, &mut Progress::silent())?;
        match self.role() {
            Role::Primary(_) => self.write_blocking(|tx| meta::remove(tx, REINDEX_REQUESTED)),
            Role::Replica(_) => Ok(()),
        }
    }

    /// (A replica's index is its own: the primary's requests are not for it.)
    pub(crate) fn rebuild_requested(&self) -> Result<bool> {
        match self.role() {
            Role::Primary(_) => Ok(meta::get(&*self.read()?, REINDEX_REQUESTED)?.is_some()),
            Role::Replica(_) => Ok(false),
        }
    }

    /// At start: rebuild when the index was missing, corrupt or of an older schema, when a
    /// rebuild was asked for, when it was built from another copy of the database (another feed
    /// epoch: a backup restored beside it, whose seqs it would take for its own), or when it holds
    /// changes the database does not (a backup restored in place, or the last writes lost with
    /// the machine: the database would hand out those seqs again, and the index would skip them;
    /// readers may hold cursors of those writes too, so the primary's feed starts a new epoch);
    /// then catch up with whatever was committed to SQLite but never reached the index (a crash
    /// between the two commits).
    pub(crate) fn repair_index(&self) -> Result<()> {
        let database_seq = changes::max_seq(&*self.read()?)?.get();
        let ahead = self.index.applied_seq() > database_seq;
        if ahead {
            tracing::warn!(
                index_seq = self.index.applied_seq(),
                database_seq,
                "the search index holds changes the database does not: rebuilding it"
            );
            if let Role::Primary(_) = self.role() {
                self.write_blocking(changes::draw_new_epoch)?;
            }
        }
        let epoch_file = self.settings.data_dir.join(crate::store::INDEX_EPOCH_FILE);
        let epoch = changes::epoch(&*self.read()?)?;
        let built_from = std::fs::read_to_string(&epoch_file).ok().and_then(|e| e.trim().parse::<u64>().ok());
        // Without the file (an index of the version before), the index is taken as this database's.
        let other_copy = built_from.is_some_and(|e| e != epoch);
        if other_copy {
            tracing::warn!("the search index was built from another copy of the database: rebuilding it");
        }
        if ahead || other_copy || self.index.needs_rebuild() || self.rebuild_requested()? {
            self.rebuild_index()?;
        }
        if built_from != Some(epoch) {
            std::fs::write(&epoch_file, format!("{epoch}\n")).map_err(|e| {
                tracing::error!(error = %e, file = %epoch_file.display(), "cannot write the search index's epoch");
                crate::error::Error::Internal
            })?;
        }
        self.follow()
    }
}
