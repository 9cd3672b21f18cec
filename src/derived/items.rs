//! List items: the public agents and the visible calls a page of results is assembled from,
//! each kept on its shelf of the cache as the core reads it, so a page reads only the rows it
//! has not met yet.

use std::collections::HashMap;
use std::sync::Arc;

use super::cache::{Cache, Shelved};
use crate::error::Result;
use crate::time::now_ms;

impl Cache {
    /// Items of a page, in the order of `keys`: each from memory when held, the rest read in
    /// one go by `load` and kept. Items that `load` does not return (no longer public) are left
    /// out.
    pub fn items<T: Shelved<Key = i64> + Clone>(
        &self,
        keys: &[i64],
        load: impl FnOnce(&[i64]) -> Result<Vec<(i64, T)>>,
    ) -> Result<Vec<T>> {
        let now = now_ms();
        let mut found: HashMap<i64, Arc<T>> = HashMap::with_capacity(keys.len());
        let mut missing = Vec::new();
        for &k in keys {
            match self.get::<T>(&k, now) {
                Some(item) => {
                    found.insert(k, item);
                }
                None => missing.push(k),
            }
        }
        if !missing.is_empty() {
            // Read before the rows: an eviction that lands meanwhile is newer, and refuses them.
            let seq = self.applied();
            for (k, item) in load(&missing)? {
                let item = Arc::new(item);
                self.keep(k, item.clone(), 0, seq);
                found.insert(k, item);
            }
        }
        Ok(keys.iter().filter_map(|k| found.get(k)).map(|item| T::clone(item)).collect())
    }
}
