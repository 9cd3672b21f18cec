//! The needs read lately, with their vectors. A client that pages through the agents for one
//! need, or many clients asking the same popular need, would otherwise pay the model (~5 ms of
//! a core) for every page; remembered, a need costs no embedding and nothing of its share, so
//! page two is ranked by meaning whenever page one was, even under load.
//!
//! A need's vector depends on the part of its text the model reads and on the model only, so a
//! remembered one is never stale. Needs are remembered by a digest of that part, never by their
//! text: a need may be up to 60 KB long (MCP), and 4,096 of them would otherwise pin ~250 MB.

use std::num::NonZeroUsize;
use std::sync::Mutex;

use agentdir_meaning::{Quantized, need_part};
use lru::LruCache;
use sha2::{Digest, Sha256};

/// Needs remembered, least recently used out first: ~450 bytes each (the vector and its digest),
/// whatever the need's length.
pub const NEEDS_REMEMBERED: usize = 4_096;

/// What a need is remembered by: the digest of the part of it the model is given
/// (`agentdir_meaning::need_part`, of which it reads one window).
type NeedKey = [u8; 32];

/// A need as an encoder read it: its vector, and the tokens the model reads for it (what it
/// costs, and how long it is: a long need's similarities run lower).
#[derive(Debug, Clone, PartialEq)]
pub struct ReadNeed {
    pub vector: Quantized,
    pub tokens: u32,
}

pub struct Needs {
    /// `None` when remembering is off (capacity 0: the search benchmark measures without it).
    vectors: Mutex<Option<LruCache<NeedKey, ReadNeed>>>,
}

impl Default for Needs {
    fn default() -> Self {
        let needs = Needs { vectors: Mutex::new(None) };
        needs.set_capacity(NEEDS_REMEMBERED);
        needs
    }
}

fn key(text: &str) -> NeedKey {
    Sha256::digest(need_part(text).as_bytes()).into()
}

impl Needs {
    /// The need `text` as it was read, if it was read lately.
    pub fn get(&self, text: &str) -> Option<ReadNeed> {
        let key = key(text);
        self.lock().as_mut()?.get(&key).cloned()
    }

    pub fn put(&self, text: &str, need: &ReadNeed) {
        let key = key(text);
        if let Some(cache) = self.lock().as_mut() {
            cache.put(key, need.clone());
        }
    }

    /// How many needs are remembered at most; 0 turns remembering off and forgets them all.
    pub fn set_capacity(&self, entries: usize) {
        *self.lock() = NonZeroUsize::new(entries).map(LruCache::new);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<LruCache<NeedKey, ReadNeed>>> {
        self.vectors.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_need_is_remembered_by_what_the_model_reads_of_it() {
        let needs = Needs::default();
        let v = ReadNeed {
            vector: Quantized { scale: 1.0, values: vec![1; agentdir_meaning::DIM] },
            tokens: 512,
        };
        let long = "x".repeat(60_000);
        needs.put(&long, &v);
        // Past the part the model is given, two needs are one need.
        let mut other = "x".repeat(agentdir_meaning::MAX_NEED_CHARS);
        other.push_str("something else entirely");
        assert_eq!(needs.get(&other), Some(v.clone()));
        assert_eq!(needs.get("x"), None);
        // A NUL is read as a space.
        needs.put("a\0b", &v);
        assert_eq!(needs.get("a b"), Some(v));
    }
}
