//! Rendered public views kept in memory: an agent's card and a call with its replies, as the
//! bytes REST serves, the ETag derived from them and the text MCP shows next to them. A hit
//! touches no SQLite page.
//!
//! Exact invalidation follows the change log: the triggers record every view a write changes
//! (a reply changes its call and its author's card, a confirmed collaboration both cards…), and
//! the follower evicts exactly those views before the write is answered. A view rendered from a
//! snapshot is only kept if no change the follower has applied is newer than that snapshot, so a
//! render racing a write can never leave a stale view behind. A view that shows something
//! time-bound (a link proof that expires) carries the time it stops being valid.
//!
//! Memory is bounded by the bytes held; past the budget the least recently used views go.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use lru::LruCache;

use super::rendered::Rendered;

/// Which view.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ViewKey {
    /// `GET /api/agents/{handle}`.
    Card(Box<str>),
    /// `GET /api/posts/{id}`.
    Call(Box<str>),
}

impl ViewKey {
    fn bytes(&self) -> usize {
        match self {
            ViewKey::Card(k) | ViewKey::Call(k) => k.len(),
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

impl View {
    fn bytes(&self) -> usize {
        self.rendered.json.len() + self.rendered.etag.len() + self.text.len() + std::mem::size_of::<View>()
    }
}

struct State {
    views: LruCache<ViewKey, Arc<View>>,
    bytes: usize,
    /// The newest change-log seq whose evictions are done.
    applied: u64,
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

    /// The view, if held and still valid at `now`.
    pub fn get(&self, key: &ViewKey, now: i64) -> Option<Arc<View>> {
        let mut state = self.lock();
        let found = match state.views.get(key) {
            Some(v) if v.valid_until.is_none_or(|until| now < until) => Some(v.clone()),
            Some(_) => {
                if let Some(gone) = state.views.pop(key) {
                    state.bytes -= gone.bytes() + key.bytes();
                }
                None
            }
            None => None,
        };
        drop(state);
        let counter = if found.is_some() { &self.hits } else { &self.misses };
        counter.fetch_add(1, Ordering::Relaxed);
        found
    }

    /// Keeps `view`, rendered from a snapshot that had seen every change up to `snapshot_seq`,
    /// unless the follower has already applied a newer change (which may concern this view).
    pub fn keep(&self, key: ViewKey, view: Arc<View>, snapshot_seq: u64) {
        let size = view.bytes() + key.bytes();
        if size > self.max_bytes {
            return;
        }
        let mut state = self.lock();
        if snapshot_seq < state.applied {
            return;
        }
        if let Some(old) = state.views.put(key.clone(), view) {
            state.bytes -= old.bytes() + key.bytes();
        }
        state.bytes += size;
        while state.bytes > self.max_bytes {
            match state.views.pop_lru() {
                Some((k, v)) => state.bytes -= v.bytes() + k.bytes(),
                None => break,
            }
        }
    }

    /// Forgets the views changed up to `seq` (called by the follower with every batch).
    pub fn evict(&self, keys: impl IntoIterator<Item = ViewKey>, seq: u64) {
        let mut state = self.lock();
        for key in keys {
            if let Some(gone) = state.views.pop(&key) {
                state.bytes -= gone.bytes() + key.bytes();
            }
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

    fn view(text: &str, valid_until: Option<i64>) -> Arc<View> {
        Arc::new(View {
            rendered: Rendered::of(&serde_json::json!({"text": text})).expect("renders"),
            text: text.to_owned(),
            valid_until,
        })
    }

    #[test]
    fn a_view_rendered_before_an_applied_change_is_not_kept() {
        let cache = ViewCache::new(1 << 20, 10);
        let key = ViewKey::Card("alice".into());
        cache.keep(key.clone(), view("old", None), 9);
        assert!(cache.get(&key, 0).is_none());
        cache.keep(key.clone(), view("current", None), 10);
        assert_eq!(cache.get(&key, 0).expect("kept").text, "current");
        cache.evict([key.clone()], 11);
        assert!(cache.get(&key, 0).is_none());
        cache.keep(key.clone(), view("rendered before 11", None), 10);
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
