//! Where blocking work runs: SQLite reads, argon2, the model and the index run on tokio's
//! blocking threads, never on the async ones, each kind of CPU-heavy work bounded by permits
//! handed out in arrival order (tokio's semaphore is fair). Only the core calls these; adapters
//! await the operations of [`App`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::{OwnedMutexGuard, Semaphore};

use super::App;
use crate::error::{Error, Result};

/// Searches admitted at once per core. A search is pure CPU (index walk, then SQLite
/// hydration); without a bound the blocking pool runs as many at once as there are clients, and
/// sixteen searches sharing two cores each take eight times longer and contend on SQLite's
/// process-wide mutexes. Queued in arrival order instead, each runs at full speed once admitted.
/// One per core left a core idle each time a permit changed hands; two kept both busy. In the
/// search benchmark (16 clients, 2 cores) the bound cut the p99 of agent searches from ~50 ms to
/// ~19 ms with the index's result cache off and from ~13 ms to ~6 ms with it on.
const SEARCHES_PER_CORE: usize = 2;

/// The permits of the blocking work.
pub struct Runtime {
    cores: usize,
    /// Searches running at once (see [`SEARCHES_PER_CORE`]).
    searches: Semaphore,
    /// argon2 runs at once (a new key's hash, a key check): one per core. A run is 12 ms of CPU
    /// and 19 MiB of memory: a burst hashed all at once shares two cores among dozens of runs,
    /// each touching fresh memory, and every one of them finishes late.
    hashes: Semaphore,
    /// Profiles embedded at once: one per core.
    embeddings: Semaphore,
    /// The agents whose profile write is under way (see [`App::profile_turn`]).
    profile_turns: Arc<Mutex<HashMap<i64, Arc<tokio::sync::Mutex<()>>>>>,
}

impl Runtime {
    pub(super) fn new() -> Runtime {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        Runtime {
            cores,
            searches: Semaphore::new(SEARCHES_PER_CORE * cores),
            hashes: Semaphore::new(cores),
            embeddings: Semaphore::new(cores),
            profile_turns: Arc::default(),
        }
    }

    pub(super) fn cores(&self) -> usize {
        self.cores
    }
}

/// A kind of bounded blocking work.
#[derive(Clone, Copy)]
pub(crate) enum Bound {
    Search,
    Hash,
    Embed,
}

impl App {
    /// Runs `job` on the blocking thread pool, in the caller's span (the request id), so what
    /// it logs can be traced back.
    pub(crate) async fn blocking<T, F>(&self, job: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&App) -> Result<T> + Send + 'static,
    {
        let app = self.clone();
        let span = tracing::Span::current();
        tokio::task::spawn_blocking(move || span.in_scope(|| job(&app))).await.unwrap_or_else(|e| {
            tracing::error!(error = %e, "blocking task failed");
            Err(Error::Internal)
        })
    }

    /// `blocking` once one of the permits of `bound` is free.
    pub(crate) async fn bounded<T, F>(&self, bound: Bound, job: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&App) -> Result<T> + Send + 'static,
    {
        let permits = match bound {
            Bound::Search => &self.runtime.searches,
            Bound::Hash => &self.runtime.hashes,
            Bound::Embed => &self.runtime.embeddings,
        };
        let _permit = permits.acquire().await.map_err(|_| Error::Overloaded)?;
        self.blocking(job).await
    }
}

/// One agent's turn to write its profile; the next of its writes starts when this is dropped.
pub(crate) struct ProfileTurn {
    agent: i64,
    turns: Arc<Mutex<HashMap<i64, Arc<tokio::sync::Mutex<()>>>>>,
    held: Option<OwnedMutexGuard<()>>,
}

impl Drop for ProfileTurn {
    fn drop(&mut self) {
        let mut turns = self.turns.lock().unwrap_or_else(|e| e.into_inner());
        self.held = None;
        // Waiters clone the lock under `turns`: with only the map's clone left, nobody waits.
        if turns.get(&self.agent).is_some_and(|lock| Arc::strong_count(lock) == 1) {
            turns.remove(&self.agent);
        }
    }
}

impl App {
    /// Waits until no other profile write of `agent` is under way. A profile write that
    /// changes what the profile means holds one embedding permit for up to a second; taking
    /// turns before the permit keeps one agent to one permit however many writes it sends at
    /// once, so the others' writes find the rest free. The waiting writes hold no permit.
    pub(crate) async fn profile_turn(&self, agent: i64) -> ProfileTurn {
        let turns = self.runtime.profile_turns.clone();
        let lock = turns.lock().unwrap_or_else(|e| e.into_inner()).entry(agent).or_default().clone();
        let held = lock.lock_owned().await;
        ProfileTurn { agent, turns, held: Some(held) }
    }
}
