//! The core's own work beside the requests, started once by `serve`: the pass every second
//! (follow changes other processes made, honour rebuild requests, and on a primary flush the
//! index, note what time brings — link proofs near or past their lifetime, contact requests past
//! their expiry, each told to its agents — and let the feed forget old deletions), housekeeping every
//! minute, the quick need encoder's fill (`app::quick_encoder`), and on a primary the endpoint
//! check schedule and the worker that computes missing vectors. A replica's copy is followed by
//! `replica::link`, which the replica adapter runs.
//! A new check the server makes by itself is a step of the pass or of housekeeping here, or a
//! task of its own started by `start_background` (as the endpoint checks are), over operations
//! of its aggregate's file.

use std::time::Duration;

use tokio::task::JoinHandle;

use super::{endpoint_checks, proofs, requests};
use crate::app::{App, Role};
use crate::domain::recovery::PREVIOUS_MAILBOX_MS;
use crate::error::Result;
use crate::store;

/// How often the pass runs.
const PASS_EVERY: Duration = Duration::from_secs(1);
/// Housekeeping runs at every this many passes (once a minute), the first pass included: a
/// server started after a pause catches up at once.
const PASSES_PER_HOUSEKEEPING: u64 = 60;

/// The running background tasks; dropping it stops them.
pub struct Background(Vec<JoinHandle<()>>);

impl Drop for Background {
    fn drop(&mut self) {
        for task in &self.0 {
            task.abort();
        }
    }
}

impl App {
    /// Starts the background work of this server's role.
    pub fn start_background(&self) -> Background {
        let mut tasks = vec![tokio::spawn(passes(self.clone()))];
        // Both roles read needs: both keep the quick encoder's table filling.
        self.model.start_quick_encoder(self.settings.model.quick_fill);
        if let Role::Primary(_) = self.role() {
            // Checks write what they find: only a primary runs them.
            let interval = self.settings.endpoint_check_interval;
            tasks.push(tokio::spawn(endpoint_checks::run(self.clone(), interval)));
            self.start_vector_worker();
            self.start_call_vector_workers();
        }
        Background(tasks)
    }

    /// The pass every second: honour a rebuild request from another process, follow what
    /// changed even when nobody reads, and on a primary flush the index, note what time brings
    /// and let the change feed forget deletions past their retention.
    fn background_pass(&self) -> Result<()> {
        let Role::Primary(_) = self.role() else {
            return self.follow_copy_now();
        };
        if self.rebuild_requested()? {
            self.rebuild_index()?;
        }
        self.follow()?;
        // Events other processes committed (operator commands, inbound mail) wake their polls.
        self.wake_waiting(&*self.read()?);
        self.index.flush().map_err(crate::derived::follow::index_error)?;
        self.note_what_time_brings()?;
        self.forget_old_deletions().map(|_| ())
    }

    /// What time alone changes, in one write: link proofs past their lifetime (their cards
    /// change) or near it, contact requests past their expiry; their agents are told.
    fn note_what_time_brings(&self) -> Result<usize> {
        let now = crate::time::now_ms();
        self.write_blocking(move |tx| Ok(proofs::note_expiries(tx, now)? + requests::expire_due(tx, now)?))
    }

    /// Upkeep once a minute (and at start): forget rate events older than any window looks
    /// back, ended recoveries and the previous mailboxes that no longer recover their agent,
    /// events past their retention, erase the agents deleted longer ago than the undo time,
    /// forget ended handle holds.
    fn housekeeping(&self) -> Result<()> {
        // A replica keeps no rate events of its own: the primary checks every write. It
        // erases nothing either: it follows the primary's erasures.
        if let Role::Primary(_) = self.role() {
            let now = crate::time::now_ms();
            let before = now - self.limits.longest_window_ms();
            self.write_blocking(move |tx| {
                store::rate::prune(tx, before)?;
                store::recoveries::prune(tx, now)?;
                store::agents::forget_previous_mailboxes(tx, now - PREVIOUS_MAILBOX_MS)?;
                store::holds::forget_ended(tx, now).map(|_| ())
            })?;
            self.forget_old_events()?;
            self.erase_deleted()?;
        }
        self.limits.shrink();
        Ok(())
    }
}

async fn passes(app: App) {
    let mut tick = tokio::time::interval(PASS_EVERY);
    let mut n: u64 = 0;
    loop {
        tick.tick().await;
        let housekeeping = n.is_multiple_of(PASSES_PER_HOUSEKEEPING);
        n += 1;
        let result = app
            .blocking(move |app| {
                app.background_pass()?;
                if housekeeping {
                    app.housekeeping()?;
                }
                Ok(())
            })
            .await;
        if let Err(e) = result {
            tracing::warn!(error = %e, "background pass failed");
        }
    }
}
