//! A small result cache per index: the first pages of recent searches, valid for one reader
//! generation only.
//!
//! Why: a directory sees the same popular searches over and over, and a query over words that
//! appear in most documents must score every one of them to produce an exact total. Between two
//! commits the answer cannot change, so it is computed once. Entries are tied to the searcher
//! generation: `apply`/`rebuild` reload the reader, which makes a new generation, and the first
//! lookup that sees it drops every older entry — read-your-writes is unaffected.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// How many leading keys are computed and kept per cached search, so that paging through the
/// first pages is served from one computation.
pub(crate) const DEPTH: usize = 200;

/// What identifies a search: the target, the trimmed text and every filter, normalised.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Key {
    pub target: Target,
    pub text: Option<String>,
    pub exact: [Option<String>; 3],
    pub verified: Option<bool>,
    pub live: Option<bool>,
    pub min_level: Option<u64>,
    pub joined_since: Option<i64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Target {
    Agents,
    Calls,
}

#[derive(Debug)]
pub(crate) struct Entry {
    pub total: u64,
    /// The first `min(total, DEPTH)` keys in order.
    pub keys: Vec<u64>,
}

impl Entry {
    /// The requested page if this entry covers it.
    pub(crate) fn page(&self, offset: usize, limit: usize) -> Option<crate::Page> {
        let complete = self.keys.len() as u64 >= self.total;
        let end = offset.saturating_add(limit);
        if !complete && end > self.keys.len() {
            return None;
        }
        Some(crate::Page {
            total: self.total,
            keys: self.keys.iter().skip(offset).take(limit).copied().collect(),
        })
    }
}

struct Inner {
    generation: u64,
    tick: u64,
    map: HashMap<Key, (Arc<Entry>, u64)>,
}

pub(crate) struct ResultCache {
    capacity: AtomicUsize,
    inner: Mutex<Inner>,
}

impl ResultCache {
    pub(crate) fn new(capacity: usize) -> Self {
        ResultCache {
            capacity: AtomicUsize::new(capacity),
            inner: Mutex::new(Inner { generation: 0, tick: 0, map: HashMap::new() }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // The map is always left consistent; a panic elsewhere cannot corrupt it.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn set_capacity(&self, capacity: usize) {
        self.capacity.store(capacity, Ordering::Relaxed);
        self.lock().map.clear();
    }

    pub(crate) fn enabled(&self) -> bool {
        self.capacity.load(Ordering::Relaxed) > 0
    }

    pub(crate) fn get(&self, generation: u64, key: &Key) -> Option<Arc<Entry>> {
        if self.capacity.load(Ordering::Relaxed) == 0 {
            return None;
        }
        let mut inner = self.lock();
        if inner.generation != generation {
            if generation > inner.generation {
                inner.generation = generation;
                inner.map.clear();
            }
            return None;
        }
        inner.tick += 1;
        let tick = inner.tick;
        inner.map.get_mut(key).map(|(entry, used)| {
            *used = tick;
            entry.clone()
        })
    }

    pub(crate) fn insert(&self, generation: u64, key: Key, entry: Arc<Entry>) {
        let capacity = self.capacity.load(Ordering::Relaxed);
        if capacity == 0 {
            return;
        }
        let mut inner = self.lock();
        if generation > inner.generation {
            inner.generation = generation;
            inner.map.clear();
        } else if generation < inner.generation {
            return;
        }
        if inner.map.len() >= capacity {
            // Evict the least recently used quarter in one sweep, so eviction stays rare.
            let mut ticks: Vec<u64> = inner.map.values().map(|(_, t)| *t).collect();
            let cut = ticks.len() / 4;
            ticks.select_nth_unstable(cut);
            let limit = ticks[cut];
            inner.map.retain(|_, (_, t)| *t > limit);
        }
        inner.tick += 1;
        let tick = inner.tick;
        inner.map.insert(key, (entry, tick));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(t: &str) -> Key {
        Key {
            target: Target::Agents,
            text: Some(t.into()),
            exact: [None, None, None],
            verified: None,
            live: None,
            min_level: None,
            joined_since: None,
        }
    }

    fn entry(total: u64, n: u64) -> Arc<Entry> {
        Arc::new(Entry { total, keys: (0..n).collect() })
    }

    #[test]
    fn entries_die_with_their_generation() {
        let c = ResultCache::new(10);
        c.insert(1, key("a"), entry(1, 1));
        assert!(c.get(1, &key("a")).is_some());
        assert!(c.get(2, &key("a")).is_none());
        assert!(c.get(1, &key("a")).is_none(), "an older reader must not revive it");
        c.insert(1, key("b"), entry(1, 1));
        assert!(c.get(2, &key("b")).is_none(), "stale inserts are dropped");
    }

    #[test]
    fn eviction_keeps_recent_entries() {
        let c = ResultCache::new(8);
        for i in 0..8 {
            c.insert(1, key(&i.to_string()), entry(1, 1));
        }
        assert!(c.get(1, &key("7")).is_some());
        c.insert(1, key("new"), entry(1, 1));
        assert!(c.get(1, &key("new")).is_some());
        assert!(c.get(1, &key("7")).is_some());
        assert!(c.get(1, &key("0")).is_none());
    }

    #[test]
    fn pages_are_served_only_when_covered() {
        let e = entry(1000, 200);
        assert_eq!(e.page(190, 10).map(|p| p.keys.len()), Some(10));
        assert!(e.page(195, 10).is_none());
        let small = entry(5, 5);
        assert_eq!(small.page(3, 10).map(|p| p.keys), Some(vec![3, 4]));
        assert_eq!(small.page(usize::MAX, 10).map(|p| (p.total, p.keys.len())), Some((5, 0)));
    }
}
