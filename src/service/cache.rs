//! Public views kept in memory: an agent's card and a call with its replies, as the bytes REST
//! serves, the ETag derived from them and the text MCP shows next to them; and the items of
//! lists and searches (an agent, a call), so a page of results is assembled without reading its
//! rows again. A hit touches no SQLite page.
//!
//! Exact invalidation follows the change log: the triggers record every entity a write changes
//! (a reply changes its call and its author's card, a confirmed collaboration both cards…), and
//! the followers evict exactly the views and items of those entities (the writer's before the
//! write is answered). A view rendered from a snapshot is only kept if no change the followers
//! have applied is newer than that snapshot, so a render racing a write can never leave a stale
//! view behind. A view that shows something time-bound (a link proof that expires) carries the
//! time it stops being valid.
//!
//! Memory is bounded by the bytes held; past the budget the least recently used views go.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use lru::LruCache;

use super::rendered::Rendered;
use crate::domain::agent::AgentView;
use crate::domain::call::CallSummary;

/// Which view.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ViewKey {
    /// `GET /api/agents/{handle}`.
    Card(Box<str>),
    /// `GET /api/posts/{id}`.
    Call(Box<str>),
    /// An agent as an item of a list, by its key (`agents.id`).
    AgentItem(i64),
    /// A call as an item of a list, by its key (`posts.seq`).
    CallItem(i64),
}

impl ViewKey {
    fn bytes(&self) -> usize {
        match self {
            ViewKey::Card(k) | ViewKey::Call(k) => k.len(),
            ViewKey::AgentItem(_) | ViewKey::CallItem(_) => 0,
        }
    }
}

/// A view as rendered once.
#[derive(Debug)]
pub struct View {
    pub rendered: Rendered,
    /// The short text an MCP client shows beside the structured result.
    pub text: String,
    /// Unix ms at which what the view shows changes by itself (a link proof expiring).
    pub valid_until: Option<i64>,
}

/// What is kept under a key.
#[derive(Debug, Clone)]
pub enum Cached {
    Page(Arc<View>),
    Agent(Arc<AgentView>),
    Call(Arc<CallSummary>),
}

impl Cached {
    fn valid_until(&self) -> Option<i64> {
        match self {
            Cached::Page(v) => v.valid_until,
            Cached::Agent(a) => a.valid_until(),
            Cached::Call(_) => None,
        }
    }

    /// What it holds in memory, near enough: for items, the length of their JSON (measured
    /// once, when kept after a miss).
    fn bytes(&self) -> usize {
        fn json_len<T: serde::Serialize>(value: &T) -> usize {
            serde_json::to_vec(value).map_or(0, |v| v.len())
        }
        match self {
            Cached::Page(v) => {
                v.rendered.json.len() + v.rendered.etag.len() + v.text.len() + std::mem::size_of::<View>()
            }
            Cached::Agent(a) => json_len(a.as_ref()) + std::mem::size_of::<AgentView>(),
            Cached::Call(c) => json_len(c.as_ref()) + std::mem::size_of::<CallSummary>(),
        }
    }
}

struct Entry {
    value: Cached,
    valid_until: Option<i64>,
    bytes: usize,
}

struct State {
    views: LruCache<ViewKey, Entry>,
    bytes: usize,
    /// The newest change-log seq whose evictions are done.
    applied: u64,
}

impl State {
    fn remove(&mut self, key: &ViewKey) {
        if let Some(gone) = self.views.pop(key) {
            self.bytes -= gone.bytes;
        }
    }
}

pub struct ViewCache {
    state: Mutex<State>,
    max_bytes: usize,
    pub hits: AtomicU64,
    pub misses: AtomicU64,
}

impl ViewCache {
    pub fn new(max_bytes: usize, applied: u64) -> ViewCache {
        ViewCache {
            state: Mutex::new(State { views: LruCache::unbounded(), bytes: 0, applied }),
            max_bytes,
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// What is held under `key`, if still valid at `now`.
    pub fn get(&self, key: &ViewKey, now: i64) -> Option<Cached> {
        let mut state = self.lock();
        let found = match state.views.get(key) {
            Some(e) if e.valid_until.is_none_or(|until| now < until) => Some(e.value.clone()),
            Some(_) => {
                state.remove(key);
                None
            }
            None => None,
        };
        drop(state);
        let counter = if found.is_some() { &self.hits } else { &self.misses };
        counter.fetch_add(1, Ordering::Relaxed);
        found
    }

    /// The rendered view held under `key`, if still valid at `now`.
    pub fn view(&self, key: &ViewKey, now: i64) -> Option<Arc<View>> {
        match self.get(key, now)? {
            Cached::Page(v) => Some(v),
            Cached::Agent(_) | Cached::Call(_) => None,
        }
    }

    /// Keeps `value`, read from a snapshot that had seen every change up to `snapshot_seq`,
    /// unless the followers have already applied a newer change (which may concern it).
    pub fn keep(&self, key: ViewKey, value: Cached, snapshot_seq: u64) {
        if snapshot_seq < self.applied() {
            return;
        }
        let bytes = value.bytes() + key.bytes();
        if bytes > self.max_bytes {
            return;
        }
        let valid_until = value.valid_until();
        let mut state = self.lock();
        if snapshot_seq < state.applied {
            return;
        }
        if let Some(old) = state.views.put(key, Entry { value, valid_until, bytes }) {
            state.bytes -= old.bytes;
        }
        state.bytes += bytes;
        while state.bytes > self.max_bytes {
            match state.views.pop_lru() {
                Some((_, e)) => state.bytes -= e.bytes,
                None => break,
            }
        }
    }

    /// Forgets the views that the changes (seq, view) up to `seq` concern (called by the
    /// followers with every batch). A change at or below the cache's position was evicted
    /// already, and every view kept since was rendered after it: the index's follower, which
    /// trails the writer, must not throw those current views away again.
    pub fn evict(&self, changes: impl IntoIterator<Item = (u64, ViewKey)>, seq: u64) {
        let mut state = self.lock();
        let done = state.applied;
        for (_, key) in changes.into_iter().filter(|(changed, _)| *changed > done) {
            state.remove(&key);
        }
        state.applied = state.applied.max(seq);
    }

    /// Forgets every view, as if every change up to `seq` had been evicted one by one.
    pub fn clear(&self, seq: u64) {
        let mut state = self.lock();
        state.views.clear();
        state.bytes = 0;
        state.applied = state.applied.max(seq);
    }

    /// The newest change-log seq whose evictions are done.
    pub fn applied(&self) -> u64 {
        self.lock().applied
    }

    /// Views held and the bytes they take.
    pub fn size(&self) -> (usize, usize) {
        let state = self.lock();
        (state.views.len(), state.bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(text: &str, valid_until: Option<i64>) -> Cached {
        Cached::Page(Arc::new(View {
            rendered: Rendered::of(&serde_json::json!({"text": text})).expect("renders"),
            text: text.to_owned(),
            valid_until,
        }))
    }

    #[test]
    fn a_view_rendered_before_an_applied_change_is_not_kept() {
        let cache = ViewCache::new(1 << 20, 10);
        let key = ViewKey::Card("alice".into());
        cache.keep(key.clone(), view("old", None), 9);
        assert!(cache.get(&key, 0).is_none());
        cache.keep(key.clone(), view("current", None), 10);
        assert_eq!(cache.view(&key, 0).expect("kept").text, "current");
        cache.evict([(11, key.clone())], 11);
        assert!(cache.get(&key, 0).is_none());
        cache.keep(key.clone(), view("rendered before 11", None), 10);
        assert!(cache.get(&key, 0).is_none());
    }

    #[test]
    fn a_change_already_evicted_does_not_evict_the_view_rendered_after_it() {
        let cache = ViewCache::new(1 << 20, 10);
        let key = ViewKey::Card("alice".into());
        cache.evict([(11, key.clone())], 11);
        cache.keep(key.clone(), view("after 11", None), 11);
        // The index's follower, trailing, reports the same change again.
        cache.evict([(11, key.clone())], 11);
        assert_eq!(cache.view(&key, 0).expect("still kept").text, "after 11");
        cache.evict([(12, key.clone())], 12);
        assert!(cache.get(&key, 0).is_none());
    }

    #[test]
    fn time_bound_views_expire_and_bytes_stay_within_the_budget() {
        let key = ViewKey::Call("post_1".into());
        let cache = ViewCache::new(1 << 20, 0);
        cache.keep(key.clone(), view("proof", Some(1_000)), 0);
        assert!(cache.get(&key, 999).is_some());
        assert!(cache.get(&key, 1_000).is_none());
        assert_eq!(cache.size(), (0, 0));

        let one = view(&"x".repeat(1000), None);
        let per_view = one.bytes() + "card-000".len();
        let small = ViewCache::new(per_view * 3, 0);
        for i in 0..10 {
            small.keep(ViewKey::Card(format!("card-{i:03}").into()), view(&"x".repeat(1000), None), 0);
            assert!(small.size().1 <= per_view * 3);
        }
        assert_eq!(small.size().0, 3);
        // The most recently kept survive.
        assert!(small.get(&ViewKey::Card("card-009".into()), 0).is_some());
        assert!(small.get(&ViewKey::Card("card-000".into()), 0).is_none());
    }
}
