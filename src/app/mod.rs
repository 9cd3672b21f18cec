//! The app: the one value every adapter holds (REST handlers, the MCP port, the replica's
//! forwarding, the benchmarks), built once at start from named parts — the read side of SQLite, the role, the
//! search index, the meaning model, the caches, the keys, the limits, the settings and the
//! runtime for blocking work — like `AppState(Arc<App>)` in rust-lang/crates.io. Cloning it is
//! one reference count.
//!
//! Every operation adapters call is an `async fn` on [`App`] that they await
//! (`app.own_profile(&caller).await`); the operations live in `crate::service`, one file per
//! aggregate. What blocks (SQLite, argon2, the model, the index) runs on the [`runtime`], inside
//! the core.

pub mod endpoint_queue;
pub mod fetches;
pub mod followers;
pub mod keys;
pub mod limits;
pub mod model;
pub mod needs;
pub mod quick_encoder;
pub mod role;
pub mod runtime;
pub mod settings;
pub mod shares;
pub mod tokens;
pub mod waiting;

use std::ops::Deref;
use std::sync::{Arc, Mutex, Weak};

use agentdir_search_index::SearchIndex;
use rusqlite::Connection;

use crate::derived::cache::Cache;
use crate::derived::vectors::Vectors;
use crate::error::Result;
use crate::store::positions::{ChangeSeq, WritePosition};
use crate::store::wal_index::{CommitStamp, CommitWatch};
use crate::store::{self, Conn, Pool};
use endpoint_queue::EndpointQueue;
use fetches::LinkFetches;
use limits::RateLimits;
use model::{Model, ModelStatus};
use needs::Needs;
pub use role::{Node, Primary, Replica, ReplicaSettings, Role};
use runtime::Runtime;
pub use settings::Settings;
use shares::Shares;
use waiting::Waiting;

/// The directory as served. One cheap clone; see the module docs.
#[derive(Clone)]
pub struct App(Arc<Parts>);

/// What the app is made of, each part named for what it holds.
pub struct Parts {
    /// The read side of SQLite: the pool, the follower's connection, the watcher's, the WAL-index.
    reads: Reads,
    /// Primary (the writer, the signing keys, the write position) or replica (its copy and
    /// its way to the primary), chosen at start.
    role: Role,
    pub(crate) index: SearchIndex,
    /// The meaning model, when loaded (see `model`).
    pub(crate) model: Model,
    /// What each public agent means (see `derived::vectors`).
    pub(crate) vectors: Vectors,
    /// Each client network's fair share of the model's time for reading needs.
    pub(crate) shares: Arc<Shares>,
    /// Needs read lately, with their vectors.
    pub(crate) needs: Needs,
    /// Rendered documents and list items (see `derived::cache`).
    pub(crate) cache: Cache,
    pub(crate) keys: keys::KeyCache,
    pub(crate) limits: RateLimits,
    /// Endpoints just set, waiting for their first check.
    pub(crate) checks: EndpointQueue,
    /// Polls of the agents' inboxes waiting for their next event.
    pub(crate) waiting: Waiting,
    /// Link-proof fetches under way (see `fetches`).
    pub(crate) link_fetches: LinkFetches,
    pub(crate) settings: Settings,
    /// Blocking threads and the permits that bound searches, hashes and embeddings.
    pub(crate) runtime: Runtime,
    /// The data version at which the index and the cache last caught up.
    pub(crate) seen: crate::derived::follow::SeenBy,
}

/// The read side of SQLite.
struct Reads {
    readers: Pool,
    /// The follower's own read connection; holding it is being the one follower at work.
    follower: Mutex<Connection>,
    /// A read connection that only asks SQLite whether anyone committed since it last looked.
    watch: Mutex<Connection>,
    /// The WAL-index header, which tells without asking SQLite that nobody committed since a
    /// look (`store::wal_index`); `None` where it cannot be mapped, and on a replica.
    commits: Option<CommitWatch>,
    /// Reads a copy Litestream rewrites under SQLite (a replica): connections drop their
    /// cached pages before each use (see `store::replica`).
    copy: bool,
}

impl Deref for App {
    type Target = Parts;

    fn deref(&self) -> &Parts {
        &self.0
    }
}

/// The role chosen at start (from `--role`), as `App::open` is given it.
pub enum Start {
    Primary,
    Replica(ReplicaSettings),
}

impl App {
    /// Opens the directory in the role chosen at start. A primary opens the database (applying
    /// migrations) and starts the writer thread; a replica opens the copy `litestream restore
    /// -f` keeps in the data dir read-only (no writer, no migrations). Both open their own
    /// search index and bring it up to date with the database (rebuilding it when it is
    /// missing, corrupt or of an older schema).
    pub fn open(settings: Settings, start: Start) -> anyhow::Result<App> {
        match start {
            Start::Primary => {
                let (write_conn, readers) = store::open_server(&settings.data_dir, settings.read_pool)?;
                let follower = store::open_server_reader(&settings.data_dir)?;
                let watch = store::open_server_reader(&settings.data_dir)?;
                // After the connections: while they hold the database open, the map stays backed.
                let commits = CommitWatch::open(&settings.data_dir);
                if commits.is_none() {
                    tracing::warn!(
                        "the WAL-index cannot be mapped: every cached read asks SQLite whether anything changed"
                    );
                }
                let reads = Reads {
                    readers,
                    follower: Mutex::new(follower),
                    watch: Mutex::new(watch),
                    commits,
                    copy: false,
                };
                let signer = crate::signing::Signer::open(&settings.data_dir)?;
                Self::assemble(settings, reads, |me, written| {
                    let (primary, started) = Primary::start(write_conn, signer, written, me);
                    (Role::Primary(primary), started)
                })
            }
            Start::Replica(replica) => {
                let (readers, follower, watch, copy) =
                    store::replica::open_copy(&settings.data_dir, settings.read_pool)?;
                // Litestream rewrites the copy's pages without SQLite's header (see `store::replica`).
                let reads = Reads {
                    readers,
                    follower: Mutex::new(follower),
                    watch: Mutex::new(watch),
                    commits: None,
                    copy: true,
                };
                let replica = Replica::new(replica, &settings.data_dir, copy)?;
                Self::assemble(settings, reads, |_, _| (Role::Replica(replica), Ok(())))
            }
        }
    }

    fn assemble(
        settings: Settings,
        reads: Reads,
        role: impl FnOnce(Weak<Parts>, WritePosition) -> (Role, std::io::Result<()>),
    ) -> anyhow::Result<App> {
        let index = SearchIndex::open(&settings.data_dir.join(store::INDEX_DIR))
            .map_err(|e| anyhow::anyhow!("cannot open the search index: {e}"))?;
        let limits = RateLimits::new(&settings.rates);
        let runtime = Runtime::new();
        let model = Model::open(&settings.model, &settings.data_dir);
        let shares = Shares::new(runtime.cores(), settings.model.share);
        // An empty cache has nothing to evict for changes older than now.
        let newest: ChangeSeq = store::changes::max_seq(&*reads.readers.get()?)?;
        let written = store::replica::position(&*reads.readers.get()?)?;
        let waiting = Waiting::new(settings.max_waiting, store::events::max_seq(&*reads.readers.get()?)?);
        let link_fetches = LinkFetches::new(settings.link_fetches_at_once);
        let mut started = Ok(());
        let parts = Arc::new_cyclic(|me: &Weak<Parts>| {
            let (role, outcome): (Role, std::io::Result<()>) = role(me.clone(), written);
            started = outcome;
            Parts {
                reads,
                role,
                index,
                model,
                vectors: Vectors::default(),
                shares,
                needs: Needs::default(),
                cache: Cache::new(settings.view_cache_bytes, newest),
                settings,
                keys: keys::KeyCache::default(),
                limits,
                checks: EndpointQueue::default(),
                waiting,
                link_fetches,
                runtime,
                seen: Default::default(),
            }
        });
        started?;
        let app = App(parts);
        app.repair_index()?;
        let threads = app.runtime.cores().min(app.settings.read_pool.connections as usize);
        let before_load = store::changes::max_seq(&*app.read()?)?;
        app.vectors.load(|| app.read(), threads)?;
        crate::derived::follow::reapply_agents_after(&*app.read()?, &app.vectors, before_load)?;
        Ok(app)
    }

    pub(crate) fn upgrade(parts: &Weak<Parts>) -> Option<App> {
        parts.upgrade().map(App)
    }

    pub(crate) fn downgrade(&self) -> Weak<Parts> {
        Arc::downgrade(&self.0)
    }

    /// The role chosen at start.
    pub fn role(&self) -> &Role {
        &self.role
    }

    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// The search index (benchmarks measure it alone).
    pub fn index(&self) -> &SearchIndex {
        &self.index
    }

    /// The meaning model, when loaded.
    pub fn model(&self) -> &Model {
        &self.model
    }

    /// Whether meaning is on, and how many public agents have their vector.
    pub fn model_status(&self) -> ModelStatus {
        self.model.status(&self.vectors)
    }

    /// The networks' shares of the model (benchmarks measure the quick encoder with none).
    pub fn shares(&self) -> &Shares {
        &self.shares
    }

    /// Needs read lately (benchmarks measure with and without them).
    pub fn needs(&self) -> &Needs {
        &self.needs
    }

    /// A read-only connection.
    pub(crate) fn read(&self) -> Result<Conn> {
        let conn = self.reads.readers.get_timeout(self.settings.read_pool.wait)?;
        if self.reads.copy {
            // Litestream rewrites pages of the copy without moving SQLite's change counter, so
            // a page this connection cached earlier may be stale: drop them (`store::replica`).
            conn.release_memory()?;
        }
        Ok(conn)
    }

    /// The pool of read-only connections (for its metrics and readiness).
    pub(crate) fn readers(&self) -> &Pool {
        &self.reads.readers
    }

    /// The follower's connection (see `derived::follow`).
    pub(crate) fn follower(&self) -> Result<std::sync::MutexGuard<'_, Connection>> {
        let conn = self.reads.follower.lock().unwrap_or_else(|e| e.into_inner());
        if self.reads.copy {
            conn.release_memory()?; // see `App::read`
        }
        Ok(conn)
    }

    /// The watcher's connection (see `derived::follow`).
    pub(crate) fn watch(&self) -> std::sync::MutexGuard<'_, Connection> {
        self.reads.watch.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Where the log of commits stands, when the WAL-index tells (see `store::wal_index`).
    pub(crate) fn commits_now(&self) -> Option<CommitStamp> {
        self.reads.commits.as_ref().and_then(CommitWatch::now)
    }

    /// Runs `job` on the writer thread, in the next batch, and returns its value once the batch
    /// is committed and the views it changed are evicted (see `store::writer`). On a replica,
    /// which has no writer, `Overloaded` (its router sends every write to the primary).
    pub(crate) async fn write<T: Send + 'static>(
        &self,
        job: impl FnOnce(&Connection) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        self.role.primary()?.write(job).await
    }

    /// `write` from a blocking thread, for the background passes: nobody waits for their
    /// position, and advancing it would turn an idle server's upkeep into a commit a second.
    pub(crate) fn write_blocking<T: Send + 'static>(
        &self,
        job: impl FnOnce(&Connection) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        self.role.primary()?.writer.write_blocking(job)
    }

    /// The write position after this server's newest write (what `X-Agentdir-Seq` tells); on
    /// a replica, the position its copy holds.
    pub fn written(&self) -> WritePosition {
        match &self.role {
            Role::Primary(primary) => primary.written(),
            Role::Replica(replica) => replica.applied_position(),
        }
    }
}
