//! What each public agent means, in memory: its vector in a matrix the search scans (each row
//! with what the scan checks of the agent, see `vector_rows`) and the facts the search's rule
//! weighs (its filters, its words, its evidence). Like the search index, it follows SQLite: the
//! vectors follow their table (`store::vectors`: a profile's vector is computed before its
//! write is queued and stored in the same transaction; the background worker computes those
//! that are missing or stale), and which agents are public, with what text, follows the change
//! log (`follow`). Rebuilt from SQLite at start.

use std::collections::HashMap;
use std::sync::RwLock;
use std::sync::RwLockReadGuard;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Instant;

use agentdir_meaning::{MODEL_ID, Matrix};
use agentdir_search_index::{AgentDoc, AgentWords, Change, SearchIndex};
use rusqlite::Connection;

use super::call_vectors::CallVectors;
use super::vector_rows::Row;
use crate::domain::agent::{profile_text, text_hash};
use crate::domain::trust::LINK_PROOF_DAYS;
use crate::error::Result;
use crate::store::search;
use crate::store::vectors::{self as store, EvidenceCounts, StoredVector};
use crate::time::{DAY, now_ms};

/// Agents read per step when loading at start.
const LOAD_CHUNK: usize = 2_000;
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

impl Facts {
    /// What the vector scan checks of the agent.
    fn row(&self) -> Row {
        Row::new(self.level, self.verified, self.live, self.joined_at, &self.capabilities, &self.languages)
    }
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

/// What each public agent means, as it follows SQLite; and each visible call (`calls`).
#[derive(Default)]
pub struct Vectors {
    state: RwLock<State>,
    /// The newest vector stamp applied.
    stamp: AtomicI64,
    pub calls: CallVectors,
}

impl Vectors {
    /// At start: what every public agent means, from SQLite.
    pub fn load(&self, conn: &Connection, index: &SearchIndex) -> Result<()> {
        let started = Instant::now();
        let docs = search::agent_docs(conn)?;
        for chunk in docs.chunks(LOAD_CHUNK) {
            let changes: Vec<Change> = chunk.iter().cloned().map(Change::UpsertAgent).collect();
            self.apply_agents(conn, index, &changes)?;
        }
        self.apply_vectors(conn)?;
        self.calls.load(conn)?;
        let (with_vectors, agents) = self.counts();
        let (calls_with_vectors, calls) = self.calls.counts();
        tracing::info!(
            agents,
            with_vectors,
            calls,
            calls_with_vectors,
            elapsed_ms = started.elapsed().as_millis() as u64,
            "meaning loaded"
        );
        Ok(())
    }

    /// Public agents whose current profile has a vector, and public agents.
    pub fn counts(&self) -> (usize, usize) {
        let state = self.read();
        (state.matrix.len(), state.facts.len())
    }

    pub(crate) fn read(&self) -> RwLockReadGuard<'_, State> {
        self.state.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, State> {
        self.state.write().unwrap_or_else(|e| e.into_inner())
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
                        place(&mut state, key, &facts.text_hash, facts.row(), &v);
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
                if let Some((hash, row)) = state.facts.get(&key).map(|f| (f.text_hash.clone(), f.row())) {
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
        evidence: store::evidence(conn, doc.key as i64, live_after)?,
        text_hash: text_hash(&profile_text(doc)),
    })
}
