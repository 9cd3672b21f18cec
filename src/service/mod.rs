//! The operations of the directory — register, post a call, send a request, accept, confirm… —
//! with their validation, authorization, state transitions and transactions. REST and MCP both
//! call these; nothing here knows about HTTP.
//!
//! Every operation is blocking (SQLite, argon2, the index writer): adapters run them with
//! `Directory::run`, which moves them off the async threads.

pub mod admin;
pub mod agents;
pub mod calls;
pub mod changes;
pub mod collabs;
pub mod deletion;
pub mod endpoint_checks;
pub mod endpoints;
pub mod export;
pub mod finding;
pub mod follow;
pub mod handles;
pub mod health;
pub mod inbound;
pub mod keys;
pub mod meaning;
pub mod proofs;
pub mod rate_limit;
pub mod recovery;
pub mod requests;
pub mod statements;
pub mod stats;
pub mod tokens;
pub mod trust;
pub mod views;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use agentdir_search_index::SearchIndex;
use rusqlite::Connection;

use crate::error::{Error, Result};
use crate::store::writer::Writer;
use crate::store::{self, Conn, Pool};
use rate_limit::{RateLimits, RateSettings};

/// Settings of the core (the CLI fills them from flags and environment).
#[derive(Debug, Clone)]
pub struct Settings {
    pub data_dir: PathBuf,
    pub base_url: String,
    pub mail_domain: String,
    pub mail_authserv_id: String,
    pub rates: RateSettings,
    pub link_fetch_allow_private: crate::link_fetch::PrivateTargets,
    /// Peers whose `X-Forwarded-For` is believed.
    pub trusted_proxies: Vec<ipnet::IpNet>,
    /// Read-only SQLite connections of the server and how long a read waits for one.
    pub read_pool: store::ReadPool,
    /// How long the change feed remembers deletions, in milliseconds.
    pub changes_retention_ms: i64,
    /// Memory for rendered documents and list items, in bytes.
    pub view_cache_bytes: usize,
    /// Handles refused at registration and rename.
    pub reserved_handles: crate::domain::handles::ReservedHandles,
    /// How often listed endpoints are checked again (jittered).
    pub endpoint_check_interval: std::time::Duration,
    /// Search by meaning: the mode and where the model is.
    pub meaning: crate::meaning::MeaningSettings,
}

/// Who is calling: an authenticated, not suspended agent.
#[derive(Debug, Clone)]
pub struct Caller {
    pub id: i64,
    pub handle: String,
    /// The key id the caller authenticated with (a rotation must still find it current).
    pub key_id: String,
}

/// The directory: database, search index, key cache and limits. Cheap to share as `Arc`.
pub struct Directory {
    readers: Pool,
    writer: Writer,
    pub index: SearchIndex,
    /// The meaning model and what each public agent means (see `crate::meaning`).
    pub meaning: crate::meaning::Meaning,
    pub settings: Settings,
    pub keys: keys::KeyCache,
    pub limits: RateLimits,
    /// The follower's own read connection; holding it is being the one follower at work.
    follower: Mutex<Connection>,
    /// Rendered documents and list items (see `crate::derived`).
    pub derived: crate::derived::Derived,
    /// A read connection that only asks SQLite whether anyone committed since it last looked.
    watch: Mutex<Connection>,
    /// Its `data_version` when the index last caught up.
    seen_by_index: std::sync::atomic::AtomicI64,
    /// Its `data_version` when the views last caught up.
    seen_by_views: std::sync::atomic::AtomicI64,
    /// Searches running at once (see [`SEARCHES_PER_CORE`]).
    search_permits: tokio::sync::Semaphore,
    /// New keys hashed at once: one per core (see `Directory::new_key`).
    hash_permits: tokio::sync::Semaphore,
    /// Profiles embedded at once: one per core (see `Directory::embed_profile`).
    embed_permits: tokio::sync::Semaphore,
    /// The write position after the newest write of this server (see `store::replica`).
    written: std::sync::atomic::AtomicU64,
    /// Set when this server is a read replica: its copy, its lag, its way to the primary.
    pub replica: Option<crate::replica::Link>,
    /// Endpoints just set, waiting for their first check (see `endpoint_checks`).
    pub checks: endpoint_checks::Queue,
    /// The statement signing keys; a primary's only (a replica forwards the statement routes).
    signer: Option<crate::signing::Signer>,
}

pub type App = Arc<Directory>;

impl Directory {
    /// Opens the database (applying migrations), starts the writer thread, opens the search
    /// index and brings it up to date with the database (rebuilding it when it is missing,
    /// corrupt or of an older schema).
    pub fn open(settings: Settings) -> anyhow::Result<App> {
        let (write_conn, readers) = store::open_server(&settings.data_dir, settings.read_pool)?;
        let follower = store::open_server_reader(&settings.data_dir)?;
        let watch = store::open_server_reader(&settings.data_dir)?;
        Self::assemble(settings, readers, follower, watch, Some(write_conn), None)
    }

    /// Opens a read replica over the copy `litestream restore -f` keeps in the data dir: no
    /// writer thread, no migrations, read-only connections; its own search index and caches.
    pub fn open_replica(settings: Settings, link: crate::replica::Link) -> anyhow::Result<App> {
        let (readers, follower, watch) = store::replica::open_copy(&settings.data_dir, settings.read_pool)?;
        Self::assemble(settings, readers, follower, watch, None, Some(link))
    }

    fn assemble(
        settings: Settings,
        readers: Pool,
        follower: Connection,
        watch: Connection,
        write_conn: Option<Connection>,
        replica: Option<crate::replica::Link>,
    ) -> anyhow::Result<App> {
        let index = SearchIndex::open(&settings.data_dir.join("search-index"))
            .map_err(|e| anyhow::anyhow!("cannot open the search index: {e}"))?;
        let limits = RateLimits::new(&settings.rates);
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        let meaning = crate::meaning::Meaning::open(&settings.meaning, cores);
        let written = store::replica::position(&*readers.get()?)?;
        // An empty cache has nothing to evict for changes older than now.
        let newest = store::changes::max_seq(&*readers.get()?)?;
        let signer = match write_conn {
            Some(_) => Some(crate::signing::Signer::open(&settings.data_dir)?),
            None => None,
        };
        let mut started = Ok(());
        let dir = Arc::new_cyclic(|me: &std::sync::Weak<Directory>| {
            let (me, me_too) = (me.clone(), me.clone());
            let on_commit = Box::new(move |conn: &Connection, seq: u64| {
                if let Some(dir) = me.upgrade() {
                    dir.evict_after_write(conn, seq);
                }
            });
            let after_commit = Box::new(move |_seq: u64| {
                if let Some(dir) = me_too.upgrade() {
                    dir.follow_after_write();
                }
            });
            let writer = match write_conn {
                Some(conn) => Writer::start(conn, on_commit, after_commit).unwrap_or_else(|e| {
                    started = Err(e);
                    Writer::stopped()
                }),
                None => Writer::stopped(),
            };
            Directory {
                readers,
                writer,
                index,
                meaning,
                derived: crate::derived::Derived::new(settings.view_cache_bytes, newest),
                settings,
                keys: keys::KeyCache::default(),
                limits,
                follower: Mutex::new(follower),
                watch: Mutex::new(watch),
                seen_by_index: std::sync::atomic::AtomicI64::new(i64::MIN),
                seen_by_views: std::sync::atomic::AtomicI64::new(i64::MIN),
                search_permits: tokio::sync::Semaphore::new(SEARCHES_PER_CORE * cores),
                hash_permits: tokio::sync::Semaphore::new(cores),
                embed_permits: tokio::sync::Semaphore::new(cores),
                written: std::sync::atomic::AtomicU64::new(written),
                replica,
                checks: endpoint_checks::Queue::default(),
                signer,
            }
        });
        started?;
        dir.repair_index()?;
        dir.load_meaning()?;
        Ok(dir)
    }

    /// A read-only connection.
    pub fn read(&self) -> Result<Conn> {
        let conn = self.readers.get()?;
        if self.replica.is_some() {
            // Litestream rewrites pages of the copy without moving SQLite's change counter, so
            // a page this connection cached earlier may be stale: drop them (`store::replica`).
            conn.release_memory()?;
        }
        Ok(conn)
    }

    /// The pool of read-only connections (for its metrics).
    pub fn readers(&self) -> &Pool {
        &self.readers
    }

    /// Runs `job` on the writer thread, in the next batch, and returns its value once the batch
    /// is committed and the views it changed are evicted (see `store::writer`).
    pub async fn write<T: Send + 'static>(
        &self,
        job: impl FnOnce(&Connection) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        let (out, position) = self.writer.write(positioned(job)).await?;
        self.written.fetch_max(position, std::sync::atomic::Ordering::AcqRel);
        Ok(out)
    }

    /// `write` from a blocking thread.
    pub fn write_blocking<T: Send + 'static>(
        &self,
        job: impl FnOnce(&Connection) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        // Only the background passes write from blocking threads: nobody waits for their
        // position, and advancing it would turn an idle server's upkeep into a commit a second.
        self.writer.write_blocking(job)
    }

    /// The write position after this server's newest write (what `X-Agentdir-Seq` tells).
    pub fn written(&self) -> u64 {
        self.written.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Runs a blocking operation on the blocking thread pool.
    pub async fn run<T, F>(self: &Arc<Self>, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&Directory) -> Result<T> + Send + 'static,
    {
        let dir = self.clone();
        // Keep the caller's span (the request id), so what the operation logs can be traced back.
        let span = tracing::Span::current();
        tokio::task::spawn_blocking(move || span.in_scope(|| f(&dir))).await.unwrap_or_else(|e| {
            tracing::error!(error = %e, "blocking task failed");
            Err(Error::Internal)
        })
    }
}

/// A write job that also advances the write position, so replicas can tell when their copy
/// holds it (and a client that wrote can ask for it); a job that fails is rolled back with its
/// advance.
fn positioned<T>(
    job: impl FnOnce(&Connection) -> Result<T> + Send + 'static,
) -> impl FnOnce(&Connection) -> Result<(T, u64)> + Send + 'static {
    move |tx| {
        let out = job(tx)?;
        Ok((out, store::replica::advance(tx)?))
    }
}

/// Searches admitted at once per core. A search is pure CPU (index walk, then SQLite
/// hydration); without a bound the blocking pool runs as many at once as there are clients, and
/// sixteen searches sharing two cores each take eight times longer and contend on SQLite's
/// process-wide mutexes. Queued in arrival order instead, each runs at full speed once admitted.
/// One per core left a core idle each time a permit changed hands; two kept both busy. In the
/// search benchmark (16 clients, 2 cores) the bound cut the p99 of agent searches from ~50 ms to
/// ~19 ms with the index's result cache off and from ~13 ms to ~6 ms with it on.
const SEARCHES_PER_CORE: usize = 2;

impl Directory {
    /// Runs a search on the blocking pool once one of the search permits is free. The permits
    /// are handed out in arrival order (tokio's semaphore is fair).
    pub async fn search<T, F>(self: &Arc<Self>, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&Directory) -> Result<T> + Send + 'static,
    {
        let _permit = self.search_permits.acquire().await.map_err(|_| Error::Overloaded)?;
        self.run(f).await
    }
}

impl Directory {
    /// Upkeep once a minute (and at start): forget rate events older than any window looks
    /// back, erase the agents deleted longer ago than the undo time, forget ended handle holds.
    pub fn housekeeping(&self) -> Result<()> {
        let before = crate::time::now_ms() - self.limits.longest_window_ms();
        // A replica keeps no rate events of its own: the primary checks every write. It
        // erases nothing either: it follows the primary's erasures.
        if self.replica.is_none() {
            let now = crate::time::now_ms();
            self.write_blocking(move |tx| {
                store::rate::prune(tx, before)?;
                store::recoveries::prune(tx, now)?;
                store::holds::forget_ended(tx, now).map(|_| ())
            })?;
            self.erase_deleted()?;
        }
        self.limits.shrink();
        Ok(())
    }
}
