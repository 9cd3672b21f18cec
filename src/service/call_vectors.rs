//! Keeping each call's vector: a call is found by words the moment its POST is answered, and by
//! meaning once the call worker has read it. The worker runs on the primary beside the
//! requests, never on a request's path: it reads the visible calls that have no vector yet,
//! newest first (so a call just posted goes ahead of a backfill of old ones), a few at a time
//! on one thread, and rests as long as it worked, so it never takes more than half of one core
//! however many or however long the calls are. A call costs at most one passage of the model
//! (`agentdir_meaning::MAX_PASSAGE_CHARS` of its text), and an agent posts at most its calls
//! budget (`--rate-limit-calls`): that is what a stranger's calls can make the server compute.

use std::sync::Weak;
use std::time::{Duration, Instant};

use agentdir_meaning::MODEL_ID;
use agentdir_search_index::Change;

use super::App;
use crate::app::Parts;
use crate::domain::call::call_text;
use crate::error::Result;
use crate::store::{call_vectors as store, search};

/// Calls read per round of the worker.
pub const CALL_FILL_BATCH: usize = 8;
/// How often the worker looks for calls without a vector when it found none: with
/// [`CALL_FILL_BATCH`], the bound on how soon after its POST a call is found by meaning on a
/// server that is not posting faster than the worker reads (docs/search.md "Calls").
pub const CALL_FILL_IDLE: Duration = Duration::from_millis(250);
/// The worker rests this many times as long as a round took.
const REST_PER_WORK: u32 = 1;

impl App {
    /// Starts the worker that computes call vectors (on a primary with a model: see
    /// `service::background`).
    pub(crate) fn start_call_vector_worker(&self) {
        if !self.model.enabled() {
            return;
        }
        let me = self.downgrade();
        let spawned = std::thread::Builder::new().name("call-meaning".into()).spawn(move || call_loop(me));
        if let Err(e) = spawned {
            tracing::error!(error = %e, "cannot start the call meaning worker");
        }
    }

    /// One round of the call worker, on the blocking pool (the benchmarks fill the vectors
    /// before they measure): the number of call vectors computed.
    pub async fn fill_call_vectors(&self) -> Result<usize> {
        self.blocking(|app| app.fill_call_vectors_now()).await
    }

    /// Computes the vectors of up to [`CALL_FILL_BATCH`] visible calls without one.
    fn fill_call_vectors_now(&self) -> Result<usize> {
        let keys = self.vectors.calls.missing(CALL_FILL_BATCH);
        if keys.is_empty() {
            return Ok(0);
        }
        let mut texts = Vec::with_capacity(keys.len());
        {
            let conn = self.read()?;
            for key in keys {
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

fn call_loop(parts: Weak<Parts>) {
    loop {
        let Some(app) = App::upgrade(&parts) else { return };
        let started = Instant::now();
        let done = app.fill_call_vectors_now().unwrap_or_else(|e| {
            tracing::warn!(error = %e, "computing call vectors failed; will retry");
            0
        });
        drop(app);
        let rest = if done == 0 { CALL_FILL_IDLE } else { started.elapsed() * REST_PER_WORK };
        std::thread::sleep(rest);
    }
}
