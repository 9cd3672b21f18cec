//! Rendered documents: an agent's card and a call with its replies, as the bytes REST serves and
//! the ETag derived from them, for REST and MCP alike, each rendered from one SQLite snapshot
//! and kept on the cache's shelf of documents while it is current (see `cache` for the race
//! rules). The reads that serve them are `service::documents`.

use rusqlite::Connection;

use super::rendered::Rendered;
use super::views;
use crate::error::Result;
use crate::store::changes;
use crate::store::positions::ChangeSeq;
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

impl Document {
    /// Renders the document from one snapshot of `conn`; with it, the newest change the snapshot
    /// had seen (what the cache compares before it keeps it).
    pub fn render(conn: &Connection, key: &DocumentKey) -> Result<(Document, ChangeSeq)> {
        let snapshot = conn.unchecked_transaction()?;
        let seq = changes::max_seq(&snapshot)?;
        let document = match key {
            DocumentKey::Card(handle) => {
                let card = views::card(&snapshot, handle, now_ms())?;
                Document { rendered: Rendered::of(&card)?, valid_until: card.agent.valid_until() }
            }
            DocumentKey::Call(id) => {
                let call = views::call_detail(&snapshot, id)?;
                Document { rendered: Rendered::of(&call)?, valid_until: None }
            }
        };
        drop(snapshot);
        Ok((document, seq))
    }
}
