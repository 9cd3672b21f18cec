//! Keeping each agent's vector up to date: a profile's vector is computed before its write is
//! queued (so the writer never waits for the model and a search right after the write finds it
//! by meaning), and a background worker computes the vectors that are missing or stale (after
//! an upgrade, a model change, or a write that did not go through the profile operations).

use std::sync::Weak;
use std::time::Duration;

use agentdir_meaning::{MODEL_ID, Quantized};
use agentdir_search_index::{AgentDoc, Change};
use rusqlite::Connection;

use super::App;
use crate::app::Parts;
use crate::app::limits::Persistent;
use crate::app::runtime::Bound;
use crate::domain::agent::{TextHash, profile_text, text_hash};
use crate::error::Result;
use crate::store::{search, vectors as store};
use crate::telemetry;

/// Agents whose vectors the background worker computes per round, shared out over the cores.
pub const FILL_BATCH: usize = 32;
/// How long the worker rests when every public agent has its vector.
const FILL_IDLE: Duration = Duration::from_secs(1);

/// A profile's vector, computed before the write that stores it.
pub struct Embedded {
    text_hash: TextHash,
    vector: Quantized,
}

/// What a profile write does to the agent's vector (see [`App::plan_vector`]).
pub(crate) struct VectorPlan {
    /// The embedded text changes: the write spends one of the agent's profile edits.
    pub changes_text: bool,
    /// The new text's vector, to store in the write.
    pub embedded: Option<Embedded>,
}

impl App {
    /// The vector of the profile `doc` will have, on the blocking pool, one per core at a
    /// time; `None` without a model. A text some agent's stored vector was computed from costs
    /// no embedding.
    pub(crate) async fn embed_profile(&self, doc: AgentDoc) -> Result<Option<Embedded>> {
        if !self.model.enabled() {
            return Ok(None);
        }
        self.bounded(Bound::Embed, move |app| {
            let text = profile_text(&doc);
            let text_hash = text_hash(&text);
            if let Some(vector) = store::by_text(&*app.read()?, MODEL_ID, &text_hash)? {
                return Ok(Some(Embedded { text_hash, vector }));
            }
            telemetry::profile_embedded();
            Ok(app
                .model
                .embed_profiles(&[&text])
                .and_then(|mut v| v.pop())
                .map(|vector| Embedded { text_hash, vector }))
        })
        .await
    }

    /// Before a profile write of agent `agent_id` (under its [`App::profile_turn`], so no other
    /// write of its own changes the profile meanwhile): applies `edit` to the agent's document
    /// as it is now and compares the embedded text before and after. A write that changes it
    /// is refused (429, before any embedding) once the agent's profile-edit budget is spent,
    /// and gets the new text's vector, unless the agent's stored vector is already of that
    /// text. A write that leaves the text as it is costs neither.
    pub(crate) async fn plan_vector(
        &self,
        agent_id: i64,
        edit: impl FnOnce(&mut AgentDoc) + Send + 'static,
        now: i64,
    ) -> Result<VectorPlan> {
        let planned = self
            .blocking(move |app| {
                let conn = app.read()?;
                let Change::UpsertAgent(mut doc) = search::agent_change(&conn, agent_id)? else {
                    // Not listed (being deleted): nothing is embedded for it.
                    return Ok(None);
                };
                let before = profile_text(&doc);
                edit(&mut doc);
                let after = profile_text(&doc);
                if before == after {
                    return Ok(None);
                }
                app.limits.check_agent(&conn, Persistent::ProfileEdits, agent_id, now)?;
                let stored = store::for_agent(&conn, agent_id)?
                    .is_some_and(|v| v.model == MODEL_ID && v.text_hash == text_hash(&after));
                Ok(Some((!stored).then_some(doc)))
            })
            .await?;
        Ok(match planned {
            None => VectorPlan { changes_text: false, embedded: None },
            Some(None) => VectorPlan { changes_text: true, embedded: None },
            Some(Some(doc)) => VectorPlan { changes_text: true, embedded: self.embed_profile(doc).await? },
        })
    }

    /// Starts the worker that computes missing vectors (on a primary with a model: see
    /// `service::background`).
    pub(crate) fn start_vector_worker(&self) {
        if !self.model.enabled() {
            return;
        }
        let me = self.downgrade();
        let spawned = std::thread::Builder::new().name("meaning".into()).spawn(move || fill_loop(me));
        if let Err(e) = spawned {
            tracing::error!(error = %e, "cannot start the meaning worker");
        }
    }

    /// One round of the worker, on the blocking pool (the benchmarks fill the vectors before
    /// they measure): the number of vectors computed.
    pub async fn fill_vectors(&self) -> Result<usize> {
        self.blocking(|app| app.fill_vectors_now()).await
    }

    /// One round of the worker: computes up to [`FILL_BATCH`] missing vectors. The number done.
    fn fill_vectors_now(&self) -> Result<usize> {
        let keys = self.vectors.missing(FILL_BATCH);
        if keys.is_empty() {
            return Ok(0);
        }
        let mut texts = Vec::new();
        {
            let conn = self.read()?;
            for key in &keys {
                if let Some(Change::UpsertAgent(doc)) = Some(search::agent_change(&conn, *key as i64)?) {
                    texts.push((doc.key as i64, profile_text(&doc)));
                }
            }
        }
        let mut done = Vec::new();
        let mut to_embed = Vec::new();
        {
            let conn = self.read()?;
            for (id, text) in texts {
                let hash = text_hash(&text);
                match store::by_text(&conn, MODEL_ID, &hash)? {
                    Some(vector) => done.push((id, Embedded { text_hash: hash, vector })),
                    None => to_embed.push((id, text, hash)),
                }
            }
        }
        if !to_embed.is_empty() {
            // One share per core: a full rebuild is the model's work, not SQLite's.
            let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
            let share = to_embed.len().div_ceil(cores);
            let vectors: Vec<Option<Vec<Quantized>>> = std::thread::scope(|scope| {
                let workers: Vec<_> = to_embed
                    .chunks(share)
                    .map(|chunk| {
                        scope.spawn(move || {
                            let refs: Vec<&str> = chunk.iter().map(|(_, t, _)| t.as_str()).collect();
                            self.model.embed_profiles(&refs)
                        })
                    })
                    .collect();
                workers.into_iter().map(|w| w.join().ok().flatten()).collect()
            });
            let Some(vectors) = vectors.into_iter().collect::<Option<Vec<_>>>() else {
                return Ok(0);
            };
            for ((id, _, text_hash), vector) in to_embed.into_iter().zip(vectors.into_iter().flatten()) {
                done.push((id, Embedded { text_hash, vector }));
            }
        }
        let n = done.len();
        self.write_blocking(move |tx| {
            for (id, embedded) in done {
                store_vector(tx, id, Some(embedded))?;
            }
            Ok(())
        })?;
        self.follow()?;
        Ok(n)
    }
}

fn fill_loop(parts: Weak<Parts>) {
    loop {
        let Some(app) = App::upgrade(&parts) else { return };
        let done = app.fill_vectors_now().unwrap_or_else(|e| {
            tracing::warn!(error = %e, "computing missing vectors failed; will retry");
            0
        });
        drop(app);
        if done == 0 {
            std::thread::sleep(FILL_IDLE);
        }
    }
}

/// Inside a write, after the profile changed: stores the vector computed beforehand when the
/// profile's text is still the one embedded (a concurrent change leaves it to the worker).
pub fn store_vector(tx: &Connection, agent_id: i64, embedded: Option<Embedded>) -> Result<()> {
    let Some(e) = embedded else { return Ok(()) };
    let Change::UpsertAgent(doc) = search::agent_change(tx, agent_id)? else { return Ok(()) };
    if e.text_hash == text_hash(&profile_text(&doc)) {
        store::upsert(tx, agent_id, MODEL_ID, &e.text_hash, &e.vector)?;
    }
    Ok(())
}
