//! Reads of what the core renders: a document (an agent's card, a call with its replies), from
//! memory when the cache holds it, else rendered from SQLite and kept; and the items a page of
//! results is assembled from (see `derived::documents`, `derived::items`).

use std::sync::Arc;

use super::App;
use crate::derived::documents::{Document, DocumentKey};
use crate::derived::views;
use crate::domain::agent::AgentView;
use crate::domain::call::CallSummary;
use crate::error::Result;
use crate::time::now_ms;

impl App {
    /// The document, from memory on the calling thread when held, else rendered on the blocking
    /// pool.
    pub async fn public_document(&self, key: DocumentKey) -> Result<Arc<Document>> {
        if let Some(document) = self.cached_document(&key)? {
            return Ok(document);
        }
        self.blocking(move |app| app.document(&key)).await
    }

    /// The document from memory, if held and current. Other processes' writes are followed
    /// first, so an operator's change or a verification by mail shows at once.
    pub fn cached_document(&self, key: &DocumentKey) -> Result<Option<Arc<Document>>> {
        self.catch_up_cache()?;
        Ok(self.cache.get::<Document>(key, now_ms()))
    }

    /// The document, from memory or rendered now (blocking: reads SQLite on a miss).
    pub fn document(&self, key: &DocumentKey) -> Result<Arc<Document>> {
        if let Some(document) = self.cached_document(key)? {
            return Ok(document);
        }
        let (document, seq) = Document::render(&*self.read()?, key)?;
        let document = Arc::new(document);
        self.cache.keep(key.clone(), document.clone(), key.bytes(), seq);
        Ok(document)
    }

    /// The public agents among `keys` (`agents.id`), in that order: a page of search results as
    /// readers see it.
    pub fn agent_items(&self, keys: &[i64]) -> Result<Vec<AgentView>> {
        let now = now_ms();
        self.cache.items(keys, |missing| views::agents_by_ids(&*self.read()?, missing, now))
    }

    /// The visible calls among `keys` (`calls.seq`, `CallRow::key`), in that order.
    pub fn call_items(&self, keys: &[i64]) -> Result<Vec<CallSummary>> {
        self.cache.items(keys, |missing| views::calls_by_keys(&*self.read()?, missing))
    }
}
