//! Keeping each call's vector: a call is found by words the moment its POST is answered, and by
//! meaning once a call worker has read it. The workers run on the primary beside the requests,
//! never on a request's path, and read the visible calls that have no vector yet:
//!
//! - the call worker takes the newest, a few at a time on one thread, and rests as long as it
//!   worked, so it never takes more than half of one core however many or however long the
//!   calls are; a call just posted goes ahead of any backfill;
//! - the backfill workers, one per core at the lowest priority (nice 19: they take only CPU
//!   nobody else wants), take the oldest, so the calls of a directory upgraded to this version
//!   are read while the server serves, fast when it is idle and hardly at all when it is busy.
//!
//! A call costs at most one passage of the model (`agentdir_meaning::MAX_PASSAGE_CHARS` of its
//! text), and an agent posts at most its calls budget (`--rate-limit-calls`): that is what a
//! stranger's calls can make the server compute.

use std::sync::Weak;
use std::time::{Duration, Instant};

use agentdir_meaning::MODEL_ID;
use agentdir_search_index::Change;

use super::App;
use crate::app::Parts;
use crate::derived::call_vectors::End;
use crate::domain::call::call_text;
use crate::error::Result;
use crate::store::{call_vectors as store, search};

/// Calls read per round of a worker.
pub const CALL_FILL_BATCH: usize = 8;
/// How often the call worker looks for calls without a vector when it found none: with
/// [`CALL_FILL_BATCH`], the bound on how soon after its POST a call is found by meaning on a
/// server that is not posting faster than the worker reads (docs/search.md "Calls").
pub const CALL_FILL_IDLE: Duration = Duration::from_millis(250);
/// The call worker rests this many times as long as a round took.
const REST_PER_WORK: u32 = 1;
/// How often a backfill worker looks again when it found nothing to read.
const BACKFILL_IDLE: Duration = Duration::from_secs(1);

impl App {
    /// Starts the call worker and the backfill workers (on a primary with a model: see
    /// `service::background`).
    pub(crate) fn start_call_vector_workers(&self) {
        if !self.model.enabled() {
            return;
        }
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        let workers = std::iter::once(("call-meaning".to_string(), End::Newest))
            .chain((0..cores).map(|i| (format!("call-backfill-{i}"), End::Oldest)));
        for (name, end) in workers {
            let me = self.downgrade();
            if let Err(e) = std::thread::Builder::new().name(name).spawn(move || call_loop(me, end)) {
                tracing::error!(error = %e, "cannot start a call meaning worker");
            }
        }
    }

    /// One round of the call worker, on the blocking pool (the benchmarks fill the vectors
    /// before they measure): the number of call vectors computed.
    pub async fn fill_call_vectors(&self) -> Result<usize> {
        self.blocking(|app| app.fill_call_vectors_now(End::Newest)).await
    }

    /// Computes the vectors of up to [`CALL_FILL_BATCH`] visible calls without one, from `end`.
    fn fill_call_vectors_now(&self, end: End) -> Result<usize> {
        let keys = self.vectors.calls.claim(CALL_FILL_BATCH, end);
        if keys.is_empty() {
            return Ok(0);
        }
        let done = self.read_calls(&keys);
        self.vectors.calls.release(&keys);
        done
    }

    /// Reads the calls `keys` with the model and stores their vectors.
    fn read_calls(&self, keys: &[u64]) -> Result<usize> {
        let mut texts = Vec::with_capacity(keys.len());
        {
            let conn = self.read()?;
            for &key in keys {
                if let Change::UpsertCall(doc) = search::call_change(&conn, key as i64)? {
                    texts.push((doc.key as i64, call_text(&doc)));
                }
            }
        }
        let refs: Vec<&str> = texts.iter().map(|(_, t)| t.as_str()).collect();
        let Some(vectors) = self.model.embed_profiles(&refs) else {
            return Ok(0);
        };
        let done: Vec<_> = texts.into_iter().map(|(seq, _)| seq).zip(vectors).collect();
        let n = done.len();
        self.write_blocking(move |tx| {
            for (seq, vector) in &done {
                store::upsert(tx, *seq, MODEL_ID, vector)?;
            }
            Ok(())
        })?;
        self.follow()?;
        Ok(n)
    }
}

fn call_loop(parts: Weak<Parts>, end: End) {
    if end == End::Oldest {
        agentdir_meaning::background_priority();
    }
    loop {
        let Some(app) = App::upgrade(&parts) else { return };
        let started = Instant::now();
        let done = app.fill_call_vectors_now(end).unwrap_or_else(|e| {
            tracing::warn!(error = %e, "computing call vectors failed; will retry");
            0
        });
        drop(app);
        let rest = match (done, end) {
            (0, End::Newest) => CALL_FILL_IDLE,
            (0, End::Oldest) => BACKFILL_IDLE,
            (_, End::Newest) => started.elapsed() * REST_PER_WORK,
            (_, End::Oldest) => Duration::ZERO,
        };
        std::thread::sleep(rest);
    }
}
