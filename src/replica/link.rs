//! A replica's link to the primary: its loop (look at the copy Litestream keeps, ask the
//! primary for its position), the question whether the primary issued a position a client
//! carries, and the replica's metrics. Where the copy stands is the core's
//! (`app::role::Replica`); this module fills in what the primary reports.

use std::sync::atomic::Ordering;
use std::time::Duration;

use crate::app::{App, Replica};
use crate::store::positions::WritePosition;

/// How often a replica looks at its copy for changes Litestream applied (reading a 17-byte
/// file when nothing changed). Litestream itself applies every 100 ms at best.
pub const COPY_POLL: Duration = Duration::from_millis(20);
/// How often a replica asks the primary for its position (`GET /readyz`).
pub const PRIMARY_POLL: Duration = Duration::from_secs(1);
/// How long the loop's question for the primary's position may take.
const PRIMARY_POLL_TIMEOUT: Duration = Duration::from_secs(5);

pub const FORWARDED: &str = "agentdir_replica_forwarded_total";
pub const NOT_CAUGHT_UP: &str = "agentdir_replica_not_caught_up_total";
pub const UNISSUED_POSITIONS: &str = "agentdir_replica_unissued_positions_total";
pub const POSITION_QUESTIONS: &str = "agentdir_replica_position_questions_total";
pub const READS_WAITING: &str = "agentdir_replica_reads_waiting";

/// Whether the primary issued `position`: at or below the newest position it reported, else
/// at or below its position now. All reads that ask at once share one question, and each is
/// answered by a question that started after it arrived, so a position the primary issued a
/// moment ago is never mistaken for a made-up one. When the primary cannot be asked, only
/// positions it reported before count.
pub async fn issued(replica: &Replica, position: WritePosition) -> bool {
    if position <= replica.primary_position() {
        return true;
    }
    let arrived_after = replica.questions_started.load(Ordering::Acquire);
    let mut last_answered = replica.question.lock().await;
    if *last_answered <= arrived_after {
        let number = replica.questions_started.fetch_add(1, Ordering::AcqRel) + 1;
        metrics::counter!(POSITION_QUESTIONS).increment(1);
        if let Err(e) = poll_primary(replica, replica.wait).await {
            tracing::debug!(error = %e, "the primary did not tell its position");
        }
        *last_answered = number;
    }
    position <= replica.primary_position()
}

/// Asks the primary for its position.
async fn poll_primary(replica: &Replica, timeout: Duration) -> anyhow::Result<()> {
    #[derive(serde::Deserialize)]
    struct Ready {
        seq: WritePosition,
    }
    let url = replica.primary.join("/readyz")?;
    let res = replica.client.get(url).timeout(timeout).send().await?.error_for_status()?;
    let ready: Ready = serde_json::from_slice(&res.bytes().await?)?;
    replica.primary_at(ready.seq);
    Ok(())
}

/// The replica's own loop: apply what Litestream brought every [`COPY_POLL`], ask the primary
/// for its position every [`PRIMARY_POLL`]. Returns at once on a primary, and when the copy
/// was replaced under the server (its follower restored a new file): nothing will update the
/// file it reads any more, so it is to stop (after its in-flight requests, `serve`) and be
/// started again on the new copy.
pub async fn run(app: App) -> Ended {
    if app.role().replica().is_none() {
        return Ended::NotAReplica;
    }
    let poller = {
        let app = app.clone();
        tokio::spawn(async move {
            let Some(replica) = app.role().replica() else { return };
            let mut tick = tokio::time::interval(PRIMARY_POLL);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                if let Err(e) = poll_primary(replica, PRIMARY_POLL_TIMEOUT).await {
                    tracing::debug!(error = %e, "the primary did not tell its position");
                }
                if replica.copy_replaced() {
                    tracing::error!(
                        "the copy was replaced under this server (its follower restored it again): stopping, to be started on the new copy"
                    );
                    return;
                }
                if replica.record_metrics() {
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
        if let Err(e) = app.follow_copy().await {
            tracing::warn!(error = %e, "following the copy failed; will retry");
        }
        if poller.is_finished() {
            return Ended::CopyReplaced;
        }
    }
}

/// Why [`run`] returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    NotAReplica,
    /// The copy was replaced under the server: it is to stop.
    CopyReplaced,
}
