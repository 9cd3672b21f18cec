//! The model and the in-memory state that follows SQLite.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, RwLock, RwLockReadGuard};

use agentdir_meaning::{MODEL_ID, Matrix, Model, Quantized};
use agentdir_search_index::{AgentDoc, AgentWords, Change, SearchIndex};
use rusqlite::Connection;

use super::budget::Budget;
use super::needs::Needs;
use super::row::Row;
use super::{MeaningSettings, SearchMode, profile_text, text_hash};
use crate::domain::trust::LINK_PROOF_DAYS;
use crate::error::Result;
use crate::store::meaning::{self as store, EvidenceCounts, StoredVector};
use crate::time::{DAY, now_ms};

/// Stored vectors read per query while following.
const VECTOR_BATCH: u32 = 2_000;

/// What ranking and filters need of one public agent.
#[derive(Debug, Clone)]
pub struct Facts {
    pub handle: String,
    pub words: AgentWords,
    pub level: u8,
    pub verified: bool,
    /// Has a live endpoint it owns (the `live` filter).
    pub live: bool,
    pub joined_at: i64,
    pub last_active_at: i64,
    /// Lower-cased and trimmed, as the index's exact filters compare them.
    pub capabilities: Vec<String>,
    pub languages: Vec<String>,
    pub evidence: EvidenceCounts,
    pub text_hash: Vec<u8>,
}

/// Whether meaning is on, and why not.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Status {
    /// `combined`, `words` or `meaning`: the mode asked for.
    pub mode: &'static str,
    /// True when the model is loaded and searches use it.
    pub model_loaded: bool,
    /// The model's name when loaded, otherwise why searches use words only.
    pub detail: String,
    /// Public agents whose current profile has a vector / public agents.
    pub agents_with_vectors: usize,
    pub agents: usize,
}

#[derive(Default)]
pub(crate) struct State {
    pub facts: HashMap<u64, Facts>,
    /// Rows only for public agents whose stored vector is of their current text, each with
    /// what the scan checks of the agent.
    pub matrix: Matrix<Row>,
    /// The text hash of each agent's stored vector (public or not).
    stored: HashMap<u64, Vec<u8>>,
}

pub struct Meaning {
    pub mode: SearchMode,
    model: Option<Model>,
    detail: String,
    state: RwLock<State>,
    /// The newest vector stamp applied.
    stamp: AtomicI64,
    pub budget: Arc<Budget>,
    /// Needs read lately (see `needs.rs`).
    pub needs: Needs,
}

impl Meaning {
    /// Loads the model unless the mode is `words`; a model that cannot be loaded leaves the
    /// server searching by words, which it logs once here.
    pub fn open(settings: &MeaningSettings, cores: usize) -> Meaning {
        let loaded = match settings.mode {
            SearchMode::Words => Err("search mode is words: the model is not loaded".to_string()),
            _ => match settings
                .model_path
                .clone()
                .or_else(|| agentdir_meaning::built_in_weights().map(Into::into))
            {
                None => Err(format!(
                    "no model file: {}",
                    agentdir_meaning::unavailable_reason().unwrap_or("set AGENTDIR_MODEL_PATH")
                )),
                Some(path) => Model::load(&path).map_err(|e| e.to_string()).map(|m| (m, path)),
            },
        };
        let (model, detail) = match loaded {
            Ok((model, path)) => {
                tracing::info!(model = MODEL_ID, path = %path.display(), "meaning model loaded");
                (Some(model), MODEL_ID.to_string())
            }
            Err(why) => {
                tracing::warn!(reason = %why, "search by meaning is off: searches use words only");
                (None, why)
            }
        };
        Meaning {
            mode: settings.mode,
            model,
            detail,
            state: RwLock::default(),
            stamp: AtomicI64::new(0),
            budget: Budget::new(cores),
            needs: Needs::default(),
        }
    }

    /// True when searches can use meaning.
    pub fn enabled(&self) -> bool {
        self.model.is_some()
    }

    pub fn status(&self) -> Status {
        let state = self.read();
        Status {
            mode: self.mode.into(),
            model_loaded: self.enabled(),
            detail: self.detail.clone(),
            agents_with_vectors: state.matrix.len(),
            agents: state.facts.len(),
        }
    }

    pub(crate) fn read(&self) -> RwLockReadGuard<'_, State> {
        self.state.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, State> {
        self.state.write().unwrap_or_else(|e| e.into_inner())
    }

    /// The vector of a need, or `None` without a model or when the model fails.
    pub fn embed_query(&self, text: &str) -> Option<Quantized> {
        let vector = self
            .model
            .as_ref()?
            .embed_query(text)
            .map_err(|e| tracing::warn!(error = %e, "embedding a query failed"))
            .ok()?;
        Some(Quantized::new(&vector))
    }

    /// The vectors of profile texts, or `None` without a model or when the model fails.
    pub fn embed_profiles(&self, texts: &[&str]) -> Option<Vec<Quantized>> {
        let vectors = self
            .model
            .as_ref()?
            .embed_passages(texts)
            .map_err(|e| tracing::warn!(error = %e, "embedding profiles failed"))
            .ok()?;
        Some(vectors.iter().map(|v| Quantized::new(v)).collect())
    }

    /// Applies the agents of a batch of the change log (documents as the index got them).
    pub fn apply_agents(&self, conn: &Connection, index: &SearchIndex, changes: &[Change]) -> Result<()> {
        let mut updates = Vec::new();
        for change in changes {
            match change {
                Change::UpsertAgent(doc) => {
                    let facts = facts(conn, index, doc)?;
                    let stored = store::for_agent(conn, doc.key as i64)?;
                    updates.push((doc.key, Some((facts, stored))));
                }
                Change::RemoveAgent(key) => updates.push((*key, None)),
                Change::UpsertCall(_) | Change::RemoveCall(_) => {}
            }
        }
        let mut state = self.write();
        for (key, update) in updates {
            match update {
                Some((facts, stored)) => {
                    if let Some(v) = stored {
                        state.stored.insert(key, stored_hash(&v));
                        place(&mut state, key, &facts.text_hash, Row::of(&facts), &v);
                    }
                    let current = state.stored.get(&key) == Some(&facts.text_hash);
                    if !current {
                        state.matrix.remove(key);
                    }
                    state.facts.insert(key, facts);
                }
                None => {
                    state.facts.remove(&key);
                    state.matrix.remove(key);
                }
            }
        }
        Ok(())
    }

    /// Applies vectors stored since the last call.
    pub fn apply_vectors(&self, conn: &Connection) -> Result<()> {
        loop {
            let batch = store::after(conn, self.stamp.load(Ordering::Acquire), VECTOR_BATCH)?;
            let Some(last) = batch.last().map(|v| v.stamp) else {
                return Ok(());
            };
            let mut state = self.write();
            for v in &batch {
                let key = v.agent_id as u64;
                state.stored.insert(key, stored_hash(v));
                if let Some((hash, row)) = state.facts.get(&key).map(|f| (f.text_hash.clone(), Row::of(f))) {
                    place(&mut state, key, &hash, row, v);
                }
            }
            self.stamp.store(last, Ordering::Release);
        }
    }

    /// Up to `limit` public agents whose current profile has no vector yet.
    pub fn missing(&self, limit: usize) -> Vec<u64> {
        let state = self.read();
        state
            .facts
            .iter()
            .filter(|(key, f)| state.stored.get(key) != Some(&f.text_hash))
            .map(|(key, _)| *key)
            .take(limit)
            .collect()
    }
}

/// The text hash a stored vector counts for: none when another model computed it.
fn stored_hash(v: &StoredVector) -> Vec<u8> {
    if v.model == MODEL_ID { v.text_hash.clone() } else { Vec::new() }
}

/// Puts a stored vector in the matrix when it is of the agent's current text and this model.
fn place(state: &mut State, key: u64, current: &[u8], row: Row, v: &StoredVector) {
    match &v.vector {
        Some(q) if v.text_hash == current && v.model == MODEL_ID => state.matrix.upsert(key, q, row),
        _ => state.matrix.remove(key),
    }
}

/// The facts of a public agent.
pub fn facts(conn: &Connection, index: &SearchIndex, doc: &AgentDoc) -> Result<Facts> {
    let live_after = now_ms() - LINK_PROOF_DAYS * DAY;
    let normalise = |v: &[String]| v.iter().map(|s| s.trim().to_lowercase()).collect();
    Ok(Facts {
        handle: doc.handle.clone(),
        words: index.agent_words(doc),
        level: u8::try_from(doc.level).unwrap_or(u8::MAX),
        verified: doc.mailbox_verified,
        live: doc.live,
        joined_at: doc.joined_at,
        last_active_at: doc.last_active_at,
        capabilities: normalise(&doc.capabilities),
        languages: normalise(&doc.languages),
        evidence: store::evidence(conn, doc.key as i64, &doc.handle, live_after)?,
        text_hash: text_hash(&profile_text(doc)),
    })
}
