//! Rendered documents: an agent's card and a call with its replies, as the bytes REST serves and
//! the ETag derived from them, for REST and MCP alike. A hit is answered without leaving the
//! calling thread; a miss renders the document from one SQLite snapshot and keeps it when it is
//! current (see the parent module for the race rules).

use std::sync::Arc;

use super::cache::{Shelf, Shelved, State};
use super::rendered::Rendered;
use crate::app::App;
use crate::error::Result;
use crate::service::{agents, calls};
use crate::store::changes;
use crate::time::now_ms;

/// Which document.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum DocumentKey {
    /// `GET /api/agents/{handle}`.
    Card(Box<str>),
    /// `GET /api/posts/{id}`.
    Call(Box<str>),
}

impl DocumentKey {
    /// What the key itself holds in memory.
    pub fn bytes(&self) -> usize {
        match self {
            DocumentKey::Card(k) | DocumentKey::Call(k) => k.len(),
        }
    }
}

/// A document as rendered once.
#[derive(Debug)]
pub struct Document {
    pub rendered: Rendered,
    /// Unix ms at which what the document shows changes by itself (a link proof expiring).
    pub valid_until: Option<i64>,
}

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
        let conn = self.read()?;
        let snapshot = conn.unchecked_transaction()?;
        let seq = changes::max_seq(&snapshot)?;
        let document = match key {
            DocumentKey::Card(handle) => {
                let card = agents::card(&snapshot, handle, now_ms())?;
                Document { rendered: Rendered::of(&card)?, valid_until: card.agent.valid_until() }
            }
            DocumentKey::Call(id) => {
                let call = calls::call_detail(&snapshot, id)?;
                Document { rendered: Rendered::of(&call)?, valid_until: None }
            }
        };
        drop(snapshot);
        let document = Arc::new(document);
        self.cache.keep(key.clone(), document.clone(), key.bytes(), seq);
        Ok(document)
    }
}
