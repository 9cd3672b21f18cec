//! What each public agent means, in memory: its vector in a matrix the search scans (each row
//! with what the scan checks of the agent, see `vector_rows`) and the facts the search's rule
//! weighs (its filters and its evidence; its words are the index's, asked there). Like the
//! search index, it follows SQLite: the vectors follow their table (`store::vectors`: a
//! profile's vector is computed before its write is queued and stored in the same transaction;
//! the background worker computes those that are missing or stale), and which agents are
//! public, with what text, follows the change log (`follow`). Read from SQLite at start, on
//! every core (`Vectors::load`).

use std::collections::HashMap;
use std::sync::RwLock;
use std::sync::RwLockReadGuard;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Instant;

use agentdir_meaning::{EncodedRow, MODEL_ID, Matrix};
use agentdir_search_index::{AgentDoc, Change};
use rusqlite::Connection;
use rustc_hash::{FxHashMap, FxHashSet};

use super::call_vectors::CallVectors;
use super::vector_rows::{Name, Row, name};
use crate::domain::agent::{TextHash, profile_text, text_hash};
use crate::domain::trust::LINK_PROOF_DAYS;
use crate::error::Result;
use crate::store::search;
use crate::store::vectors::{self as store, EvidenceCounts, StoredVector};
use crate::time::{DAY, now_ms};

/// Agents' keys read in one step of a load at start.
const LOAD_STEP: i64 = 10_000;
/// Stored vectors read per query while following.
const VECTOR_BATCH: u32 = 2_000;

/// What ranking and filters need of one public agent.
#[derive(Debug, Clone)]
pub struct Facts {
    pub handle: Box<str>,
    pub level: u8,
    pub verified: bool,
    /// Has a live endpoint it owns (the `live` filter).
    pub live: bool,
    pub joined_at: i64,
    pub last_active_at: i64,
    /// Lower-cased and trimmed, as the index's exact filters compare them.
    pub capabilities: Box<[Name]>,
    pub languages: Box<[Name]>,
    pub evidence: EvidenceCounts,
    pub text_hash: TextHash,
}

impl Facts {
    /// The facts of a public agent, from its document and its evidence.
    pub fn of(doc: &AgentDoc, evidence: EvidenceCounts) -> Facts {
        let normalise = |v: &[String]| v.iter().map(|s| name(&s.trim().to_lowercase())).collect();
        Facts {
            handle: doc.handle.as_str().into(),
            level: u8::try_from(doc.level).unwrap_or(u8::MAX),
            verified: doc.mailbox_verified,
            live: doc.live,
            joined_at: doc.joined_at,
            last_active_at: doc.last_active_at,
            capabilities: normalise(&doc.capabilities),
            languages: normalise(&doc.languages),
            evidence,
            text_hash: text_hash(&profile_text(doc)),
        }
    }

    /// What the vector scan checks of the agent.
    fn row(&self) -> Row {
        Row::new(self.level, self.verified, self.live, self.joined_at, &self.capabilities, &self.languages)
    }
}

#[derive(Default)]
pub(crate) struct State {
    /// Boxed: a map of a million entries has room for two million, and the room is a pointer,
    /// not the facts themselves.
    pub facts: FxHashMap<u64, Box<Facts>>,
    /// Rows only for public agents whose stored vector is of their current text, each with
    /// what the scan checks of the agent.
    pub matrix: Matrix<Row>,
    /// The public agents without a row (whose stored vector is missing, of an older text or
    /// of another model): what the worker computes, kept as facts and vectors change (a
    /// million agents are not walked every second).
    missing: FxHashSet<u64>,
}

impl State {
    /// Notes whether agent `key` now lacks the vector of its current profile.
    fn settle(&mut self, key: u64) {
        let lacks = self.facts.contains_key(&key) && !self.matrix.contains(key);
        if lacks {
            self.missing.insert(key);
        } else {
            self.missing.remove(&key);
        }
    }
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
    /// At start: what every public agent means, from SQLite, read on `threads` connections
    /// that `open` gives, each a share of the agents' keys.
    pub fn load<C, F>(&self, open: F, threads: usize) -> Result<()>
    where
        C: std::ops::Deref<Target = Connection>,
        F: Fn() -> Result<C> + Sync,
    {
        let started = Instant::now();
        let (evidence, span, stamp) = {
            let conn = open()?;
            let snapshot = conn.unchecked_transaction()?;
            let span = search::agent_key_span(&snapshot)?;
            self.write().matrix.reserve(store::count(&snapshot)?);
            // Read before the shares' snapshots begin: whatever is stored after is applied below.
            let stamp = store::newest_stamp(&snapshot)?;
            let evidence = store::all_evidence(&snapshot, live_after())?;
            snapshot.finish()?;
            (evidence, span, stamp)
        };
        if let Some((first, last)) = span {
            let threads = threads.max(1) as i64;
            let share = (last - first) / threads + 1;
            std::thread::scope(|scope| {
                let loads: Vec<_> = (0..threads)
                    .map(|i| {
                        let (from, to) = (first + i * share, (first + (i + 1) * share - 1).min(last));
                        let (open, evidence) = (&open, &evidence);
                        scope.spawn(move || -> Result<()> {
                            let conn = open()?;
                            self.load_share(&conn, evidence, from, to)
                        })
                    })
                    .collect();
                loads.into_iter().try_for_each(|l| l.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            })?;
        }
        let loaded_ms = started.elapsed().as_millis() as u64;
        // Vectors stored while the shares read (the follower may have applied them before
        // their agents' facts were here): each has a newer stamp and is placed over the one it
        // replaced.
        let conn = open()?;
        self.apply_vectors_after(&conn, stamp)?;
        self.calls.load(&conn)?;
        let (with_vectors, agents) = self.counts();
        let (calls_with_vectors, calls) = self.calls.counts();
        tracing::info!(
            agents,
            with_vectors,
            calls,
            calls_with_vectors,
            loaded_ms,
            elapsed_ms = started.elapsed().as_millis() as u64,
            "meaning loaded"
        );
        Ok(())
    }

    /// Loads the agents whose keys are from `first` to `last`, a step at a time: each step's
    /// facts and vector rows are made outside the lock and placed under it.
    fn load_share(
        &self,
        conn: &Connection,
        evidence: &HashMap<i64, EvidenceCounts>,
        first: i64,
        last: i64,
    ) -> Result<()> {
        let mut from = first;
        while from <= last {
            let to = last.min(from + LOAD_STEP - 1);
            // Pages come through the connection's own cache; on a replica's copy a page the
            // follower rewrote since the last step would be served old from it
            // (`store::replica`), so each step starts with none.
            conn.release_memory()?;
            let snapshot = conn.unchecked_transaction()?;
            let facts: HashMap<u64, Box<Facts>> = search::agent_docs_between(&snapshot, from, to)?
                .iter()
                .map(|doc| {
                    let evidence = evidence.get(&(doc.key as i64)).copied().unwrap_or_default();
                    (doc.key, Box::new(Facts::of(doc, evidence)))
                })
                .collect();
            let stored = store::between(&snapshot, from, to)?;
            snapshot.finish()?;
            let rows: Vec<(u64, EncodedRow, Row)> = stored
                .iter()
                .filter_map(|v| {
                    let key = v.agent_id as u64;
                    let f = facts.get(&key)?;
                    let q =
                        v.vector.as_ref().filter(|_| v.text_hash == f.text_hash && v.model == MODEL_ID)?;
                    Some((key, EncodedRow::of(q), f.row()))
                })
                .collect();
            let mut state = self.write();
            for (key, row, attrs) in &rows {
                state.matrix.upsert_encoded(*key, row, *attrs);
            }
            let keys: Vec<u64> = facts.keys().copied().collect();
            state.facts.extend(facts);
            for key in keys {
                state.settle(key);
            }
            drop(state);
            from = to + 1;
        }
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
    pub fn apply_agents(&self, conn: &Connection, changes: &[Change]) -> Result<()> {
        let mut updates = Vec::new();
        for change in changes {
            match change {
                Change::UpsertAgent(doc) => {
                    let facts =
                        Box::new(Facts::of(doc, store::evidence(conn, doc.key as i64, live_after())?));
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
                    match stored {
                        Some(v) => place(&mut state, key, &facts.text_hash, facts.row(), &v),
                        None => state.matrix.remove(key),
                    }
                    state.facts.insert(key, facts);
                }
                None => {
                    state.facts.remove(&key);
                    state.matrix.remove(key);
                }
            }
            state.settle(key);
        }
        Ok(())
    }

    /// Applies vectors stored since the last call.
    pub fn apply_vectors(&self, conn: &Connection) -> Result<()> {
        self.apply_vectors_after(conn, self.stamp.load(Ordering::Acquire))
    }

    /// Applies the vectors stored after `stamp`, to the newest.
    fn apply_vectors_after(&self, conn: &Connection, mut stamp: i64) -> Result<()> {
        loop {
            let batch = store::after(conn, stamp, VECTOR_BATCH)?;
            let Some(last) = batch.last().map(|v| v.stamp) else {
                return Ok(());
            };
            stamp = last;
            let mut state = self.write();
            for v in &batch {
                let key = v.agent_id as u64;
                if let Some((hash, row)) = state.facts.get(&key).map(|f| (f.text_hash, f.row())) {
                    place(&mut state, key, &hash, row, v);
                }
                state.settle(key);
            }
            self.stamp.fetch_max(last, Ordering::AcqRel);
        }
    }

    /// Up to `limit` public agents whose current profile has no vector yet.
    pub fn missing(&self, limit: usize) -> Vec<u64> {
        self.read().missing.iter().copied().take(limit).collect()
    }
}

/// Puts a stored vector in the matrix when it is of the agent's current text and this model.
fn place(state: &mut State, key: u64, current: &[u8], row: Row, v: &StoredVector) {
    match &v.vector {
        Some(q) if v.text_hash == current && v.model == MODEL_ID => state.matrix.upsert(key, q, row),
        _ => state.matrix.remove(key),
    }
}

/// Link proofs verified before this have expired.
fn live_after() -> i64 {
    now_ms() - LINK_PROOF_DAYS * DAY
}
