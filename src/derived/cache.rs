//! What the core derives from SQLite and keeps in memory, so a hit touches no SQLite page: rendered
//! documents (an agent's card, a call with its replies: the bytes REST serves and their ETag, see
//! `documents`) and list items (an agent, a call: what a page of results is assembled from, see
//! `items`). Both are what the core renders; no adapter keeps anything here.
//!
//! Exact invalidation follows the change log: the triggers record every entity a write changes
//! (a reply changes its call and its author's card, a confirmed collaboration both cards…), and
//! the followers evict exactly the documents and items of those entities (the writer's before the
//! write is answered). A value read from a snapshot is only kept if no change the followers have
//! applied is newer than that snapshot, so a render racing a write can never leave a stale value
//! behind. A value that shows something time-bound (a link proof that expires) carries the time
//! it stops being valid.
//!
//! Memory is bounded by the bytes held, documents and items together (`view_cache_bytes`); past
//! the budget the least recently used go, whichever shelf they are on.

use std::hash::Hash;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use lru::LruCache;

use super::documents::{Document, DocumentKey};
use crate::domain::agent::AgentView;
use crate::domain::call::CallSummary;
use crate::store::changes::{Change, ChangeKind};
use crate::store::positions::ChangeSeq;

/// A kind of value kept here, and the shelf of the store that holds it.
pub trait Shelved: Sized {
    type Key: Hash + Eq + Clone;
    fn shelf(state: &mut State) -> &mut Shelf<Self>;
    /// What it holds in memory, near enough (measured once, when kept).
    fn bytes(&self) -> usize;
    /// Unix ms at which what it shows changes by itself (a link proof expiring).
    fn valid_until(&self) -> Option<i64>;
}

/// The values of one kind, least recently used first.
pub type Shelf<T> = LruCache<<T as Shelved>::Key, Entry<T>>;

pub struct Entry<T> {
    value: Arc<T>,
    valid_until: Option<i64>,
    bytes: usize,
    /// When it was last kept or read, on the store's clock: the budget evicts the oldest first,
    /// across shelves.
    used: u64,
}

pub struct State {
    pub(super) documents: Shelf<Document>,
    pub(super) agents: Shelf<AgentView>,
    pub(super) calls: Shelf<CallSummary>,
    bytes: usize,
    /// Ticks once per keep or hit.
    clock: u64,
    /// The newest change-log seq whose evictions are done.
    applied: ChangeSeq,
}

impl State {
    fn tick(&mut self) -> u64 {
        self.clock += 1;
        self.clock
    }

    fn remove<T: Shelved>(&mut self, key: &T::Key) {
        if let Some(gone) = T::shelf(self).pop(key) {
            self.bytes -= gone.bytes;
        }
    }

    /// Drops the least recently used value of any shelf; false when nothing is held.
    fn drop_oldest(&mut self) -> bool {
        fn oldest<T: Shelved>(shelf: &Shelf<T>) -> u64 {
            shelf.peek_lru().map_or(u64::MAX, |(_, e)| e.used)
        }
        let ages = [oldest(&self.documents), oldest(&self.agents), oldest(&self.calls)];
        let bytes = match ages.into_iter().enumerate().min_by_key(|(_, used)| *used) {
            Some((_, u64::MAX)) | None => return false,
            Some((0, _)) => self.documents.pop_lru().map(|(_, e)| e.bytes),
            Some((1, _)) => self.agents.pop_lru().map(|(_, e)| e.bytes),
            Some(_) => self.calls.pop_lru().map(|(_, e)| e.bytes),
        };
        self.bytes -= bytes.unwrap_or(0);
        true
    }

    fn len(&self) -> usize {
        self.documents.len() + self.agents.len() + self.calls.len()
    }
}

/// A document by its key (`Card(handle)`, `Call(id)`).
impl Shelved for Document {
    type Key = DocumentKey;

    fn shelf(state: &mut State) -> &mut Shelf<Self> {
        &mut state.documents
    }

    fn bytes(&self) -> usize {
        self.rendered.json.len() + self.rendered.etag.len() + std::mem::size_of::<Document>()
    }

    fn valid_until(&self) -> Option<i64> {
        self.valid_until
    }
}

/// The length of its JSON: what it holds in memory, near enough.
fn json_bytes<T: serde::Serialize>(value: &T) -> usize {
    serde_json::to_vec(value).map_or(0, |v| v.len()) + std::mem::size_of::<T>()
}

/// An agent by its key (`agents.id`).
impl Shelved for AgentView {
    type Key = i64;

    fn shelf(state: &mut State) -> &mut Shelf<Self> {
        &mut state.agents
    }

    fn bytes(&self) -> usize {
        json_bytes(self)
    }

    fn valid_until(&self) -> Option<i64> {
        AgentView::valid_until(self)
    }
}

/// A call by its key (`calls.seq`, `CallRow::key`).
impl Shelved for CallSummary {
    type Key = i64;

    fn shelf(state: &mut State) -> &mut Shelf<Self> {
        &mut state.calls
    }

    fn bytes(&self) -> usize {
        json_bytes(self)
    }

    fn valid_until(&self) -> Option<i64> {
        None
    }
}

/// The documents and items held, under one lock and one budget.
pub struct Cache {
    state: Mutex<State>,
    max_bytes: usize,
    pub hits: AtomicU64,
    pub misses: AtomicU64,
}

impl Cache {
    pub fn new(max_bytes: usize, applied: ChangeSeq) -> Cache {
        Cache {
            state: Mutex::new(State {
                documents: LruCache::unbounded(),
                agents: LruCache::unbounded(),
                calls: LruCache::unbounded(),
                bytes: 0,
                clock: 0,
                applied,
            }),
            max_bytes,
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// What is held under `key`, if still valid at `now`.
    pub fn get<T: Shelved>(&self, key: &T::Key, now: i64) -> Option<Arc<T>> {
        let mut state = self.lock();
        let used = state.tick();
        let found = match T::shelf(&mut state).get_mut(key) {
            Some(e) if e.valid_until.is_none_or(|until| now < until) => {
                e.used = used;
                Some(e.value.clone())
            }
            Some(_) => {
                state.remove::<T>(key);
                None
            }
            None => None,
        };
        drop(state);
        let counter = if found.is_some() { &self.hits } else { &self.misses };
        counter.fetch_add(1, Ordering::Relaxed);
        found
    }

    /// Keeps `value`, read from a snapshot that had seen every change up to `snapshot_seq`,
    /// unless the followers have already applied a newer change (which may concern it).
    pub fn keep<T: Shelved>(&self, key: T::Key, value: Arc<T>, key_bytes: usize, snapshot_seq: ChangeSeq) {
        if snapshot_seq < self.applied() {
            return;
        }
        let bytes = value.bytes() + key_bytes;
        if bytes > self.max_bytes {
            return;
        }
        let valid_until = value.valid_until();
        let mut state = self.lock();
        if snapshot_seq < state.applied {
            return;
        }
        let used = state.tick();
        if let Some(old) = T::shelf(&mut state).put(key, Entry { value, valid_until, bytes, used }) {
            state.bytes -= old.bytes;
        }
        state.bytes += bytes;
        while state.bytes > self.max_bytes && state.drop_oldest() {}
    }

    /// Forgets the documents and items that `changes` (read from the log up to `seq`) concern
    /// (called by the followers with every batch). A change at or below the store's position was
    /// evicted already, and every value kept since was read after it: the index's follower,
    /// which trails the writer, must not throw those current values away again.
    pub fn evict(&self, changes: &[Change], seq: ChangeSeq) {
        let mut state = self.lock();
        let done = state.applied;
        for change in changes.iter().filter(|c| c.seq > done) {
            match change.kind {
                ChangeKind::Agent => {
                    state.remove::<Document>(&DocumentKey::Card(change.id.as_str().into()));
                    state.remove::<AgentView>(&change.key);
                }
                ChangeKind::Call => {
                    state.remove::<Document>(&DocumentKey::Call(change.id.as_str().into()));
                    state.remove::<CallSummary>(&change.key);
                }
                ChangeKind::Collab => {}
            }
        }
        state.applied = state.applied.max(seq);
    }

    /// Forgets everything, as if every change up to `seq` had been evicted one by one.
    pub fn clear(&self, seq: ChangeSeq) {
        let mut state = self.lock();
        state.documents.clear();
        state.agents.clear();
        state.calls.clear();
        state.bytes = 0;
        state.applied = state.applied.max(seq);
    }

    /// The newest change-log seq whose evictions are done.
    pub fn applied(&self) -> ChangeSeq {
        self.lock().applied
    }

    /// Documents and items held, and the bytes they take.
    pub fn size(&self) -> (usize, usize) {
        let state = self.lock();
        (state.len(), state.bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::derived::rendered::Rendered;

    fn document(text: &str, valid_until: Option<i64>) -> Arc<Document> {
        Arc::new(Document {
            rendered: Rendered::of(&serde_json::json!({"text": text})).expect("renders"),
            valid_until,
        })
    }

    fn card(handle: &str) -> DocumentKey {
        DocumentKey::Card(handle.into())
    }

    fn keep(cache: &Cache, key: DocumentKey, value: Arc<Document>, seq: u64) {
        let key_bytes = key.bytes();
        cache.keep(key, value, key_bytes, ChangeSeq::new(seq));
    }

    fn change(seq: u64, kind: ChangeKind, id: &str, key: i64) -> Change {
        Change { seq: ChangeSeq::new(seq), kind, id: id.into(), key, at: 0 }
    }

    fn json_of(held: Option<Arc<Document>>) -> Option<axum::body::Bytes> {
        held.map(|d| d.rendered.json.clone())
    }

    #[test]
    fn a_document_rendered_before_an_applied_change_is_not_kept() {
        let cache = Cache::new(1 << 20, ChangeSeq::new(10));
        let current = document("current", None);
        keep(&cache, card("alice"), document("old", None), 9);
        assert!(cache.get::<Document>(&card("alice"), 0).is_none());
        keep(&cache, card("alice"), current.clone(), 10);
        assert_eq!(json_of(cache.get(&card("alice"), 0)), Some(current.rendered.json.clone()));
        cache.evict(&[change(11, ChangeKind::Agent, "alice", 1)], ChangeSeq::new(11));
        assert!(cache.get::<Document>(&card("alice"), 0).is_none());
        keep(&cache, card("alice"), document("rendered before 11", None), 10);
        assert!(cache.get::<Document>(&card("alice"), 0).is_none());
    }

    #[test]
    fn a_change_already_evicted_does_not_evict_the_document_rendered_after_it() {
        let cache = Cache::new(1 << 20, ChangeSeq::new(10));
        let after = document("after 11", None);
        cache.evict(&[change(11, ChangeKind::Agent, "alice", 1)], ChangeSeq::new(11));
        keep(&cache, card("alice"), after.clone(), 11);
        // The index's follower, trailing, reports the same change again.
        cache.evict(&[change(11, ChangeKind::Agent, "alice", 1)], ChangeSeq::new(11));
        assert_eq!(json_of(cache.get(&card("alice"), 0)), Some(after.rendered.json.clone()));
        cache.evict(&[change(12, ChangeKind::Agent, "alice", 1)], ChangeSeq::new(12));
        assert!(cache.get::<Document>(&card("alice"), 0).is_none());
    }

    #[test]
    fn a_change_evicts_the_document_and_the_item_of_its_entity_only() {
        let cache = Cache::new(1 << 20, ChangeSeq::new(0));
        keep(&cache, DocumentKey::Call("post_1".into()), document("call", None), 0);
        keep(&cache, DocumentKey::Call("post_2".into()), document("other call", None), 0);
        cache.evict(&[change(1, ChangeKind::Call, "post_1", 7)], ChangeSeq::new(1));
        assert!(cache.get::<Document>(&DocumentKey::Call("post_1".into()), 0).is_none());
        assert!(cache.get::<Document>(&DocumentKey::Call("post_2".into()), 0).is_some());
    }

    #[test]
    fn time_bound_documents_expire_and_bytes_stay_within_the_budget() {
        let key = DocumentKey::Call("post_1".into());
        let cache = Cache::new(1 << 20, ChangeSeq::new(0));
        keep(&cache, key.clone(), document("proof", Some(1_000)), 0);
        assert!(cache.get::<Document>(&key, 999).is_some());
        assert!(cache.get::<Document>(&key, 1_000).is_none());
        assert_eq!(cache.size(), (0, 0));

        let per_document = document(&"x".repeat(1000), None).bytes() + card("card-000").bytes();
        let small = Cache::new(per_document * 3, ChangeSeq::new(0));
        for i in 0..10 {
            keep(&small, card(&format!("card-{i:03}")), document(&"x".repeat(1000), None), 0);
            assert!(small.size().1 <= per_document * 3);
        }
        assert_eq!(small.size().0, 3);
        // The most recently kept survive.
        assert!(small.get::<Document>(&card("card-009"), 0).is_some());
        assert!(small.get::<Document>(&card("card-000"), 0).is_none());
    }
}
