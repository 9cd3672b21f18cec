//! The role of this server, chosen once at start and handed to the parts that differ.
//!
//! A primary owns the database: the writer thread, the statement signing keys and the write
//! position its writes advance. A replica reads a copy Litestream keeps (`store::replica`) and
//! knows where that copy stands against the primary: the write position its followers applied,
//! the positions the primary reported and since when each is awaited. The replica adapter
//! (`crate::replica`) fills those positions in (from the primary's answers and its `/readyz`)
//! and forwards writes; the core reads them.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, Weak};
use std::time::{Duration, Instant};

use rusqlite::Connection;
use serde::Serialize;
use tokio::sync::watch;

use super::{App, Parts};
use crate::error::{Error, Result};
use crate::signing::Signer;
use crate::store::positions::{ChangeSeq, WritePosition};
use crate::store::replica::CopyIdentity;
use crate::store::writer::Writer;
use crate::telemetry;

pub enum Role {
    Primary(Primary),
    Replica(Replica),
}

impl Role {
    /// The primary's parts, or `Overloaded` on a replica (its router sends every write and
    /// every route that needs a key to the primary, so a core write there is a routing fault).
    pub(crate) fn primary(&self) -> Result<&Primary> {
        match self {
            Role::Primary(primary) => Ok(primary),
            Role::Replica(_) => Err(Error::Overloaded),
        }
    }

    pub fn replica(&self) -> Option<&Replica> {
        match self {
            Role::Primary(_) => None,
            Role::Replica(replica) => Some(replica),
        }
    }
}

/// Which node answers a route when the directory runs with read replicas.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Node {
    /// A public read: the node the client reached answers it from its own copy.
    Any,
    /// A write, or a route that needs a key: a replica forwards it, so a rotated key is dead on
    /// every node at once and every write has one home.
    Primary,
}

/// What only a primary has.
pub struct Primary {
    pub(crate) writer: Writer,
    pub(crate) signer: Signer,
    /// The write position after the newest write of this server.
    written: AtomicU64,
}

impl Primary {
    /// Starts the writer thread over `conn`; its hooks keep the caches and the followers of
    /// `app` in line with each commit. When the thread cannot start, the writer refuses every
    /// job and the error says why.
    pub(super) fn start(
        conn: Connection,
        signer: Signer,
        written: WritePosition,
        app: Weak<Parts>,
    ) -> (Primary, std::io::Result<()>) {
        let also = app.clone();
        let on_commit = Box::new(move |conn: &Connection, seq: ChangeSeq| {
            if let Some(app) = App::upgrade(&app) {
                app.evict_after_write(conn, seq);
            }
        });
        let after_commit = Box::new(move |_seq: ChangeSeq| {
            if let Some(app) = App::upgrade(&also) {
                app.follow_after_write();
            }
        });
        let (writer, started) = match Writer::start(conn, on_commit, after_commit) {
            Ok(writer) => (writer, Ok(())),
            Err(e) => (Writer::stopped(), Err(e)),
        };
        (Primary { writer, signer, written: AtomicU64::new(written.get()) }, started)
    }

    pub fn written(&self) -> WritePosition {
        WritePosition::new(self.written.load(Ordering::Acquire))
    }

    /// Runs `job` in the writer's next batch with an advance of the write position, so
    /// replicas can tell when their copy holds it (and a client that wrote can ask for it); a
    /// job that fails is rolled back with its advance.
    pub(crate) async fn write<T: Send + 'static>(
        &self,
        job: impl FnOnce(&Connection) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        let (out, position) = self
            .writer
            .write(move |tx| {
                let out = job(tx)?;
                Ok((out, crate::store::replica::advance(tx)?))
            })
            .await?;
        self.written.fetch_max(position.get(), Ordering::AcqRel);
        Ok(out)
    }
}

/// A replica's flags (from `--primary-url` and the `--replica-…` flags).
pub struct ReplicaSettings {
    pub primary: url::Url,
    /// How long a read or a forwarded write waits for the copy to reach a position.
    pub wait: Duration,
    /// Behind a position the primary reported for longer than this: stuck.
    pub stuck_after: Duration,
    /// What a forwarded request has to be answered in: the request timeout less a second, so
    /// the primary's answer to a write is passed on (with `X-Agentdir-Caught-Up: false` when no
    /// time is left to wait for the copy) rather than overtaken by the replica's own 504.
    pub answer_within: Duration,
}

/// How long a replica waits for the primary's answer to a forwarded request. It outlasts the
/// longest wait of a forwarded long poll (`GET /api/me/events?wait=`), which the primary answers
/// at the end of its wait at the latest, so the replica waits as long as the primary does.
pub const FORWARD_TIMEOUT: Duration = Duration::from_secs(30);
const _: () = assert!(FORWARD_TIMEOUT.as_secs() > crate::domain::events::MAX_WAIT_SECONDS as u64 + 2);

/// Primary positions remembered while not yet applied; past it the newest one is overwritten,
/// which can only make the lag look longer, never shorter.
const PENDING_MAX: usize = 1024;

/// What only a replica has: its way to the primary and where its copy stands.
pub struct Replica {
    pub primary: url::Url,
    pub client: reqwest::Client,
    pub wait: Duration,
    /// See [`ReplicaSettings::answer_within`].
    pub answer_within: Duration,
    stuck_after: Duration,
    /// Litestream's position file next to the copy.
    txid_file: PathBuf,
    /// The copy, and which file of that name this server opened.
    copy_file: PathBuf,
    opened: CopyIdentity,
    /// Its content when the followers last caught up.
    seen_txid: Mutex<Option<Vec<u8>>>,
    applied: watch::Sender<u64>,
    primary_position: AtomicU64,
    /// Positions the primary reported that are not applied yet, oldest first, with when each
    /// was first heard of.
    pending: Mutex<VecDeque<(u64, Instant)>>,
    /// Questions to the primary for its position that reads waiting on a position started
    /// (asked by `replica::link::issued`).
    pub(crate) questions_started: AtomicU64,
    /// Held while one such question is out; holds the number of the last one answered.
    pub(crate) question: tokio::sync::Mutex<u64>,
}

/// Where a replica stands, for `/readyz` and `/metrics`.
#[derive(Debug, Clone, Serialize)]
pub struct Lag {
    /// The write position of the copy, applied by the followers.
    pub applied_seq: u64,
    /// The newest write position the primary reported.
    pub primary_seq: u64,
    pub seq_behind: u64,
    /// How long the oldest position the primary reported and the copy lacks has been awaited.
    pub seconds_behind: f64,
    /// Behind for longer than the stuck threshold: the Litestream follower is not applying.
    pub stuck: bool,
}

impl Replica {
    pub(super) fn new(
        settings: ReplicaSettings,
        data_dir: &Path,
        opened: CopyIdentity,
    ) -> anyhow::Result<Replica> {
        // Straight to the primary: a proxy named in the environment for other tools must not
        // carry the forwarded requests, API keys and all.
        let client = reqwest::Client::builder()
            .timeout(FORWARD_TIMEOUT)
            .connect_timeout(Duration::from_secs(3))
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .build()?;
        let (copy_file, txid_file) = crate::store::replica::copy_paths(data_dir);
        Ok(Replica {
            primary: settings.primary,
            client,
            wait: settings.wait,
            answer_within: settings.answer_within,
            stuck_after: settings.stuck_after,
            txid_file,
            copy_file,
            opened,
            seen_txid: Mutex::new(None),
            applied: watch::Sender::new(0),
            primary_position: AtomicU64::new(0),
            pending: Mutex::new(VecDeque::new()),
            questions_started: AtomicU64::new(0),
            question: tokio::sync::Mutex::new(0),
        })
    }

    /// Whether the copy's file is no longer the one this server opened: its follower wiped it
    /// and restored a new one (a restart of the follower alone), so what this server reads is
    /// never updated again.
    pub fn copy_replaced(&self) -> bool {
        CopyIdentity::of(&self.copy_file).is_some_and(|now| now != self.opened)
    }

    /// Litestream's position file, when it changed since the followers last caught up (or
    /// cannot be read, which never skips a look at the copy).
    pub(crate) fn copy_changed(&self) -> Option<Option<Vec<u8>>> {
        let now = std::fs::read(&self.txid_file).ok();
        let seen = self.seen_txid.lock().unwrap_or_else(|e| e.into_inner());
        (now.is_none() || *seen != now).then_some(now)
    }

    /// The followers applied the copy up to `position`, as it stood when Litestream's position
    /// file read `txid`.
    pub(crate) fn applied(&self, position: WritePosition, txid: Option<Vec<u8>>) {
        let position = position.get();
        *self.seen_txid.lock().unwrap_or_else(|e| e.into_inner()) = txid;
        self.applied.send_if_modified(|a| {
            let moved = position > *a;
            *a = (*a).max(position);
            moved
        });
        let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        while pending.front().is_some_and(|(p, _)| *p <= position) {
            pending.pop_front();
        }
    }

    /// The write position of the copy, applied by the followers.
    pub fn applied_position(&self) -> WritePosition {
        WritePosition::new(*self.applied.borrow())
    }

    /// The newest write position the primary reported.
    pub fn primary_position(&self) -> WritePosition {
        WritePosition::new(self.primary_position.load(Ordering::Acquire))
    }

    /// The primary is at `position` (from its `/readyz` or a write's answer).
    pub fn primary_at(&self, position: WritePosition) {
        let position = position.get();
        let before = self.primary_position.fetch_max(position, Ordering::AcqRel);
        if position <= before || position <= self.applied_position().get() {
            return;
        }
        let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        if pending.len() >= PENDING_MAX
            && let Some(newest) = pending.back_mut()
        {
            newest.0 = newest.0.max(position);
            return;
        }
        pending.push_back((position, Instant::now()));
    }

    /// Waits (at most the configured wait) until the followers applied `position`.
    pub async fn wait_for(&self, position: WritePosition) -> bool {
        self.wait_for_within(position, self.wait).await
    }

    /// As [`Replica::wait_for`], for at most `at_most` (and never longer than the replica wait).
    pub async fn wait_for_within(&self, position: WritePosition, at_most: Duration) -> bool {
        let mut applied = self.applied.subscribe();
        tokio::time::timeout(self.wait.min(at_most), applied.wait_for(|a| *a >= position.get()))
            .await
            .is_ok_and(|r| r.is_ok())
    }

    /// Publishes where the replica stands in `/metrics`; tells whether it is stuck.
    pub fn record_metrics(&self) -> bool {
        let lag = self.lag();
        telemetry::replica_stands(lag.seq_behind, lag.seconds_behind, lag.applied_seq, lag.primary_seq);
        lag.stuck
    }

    pub fn lag(&self) -> Lag {
        let applied_seq = self.applied_position().get();
        let primary_seq = self.primary_position().get();
        let oldest = self.pending.lock().unwrap_or_else(|e| e.into_inner()).front().map(|(_, t)| *t);
        let behind = oldest.map_or(Duration::ZERO, |t| t.elapsed());
        Lag {
            applied_seq,
            primary_seq,
            seq_behind: primary_seq.saturating_sub(applied_seq),
            seconds_behind: behind.as_secs_f64(),
            stuck: behind > self.stuck_after,
        }
    }
}
