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
//! Memory is bounded by the bytes held, documents and items together (`view_cache_bytes`): one
//! budget, one store for the three kinds of value. Past the budget the coldest go, whichever
//! kind they are: a value kept and never read again before one that is read.
//!
//! A read takes no process-wide lock: the store is `quick_cache`'s, split into shards by key,
//! and a hit takes a read lock of its shard whose readers are spread over per-thread slots
//! (its `sharded-lock` feature), then marks the value as used only while the mark is not yet
//! set; so reads of one hot card on every core touch no shared cache line but the value's
//! reference count. Keeps and evictions take turns on one mutex of their own (`turns`): a
//! keep's check against the applied seq and its insert are one step against an eviction,
//! which is what keeps an older render from overwriting a newer one. Reads never take it.
//!
//! Why `quick_cache` and not `moka`: moka's hit also records the read for its policy (an entry
//! of a bounded channel every thread pushes to, drained by whichever thread gets the
//! housekeeping lock) and stamps the entry's last access, two writes to shared lines per hit;
//! `cargo run --release -p agentdir-bench --bin cache` measures both (README, "Reads from many
//! threads").

use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use quick_cache::sync::DefaultLifecycle;
use quick_cache::{DefaultHashBuilder, Equivalent, OptionsBuilder, Weighter};

use super::documents::{Document, DocumentKey};
use crate::domain::agent::AgentView;
use crate::domain::call::CallSummary;
use crate::store::changes::{Change, ChangeKind};
use crate::store::positions::ChangeSeq;

/// A kind of value kept here: how its key and its value are held in the one store.
pub trait Shelved: Sized {
    type Key: Hash + Eq + Clone;
    /// Its key as the store holds it.
    fn key(key: Self::Key) -> Key;
    /// Its key as a lookup sees it (borrowed: a read allocates nothing).
    fn lookup(key: &Self::Key) -> Lookup<'_>;
    fn held(value: Arc<Self>) -> Value;
    fn unheld(value: Value) -> Option<Arc<Self>>;
    /// What it holds in memory, near enough (measured once, when kept).
    fn bytes(&self) -> usize;
    /// Unix ms at which what it shows changes by itself (a link proof expiring).
    fn valid_until(&self) -> Option<i64>;
}

/// What a value is kept under: its kind and its key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Key {
    Document(DocumentKey),
    Agent(i64),
    Call(i64),
}

impl Key {
    fn lookup(&self) -> Lookup<'_> {
        match self {
            Key::Document(key) => Lookup::Document(key),
            Key::Agent(key) => Lookup::Agent(*key),
            Key::Call(key) => Lookup::Call(*key),
        }
    }
}

/// A key as looked up: hashes as the `Key` it stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Lookup<'a> {
    Document(&'a DocumentKey),
    Agent(i64),
    Call(i64),
}

impl Hash for Key {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.lookup().hash(state);
    }
}

impl Equivalent<Key> for Lookup<'_> {
    fn equivalent(&self, key: &Key) -> bool {
        *self == key.lookup()
    }
}

/// A value kept.
#[derive(Clone)]
pub enum Value {
    Document(Arc<Document>),
    Agent(Arc<AgentView>),
    Call(Arc<CallSummary>),
}

impl Value {
    fn same(&self, other: &Value) -> bool {
        match (self, other) {
            (Value::Document(a), Value::Document(b)) => Arc::ptr_eq(a, b),
            (Value::Agent(a), Value::Agent(b)) => Arc::ptr_eq(a, b),
            (Value::Call(a), Value::Call(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

/// A value with what the store needs to know of it.
#[derive(Clone)]
pub struct Entry {
    value: Value,
    valid_until: Option<i64>,
    bytes: u64,
}

/// The budget counts bytes.
#[derive(Clone)]
struct ByBytes;

impl Weighter<Key, Entry> for ByBytes {
    fn weight(&self, _: &Key, entry: &Entry) -> u64 {
        entry.bytes
    }
}

/// A document by its key (`Card(handle)`, `Call(id)`).
impl Shelved for Document {
    type Key = DocumentKey;

    fn key(key: DocumentKey) -> Key {
        Key::Document(key)
    }

    fn lookup(key: &DocumentKey) -> Lookup<'_> {
        Lookup::Document(key)
    }

    fn held(value: Arc<Self>) -> Value {
        Value::Document(value)
    }

    fn unheld(value: Value) -> Option<Arc<Self>> {
        match value {
            Value::Document(v) => Some(v),
            _ => None,
        }
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

    fn key(key: i64) -> Key {
        Key::Agent(key)
    }

    fn lookup(key: &i64) -> Lookup<'_> {
        Lookup::Agent(*key)
    }

    fn held(value: Arc<Self>) -> Value {
        Value::Agent(value)
    }

    fn unheld(value: Value) -> Option<Arc<Self>> {
        match value {
            Value::Agent(v) => Some(v),
            _ => None,
        }
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

    fn key(key: i64) -> Key {
        Key::Call(key)
    }

    fn lookup(key: &i64) -> Lookup<'_> {
        Lookup::Call(*key)
    }

    fn held(value: Arc<Self>) -> Value {
        Value::Call(value)
    }

    fn unheld(value: Value) -> Option<Arc<Self>> {
        match value {
            Value::Call(v) => Some(v),
            _ => None,
        }
    }

    fn bytes(&self) -> usize {
        json_bytes(self)
    }

    fn valid_until(&self) -> Option<i64> {
        None
    }
}

/// The budget a shard gets at least: a shard refuses a value heavier than its share, and a call
/// with many replies renders to far more than a card.
pub const MIN_SHARD_BYTES: usize = 4 << 20;
/// What a value takes, on average, for sizing the store's tables (a card is about 2 KB).
const TYPICAL_VALUE_BYTES: usize = 2 << 10;

/// Shards: four per core (as `quick_cache` chooses), fewer when the budget is small, a power of
/// two.
fn shards(max_bytes: usize) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let by_budget = (max_bytes / MIN_SHARD_BYTES).max(1);
    let most = (cores * 4).next_power_of_two().min(by_budget);
    // The largest power of two not above `most`.
    1 << most.ilog2()
}

type Store = quick_cache::sync::Cache<Key, Entry, ByBytes, DefaultHashBuilder, DefaultLifecycle<Key, Entry>>;

/// The documents and items held, under one budget; see the module's documentation.
pub struct Cache {
    held: Store,
    max_bytes: usize,
    /// Keeps and evictions take turns here, reads never.
    turns: Mutex<()>,
    /// The newest change-log seq whose evictions are done.
    applied: AtomicU64,
    hits: Tally,
    misses: Tally,
    /// Tests: run once by the next keep, between its first check and its turn.
    #[cfg(test)]
    between: Mutex<Option<Box<dyn FnOnce() + Send>>>,
}

impl Cache {
    pub fn new(max_bytes: usize, applied: ChangeSeq) -> Cache {
        let options = OptionsBuilder::new()
            .shards(shards(max_bytes))
            .weight_capacity(max_bytes as u64)
            .estimated_items_capacity((max_bytes / TYPICAL_VALUE_BYTES).max(16))
            .build()
            .unwrap_or_else(|e| unreachable!("shards and capacities are set: {e}"));
        Cache {
            held: Store::with_options(
                options,
                ByBytes,
                DefaultHashBuilder::default(),
                DefaultLifecycle::default(),
            ),
            max_bytes,
            turns: Mutex::new(()),
            applied: AtomicU64::new(applied.get()),
            hits: Tally::default(),
            misses: Tally::default(),
            #[cfg(test)]
            between: Mutex::new(None),
        }
    }

    fn turn(&self) -> MutexGuard<'_, ()> {
        self.turns.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// What is held under `key`, if still valid at `now`.
    pub fn get<T: Shelved>(&self, key: &T::Key, now: i64) -> Option<Arc<T>> {
        let lookup = T::lookup(key);
        let found = match self.held.get(&lookup) {
            Some(entry) if entry.valid_until.is_none_or(|until| now < until) => T::unheld(entry.value),
            Some(expired) => {
                // Only that value: one kept meanwhile is current.
                self.held.remove_if(&lookup, |entry| entry.value.same(&expired.value));
                None
            }
            None => None,
        };
        if found.is_some() { &self.hits } else { &self.misses }.add();
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
        let entry = Entry { valid_until: value.valid_until(), value: T::held(value), bytes: bytes as u64 };
        #[cfg(test)]
        {
            // Taken out first: the hook waits for a keep of the test's own, which looks here too.
            let between = self.between.lock().unwrap_or_else(|e| e.into_inner()).take();
            if let Some(between) = between {
                between();
            }
        }
        let _turn = self.turn();
        // Checked again in turn: an eviction that started since has applied a newer seq.
        if snapshot_seq < self.applied() {
            return;
        }
        self.held.insert(T::key(key), entry);
    }

    /// Forgets the documents and items that `changes` (read from the log up to `seq`) concern
    /// (called by the followers with every batch). A change at or below the store's position was
    /// evicted already, and every value kept since was read after it: the index's follower,
    /// which trails the writer, must not throw those current values away again.
    pub fn evict(&self, changes: &[Change], seq: ChangeSeq) {
        let _turn = self.turn();
        let done = self.applied();
        for change in changes.iter().filter(|c| c.seq > done) {
            match change.kind {
                ChangeKind::Agent => {
                    let card = DocumentKey::Card(change.id.as_str().into());
                    self.held.remove(&Lookup::Document(&card));
                    self.held.remove(&Lookup::Agent(change.key));
                }
                ChangeKind::Call => {
                    let call = DocumentKey::Call(change.id.as_str().into());
                    self.held.remove(&Lookup::Document(&call));
                    self.held.remove(&Lookup::Call(change.key));
                }
                ChangeKind::Collab => {}
            }
        }
        self.applied.fetch_max(seq.get(), Ordering::AcqRel);
    }

    /// Forgets everything, as if every change up to `seq` had been evicted one by one.
    pub fn clear(&self, seq: ChangeSeq) {
        let _turn = self.turn();
        self.held.clear();
        self.applied.fetch_max(seq.get(), Ordering::AcqRel);
    }

    /// The newest change-log seq whose evictions are done.
    pub fn applied(&self) -> ChangeSeq {
        ChangeSeq::new(self.applied.load(Ordering::Acquire))
    }

    /// Documents and items held, and the bytes they take.
    pub fn size(&self) -> (usize, usize) {
        (self.held.len(), self.held.weight() as usize)
    }

    /// Reads answered from memory.
    pub fn hits(&self) -> u64 {
        self.hits.sum()
    }

    /// Reads that found nothing current.
    pub fn misses(&self) -> u64 {
        self.misses.sum()
    }
}

/// Cells of a `Tally`.
const TALLY_CELLS: usize = 16;

/// A count that every core adds to: one cell per thread slot, each on a cache line of its own,
/// so counting does not pass one line from core to core on every read.
#[derive(Default)]
struct Tally([Cell; TALLY_CELLS]);

#[derive(Default)]
#[repr(align(128))]
struct Cell(AtomicU64);

impl Tally {
    fn add(&self) {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        thread_local! {
            static SLOT: usize = NEXT.fetch_add(1, Ordering::Relaxed) as usize % TALLY_CELLS;
        }
        let slot = SLOT.with(|slot| *slot);
        self.0[slot].0.fetch_add(1, Ordering::Relaxed);
    }

    fn sum(&self) -> u64 {
        self.0.iter().map(|cell| cell.0.load(Ordering::Relaxed)).sum()
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
        for i in 0..3 {
            keep(&small, card(&format!("card-{i:03}")), document(&"x".repeat(1000), None), 0);
        }
        // Read once since it was kept: it outlives the values kept after it and never read.
        assert!(small.get::<Document>(&card("card-002"), 0).is_some());
        for i in 3..10 {
            keep(&small, card(&format!("card-{i:03}")), document(&"x".repeat(1000), None), 0);
            assert!(small.size().1 <= per_document * 3);
        }
        assert_eq!(small.size().0, 3);
        assert!(small.get::<Document>(&card("card-002"), 0).is_some());
        assert!(small.get::<Document>(&card("card-009"), 0).is_some(), "the newest is held");
        for gone in ["card-000", "card-005", "card-008"] {
            assert!(small.get::<Document>(&card(gone), 0).is_none(), "{gone} was never read");
        }
    }

    /// The race the turns exist for: an eviction lands after a keep checked the applied seq and
    /// before it inserts, and keeps the newer render. The older one must not overwrite it.
    #[test]
    fn an_eviction_between_a_keeps_check_and_its_insert_leaves_the_newer_render() {
        use std::sync::mpsc;

        let cache = Arc::new(Cache::new(1 << 20, ChangeSeq::new(10)));
        let (reached, at_the_point) = mpsc::channel();
        let (go, wait) = mpsc::channel::<()>();
        *cache.between.lock().expect("hook") = Some(Box::new(move || {
            reached.send(()).expect("test waits");
            wait.recv().expect("test answers");
        }));
        let older = {
            let cache = cache.clone();
            std::thread::spawn(move || keep(&cache, card("alice"), document("rendered at 10", None), 10))
        };
        at_the_point.recv().expect("the keep reached its insert");
        cache.evict(&[change(11, ChangeKind::Agent, "alice", 1)], ChangeSeq::new(11));
        let newer = document("rendered at 11", None);
        keep(&cache, card("alice"), newer.clone(), 11);
        go.send(()).expect("the keep waits");
        older.join().expect("the older keep");
        assert_eq!(json_of(cache.get(&card("alice"), 0)), Some(newer.rendered.json.clone()));
    }
}
