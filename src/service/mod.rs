//! The operations of the directory — register, post a call, send a request, accept, confirm… —
//! with their validation, authorization, state transitions and transactions. REST and MCP both
//! call these; nothing here knows about HTTP.
//!
//! Every operation is blocking (SQLite, argon2, the index writer): adapters run them with
//! `Directory::run`, which moves them off the async threads.

pub mod admin;
pub mod agents;
pub mod calls;
pub mod collabs;
pub mod inbound;
pub mod index_sync;
pub mod keys;
pub mod proofs;
pub mod rate_limit;
pub mod requests;
pub mod stats;
pub mod trust;
pub mod views;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use agentdir_search_index::SearchIndex;

use crate::error::{Error, Result};
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
    pub link_fetch_allow_private: crate::config::PrivateTargets,
    /// Peers whose `X-Forwarded-For` is believed.
    pub trusted_proxies: Vec<ipnet::IpNet>,
    pub max_connections: u32,
}

/// Who is calling: an authenticated, not suspended agent.
#[derive(Debug, Clone)]
pub struct Caller {
    pub id: i64,
    pub handle: String,
}

/// The directory: database, search index, key cache and limits. Cheap to share as `Arc`.
pub struct Directory {
    pub pool: Pool,
    pub index: SearchIndex,
    pub settings: Settings,
    pub keys: keys::KeyCache,
    pub limits: RateLimits,
    sync_lock: Mutex<()>,
}

pub type App = Arc<Directory>;

impl Directory {
    /// Opens the database (applying migrations) and the search index, and brings the index up to
    /// date with the database (rebuilding it when it is missing, corrupt or of an older schema).
    pub fn open(settings: Settings) -> anyhow::Result<App> {
        let pool = store::open(&settings.data_dir, settings.max_connections)?;
        let index = SearchIndex::open(&settings.data_dir.join("search-index"))
            .map_err(|e| anyhow::anyhow!("cannot open the search index: {e}"))?;
        let limits = RateLimits::new(&settings.rates);
        let dir = Arc::new(Directory {
            pool,
            index,
            settings,
            keys: keys::KeyCache::default(),
            limits,
            sync_lock: Mutex::new(()),
        });
        dir.repair_index()?;
        Ok(dir)
    }

    pub fn conn(&self) -> Result<Conn> {
        Ok(self.pool.get()?)
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

impl Directory {
    /// Hourly-ish upkeep: forget rate events older than any window looks back.
    pub fn housekeeping(&self) -> Result<()> {
        let before = crate::time::now_ms() - self.limits.longest_window_ms();
        store::write(&mut *self.conn()?, |tx| store::rate::prune(tx, before).map(|_| ()))?;
        self.limits.shrink();
        Ok(())
    }
}
