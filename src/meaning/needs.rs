//! The needs read lately, with their vectors. A client that pages through the agents for one
//! need, or many clients asking the same popular need, would otherwise pay the model (~5 ms of
//! a core) for every page; remembered, a need costs no embedding and no place in the budget, so
//! page two is ranked by meaning whenever page one was, even under load.
//!
//! A need's vector depends on its text and the model only, so a remembered one is never stale.

use std::num::NonZeroUsize;
use std::sync::Mutex;

use agentdir_meaning::Quantized;
use lru::LruCache;

/// Needs remembered, least recently used out first: ~400 bytes of vector each.
pub const NEEDS_REMEMBERED: usize = 4_096;

pub struct Needs {
    /// `None` when remembering is off (capacity 0: the search benchmark measures without it).
    vectors: Mutex<Option<LruCache<String, Quantized>>>,
}

impl Default for Needs {
    fn default() -> Self {
        let needs = Needs { vectors: Mutex::new(None) };
        needs.set_capacity(NEEDS_REMEMBERED);
        needs
    }
}

impl Needs {
    /// The vector of `text` if it was read lately.
    pub fn get(&self, text: &str) -> Option<Quantized> {
        self.lock().as_mut()?.get(text).cloned()
    }

    pub fn put(&self, text: &str, vector: &Quantized) {
        if let Some(cache) = self.lock().as_mut() {
            cache.put(text.to_string(), vector.clone());
        }
    }

    /// How many needs are remembered at most; 0 turns remembering off and forgets them all.
    pub fn set_capacity(&self, entries: usize) {
        *self.lock() = NonZeroUsize::new(entries).map(LruCache::new);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<LruCache<String, Quantized>>> {
        self.vectors.lock().unwrap_or_else(|e| e.into_inner())
    }
}
