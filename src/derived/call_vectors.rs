//! What each visible call means, in memory: its vector in a matrix the call search scans, each
//! row with the values a call search filters on. Like the agents' (`vectors`), it follows
//! SQLite: the vectors follow their table (`store::call_vectors`, written by the call worker,
//! `service::call_vectors`), and which calls are visible follows the change log (`follow`).
//! Loaded from SQLite at start. The calls that are visible and have no vector yet are kept
//! apart, newest last, for the worker.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

use agentdir_meaning::{MODEL_ID, Matrix, Quantized};
use agentdir_search_index::{CallDoc, Change};
use rusqlite::Connection;
use strum::VariantArray;

use super::vector_rows::{Name, Named, name, normalised};
use crate::domain::call::CallKind;
use crate::error::Result;
use crate::store::call_vectors::{self as store, CallFilterValues, StoredCallVector};

/// Stored vectors read per query while following.
const VECTOR_BATCH: u32 = 2_000;

/// What a call search filters on, of one call, as the index's exact filters compare it: the
/// tags as the one table's values (`vector_rows::Name`), not copies of the strings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CallRow {
    kind: Option<CallKind>,
    tags: Box<[Name]>,
}

impl CallRow {
    fn new(kind: &str, tags: &[String]) -> CallRow {
        CallRow {
            kind: CallKind::VARIANTS.iter().copied().find(|k| k.as_str() == kind),
            tags: tags.iter().filter_map(|t| normalised(Some(t))).map(|t| name(&t)).collect(),
        }
    }
}

/// The filters of a call search, as [`CallRow`]s are checked against them (exactly).
pub struct CallFilter {
    kind: Option<CallKind>,
    tag: Named,
}

impl CallFilter {
    pub fn new(kind: Option<CallKind>, tag: Option<&str>) -> CallFilter {
        CallFilter { kind, tag: Named::of(tag) }
    }

    pub fn admits(&self, row: &CallRow) -> bool {
        self.kind.is_none_or(|k| row.kind == Some(k)) && self.tag.held_in(&row.tags)
    }
}

#[derive(Default)]
pub(crate) struct CallState {
    /// Rows of visible calls whose vector is stored (of this model).
    pub matrix: Matrix<CallRow>,
    /// Every visible call, with what its row holds.
    visible: HashMap<u64, CallRow>,
    /// Calls with a stored vector of this model, visible or not.
    stored: HashSet<u64>,
    /// Visible calls without a stored vector, in key order (newest last).
    missing: BTreeSet<u64>,
    /// Missing calls a worker has claimed and is reading.
    claimed: HashSet<u64>,
}

/// What each visible call means, as it follows SQLite.
#[derive(Default)]
pub struct CallVectors {
    state: RwLock<CallState>,
    /// The newest vector stamp applied.
    stamp: AtomicI64,
}

impl CallVectors {
    /// At start: every visible call and every stored call vector, from SQLite. What a follow
    /// applied before (the index's repair at start) is read again, now that the visible calls
    /// are known.
    pub fn load(&self, conn: &Connection) -> Result<()> {
        {
            let mut state = self.write();
            *state = CallState::default();
            self.stamp.store(0, Ordering::Release);
            store::each_visible(conn, |CallFilterValues { seq, kind, tags }| {
                let key = seq as u64;
                state.visible.insert(key, CallRow::new(&kind, &tags));
            })?;
        }
        self.apply_vectors(conn)?;
        // Once, now that both are known: a million calls inserted and then mostly removed
        // again cost a second of every start.
        let mut state = self.write();
        let missing = state.visible.keys().filter(|key| !state.stored.contains(key)).copied().collect();
        state.missing = missing;
        Ok(())
    }

    pub(crate) fn read(&self) -> RwLockReadGuard<'_, CallState> {
        self.state.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, CallState> {
        self.state.write().unwrap_or_else(|e| e.into_inner())
    }

    /// Visible calls with a vector, and visible calls.
    pub fn counts(&self) -> (usize, usize) {
        let state = self.read();
        (state.matrix.len(), state.visible.len())
    }

    /// Applies the calls of a batch of the change log (documents as the index got them).
    pub fn apply_calls(&self, conn: &Connection, changes: &[Change]) -> Result<()> {
        let mut shown: Vec<(&CallDoc, Option<StoredCallVector>)> = Vec::new();
        let mut gone = Vec::new();
        {
            let state = self.read();
            for change in changes {
                match change {
                    // A call shown again (its author restored) needs its vector read back.
                    Change::UpsertCall(doc)
                        if state.stored.contains(&doc.key) && !state.matrix.contains(doc.key) =>
                    {
                        shown.push((doc, store::for_call(conn, doc.key as i64)?));
                    }
                    Change::UpsertCall(doc) => shown.push((doc, None)),
                    Change::RemoveCall(key) => gone.push(*key),
                    Change::UpsertAgent(_) | Change::RemoveAgent(_) => {}
                }
            }
        }
        if shown.is_empty() && gone.is_empty() {
            return Ok(());
        }
        let mut state = self.write();
        for (doc, stored) in shown {
            let row = CallRow::new(&doc.kind, &doc.tags);
            if let Some(StoredCallVector { vector: Some(v), model, .. }) = stored
                && model == MODEL_ID
            {
                state.matrix.upsert(doc.key, &v, row.clone());
            }
            if !state.stored.contains(&doc.key) {
                state.missing.insert(doc.key);
            }
            state.visible.insert(doc.key, row);
        }
        for key in gone {
            state.visible.remove(&key);
            state.missing.remove(&key);
            state.matrix.remove(key);
        }
        Ok(())
    }

    /// Applies call vectors stored since the last call.
    pub fn apply_vectors(&self, conn: &Connection) -> Result<()> {
        loop {
            let batch = store::after(conn, self.stamp.load(Ordering::Acquire), VECTOR_BATCH)?;
            let Some(last) = batch.last().map(|v| v.stamp) else {
                return Ok(());
            };
            let mut state = self.write();
            for v in &batch {
                let key = v.call_seq as u64;
                match (&v.vector, v.model == MODEL_ID) {
                    (Some(q), true) => {
                        state.stored.insert(key);
                        state.missing.remove(&key);
                        place(&mut state, key, q);
                    }
                    _ => {
                        state.stored.remove(&key);
                        state.matrix.remove(key);
                        if state.visible.contains_key(&key) {
                            state.missing.insert(key);
                        }
                    }
                }
            }
            self.stamp.store(last, Ordering::Release);
        }
    }

    /// Claims up to `limit` visible calls without a vector that no other worker has claimed:
    /// the newest (a call just posted goes ahead of old ones) or the oldest (the backfill).
    /// Each is given back with [`CallVectors::release`] once read.
    pub fn claim(&self, limit: usize, end: End) -> Vec<u64> {
        let mut state = self.write();
        let free = |key: &&u64| !state.claimed.contains(*key);
        let keys: Vec<u64> = match end {
            End::Newest => state.missing.iter().rev().filter(free).take(limit).copied().collect(),
            End::Oldest => state.missing.iter().filter(free).take(limit).copied().collect(),
        };
        state.claimed.extend(&keys);
        keys
    }

    pub fn release(&self, keys: &[u64]) {
        let mut state = self.write();
        for key in keys {
            state.claimed.remove(key);
        }
    }
}

/// Which end of the calls without a vector a worker reads from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    Newest,
    Oldest,
}

/// Puts a call's vector in the matrix when the call is visible.
fn place(state: &mut CallState, key: u64, vector: &Quantized) {
    if let Some(row) = state.visible.get(&key).cloned() {
        state.matrix.upsert(key, vector, row);
    }
}
