//! A replica's view of where it stands: the position of its copy its followers have applied,
//! the positions the primary reported (and since when each is awaited), and the HTTP client
//! that reaches the primary.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde::Serialize;
use tokio::sync::watch;

use super::ReplicaArgs;

/// How often a replica looks at its copy for changes Litestream applied (reading a 17-byte
/// file when nothing changed). Litestream itself applies every 100 ms at best.
pub const COPY_POLL: Duration = Duration::from_millis(20);
/// How often a replica asks the primary for its position (`GET /readyz`).
pub const PRIMARY_POLL: Duration = Duration::from_secs(1);
/// How long the loop's question for the primary's position may take.
const PRIMARY_POLL_TIMEOUT: Duration = Duration::from_secs(5);
/// Primary positions remembered while not yet applied; past it the newest one is overwritten,
/// which can only make the lag look longer, never shorter.
const PENDING_MAX: usize = 1024;

pub const SEQ_BEHIND: &str = "agentdir_replica_seq_behind";
pub const SECONDS_BEHIND: &str = "agentdir_replica_seconds_behind";
pub const APPLIED: &str = "agentdir_replica_applied_seq";
pub const PRIMARY_SEQ: &str = "agentdir_replica_primary_seq";
pub const FORWARDED: &str = "agentdir_replica_forwarded_total";
pub const NOT_CAUGHT_UP: &str = "agentdir_replica_not_caught_up_total";
pub const UNISSUED_POSITIONS: &str = "agentdir_replica_unissued_positions_total";
pub const POSITION_QUESTIONS: &str = "agentdir_replica_position_questions_total";
pub const READS_WAITING: &str = "agentdir_replica_reads_waiting";

pub struct Link {
    pub primary: url::Url,
    pub client: reqwest::Client,
    pub wait: Duration,
    pub stuck_after: Duration,
    /// Litestream's position file next to the copy.
    txid_file: PathBuf,
    /// Its content when the followers last caught up.
    seen_txid: Mutex<Option<Vec<u8>>>,
    applied: watch::Sender<u64>,
    primary_seq: AtomicU64,
    /// Positions the primary reported that are not applied yet, oldest first, with when each
    /// was first heard of.
    pending: Mutex<VecDeque<(u64, Instant)>>,
    /// Questions to the primary for its position that reads waiting on a position started.
    questions_started: AtomicU64,
    /// Held while one such question is out; holds the number of the last one answered.
    question: tokio::sync::Mutex<u64>,
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

impl Link {
    pub fn new(args: &ReplicaArgs, primary: url::Url, data_dir: &std::path::Path) -> anyhow::Result<Link> {
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .connect_timeout(Duration::from_secs(3))
            .redirect(reqwest::redirect::Policy::none())
            .build()?;
        let (_, txid_file) = crate::store::replica::copy_paths(data_dir);
        Ok(Link {
            primary,
            client,
            wait: args.replica_wait,
            stuck_after: args.replica_stuck_after,
            txid_file,
            seen_txid: Mutex::new(None),
            applied: watch::Sender::new(0),
            primary_seq: AtomicU64::new(0),
            pending: Mutex::new(VecDeque::new()),
            questions_started: AtomicU64::new(0),
            question: tokio::sync::Mutex::new(0),
        })
    }

    /// Litestream's position file, when it changed since the followers last caught up (or
    /// cannot be read, which never skips a look at the copy).
    pub fn copy_changed(&self) -> Option<Option<Vec<u8>>> {
        let now = std::fs::read(&self.txid_file).ok();
        let seen = self.seen_txid.lock().unwrap_or_else(|e| e.into_inner());
        (now.is_none() || *seen != now).then_some(now)
    }

    /// The followers applied the copy up to `position`, as it stood when Litestream's position
    /// file read `txid`.
    pub fn applied(&self, position: u64, txid: Option<Vec<u8>>) {
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

    pub fn applied_seq(&self) -> u64 {
        *self.applied.borrow()
    }

    /// The primary is at `position` (from its `/readyz` or a write's answer).
    pub fn primary_at(&self, position: u64) {
        let before = self.primary_seq.fetch_max(position, Ordering::AcqRel);
        if position <= before || position <= self.applied_seq() {
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

    /// Whether the primary issued `position`: at or below the newest position it reported, else
    /// at or below its position now. All reads that ask at once share one question, and each
    /// is answered by a question that started after it arrived, so a position the primary
    /// issued a moment ago is never mistaken for a made-up one. When the primary cannot be
    /// asked, only positions it reported before count.
    pub async fn issued(&self, position: u64) -> bool {
        if position <= self.primary_seq.load(Ordering::Acquire) {
            return true;
        }
        let arrived_after = self.questions_started.load(Ordering::Acquire);
        let mut last_answered = self.question.lock().await;
        if *last_answered <= arrived_after {
            let number = self.questions_started.fetch_add(1, Ordering::AcqRel) + 1;
            metrics::counter!(POSITION_QUESTIONS).increment(1);
            if let Err(e) = self.poll_primary(self.wait).await {
                tracing::debug!(error = %e, "the primary did not tell its position");
            }
            *last_answered = number;
        }
        position <= self.primary_seq.load(Ordering::Acquire)
    }

    /// Waits (at most the configured wait) until the followers applied `position`.
    pub async fn wait_for(&self, position: u64) -> bool {
        let mut applied = self.applied.subscribe();
        tokio::time::timeout(self.wait, applied.wait_for(|a| *a >= position)).await.is_ok_and(|r| r.is_ok())
    }

    pub fn lag(&self) -> Lag {
        let applied_seq = self.applied_seq();
        let primary_seq = self.primary_seq.load(Ordering::Acquire);
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

    pub fn record_metrics(&self) -> Lag {
        let lag = self.lag();
        metrics::gauge!(SEQ_BEHIND).set(lag.seq_behind as f64);
        metrics::gauge!(SECONDS_BEHIND).set(lag.seconds_behind);
        metrics::gauge!(APPLIED).set(lag.applied_seq as f64);
        metrics::gauge!(PRIMARY_SEQ).set(lag.primary_seq as f64);
        lag
    }

    /// Asks the primary for its position.
    async fn poll_primary(&self, timeout: Duration) -> anyhow::Result<()> {
        #[derive(serde::Deserialize)]
        struct Ready {
            seq: u64,
        }
        let url = self.primary.join("/readyz")?;
        let res = self.client.get(url).timeout(timeout).send().await?.error_for_status()?;
        let ready: Ready = serde_json::from_slice(&res.bytes().await?)?;
        self.primary_at(ready.seq);
        Ok(())
    }
}

/// The replica's own loop: apply what Litestream brought every [`COPY_POLL`], ask the primary
/// for its position every [`PRIMARY_POLL`].
pub async fn run(app: crate::service::App) {
    let Some(link) = app.replica.as_ref() else { return };
    let poller = {
        let app = app.clone();
        tokio::spawn(async move {
            let Some(link) = app.replica.as_ref() else { return };
            let mut tick = tokio::time::interval(PRIMARY_POLL);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                if let Err(e) = link.poll_primary(PRIMARY_POLL_TIMEOUT).await {
                    tracing::debug!(error = %e, "the primary did not tell its position");
                }
                if link.record_metrics().stuck {
                    tracing::warn!(
                        "replica stuck: its copy stopped following the primary; restore a fresh copy"
                    );
                }
            }
        })
    };
    let mut tick = tokio::time::interval(COPY_POLL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        if link.copy_changed().is_none() {
            continue;
        }
        if let Err(e) = app.run(|d| d.replica.as_ref().map_or(Ok(()), |link| catch_up(d, link))).await {
            tracing::warn!(error = %e, "following the copy failed; will retry");
        }
        if poller.is_finished() {
            return;
        }
    }
}

/// A replica's catch-up (its loop and background pass): when Litestream applied something since the last look,
/// read the copy's write position, then follow its change log (so everything up to that
/// position is applied), then publish the position to whoever waits for it.
pub fn catch_up(d: &crate::service::Directory, link: &Link) -> crate::error::Result<()> {
    let Some(txid) = link.copy_changed() else { return Ok(()) };
    let position = crate::store::replica::position(&*d.read()?)?;
    d.follow()?;
    link.applied(position, txid);
    Ok(())
}
