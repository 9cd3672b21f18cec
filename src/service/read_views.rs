//! Serving the cached public views (see `cache`): the card and the call with its replies, for
//! REST and MCP alike. A hit is answered without leaving the calling thread; a miss renders the
//! view from one SQLite snapshot and keeps it when it is current.

use std::sync::Arc;

use agentdir_mcp::ToText;

use std::collections::HashMap;

use super::cache::{Cached, View, ViewKey};
use super::rendered::Rendered;
use super::{App, agents, calls, views};
use crate::domain::agent::AgentView;
use crate::domain::call::CallSummary;
use crate::error::{Error, Result};
use crate::store::changes;
use crate::time::now_ms;

impl App {
    /// The view, from memory on the calling thread when held, else rendered on the blocking
    /// pool.
    pub async fn public_view(&self, key: ViewKey) -> Result<Arc<View>> {
        if let Some(view) = self.cached_view(&key)? {
            return Ok(view);
        }
        self.blocking(move |d| d.view(&key)).await
    }

    /// The view from memory, if held and current. Other processes' writes are followed first, so
    /// an operator's change or a verification by mail shows at once.
    pub fn cached_view(&self, key: &ViewKey) -> Result<Option<Arc<View>>> {
        self.catch_up_views()?;
        Ok(self.views.view(key, now_ms()))
    }

    /// The view, from memory or rendered now (blocking: reads SQLite on a miss).
    pub fn view(&self, key: &ViewKey) -> Result<Arc<View>> {
        if let Some(view) = self.cached_view(key)? {
            return Ok(view);
        }
        let conn = self.read()?;
        let snapshot = conn.unchecked_transaction()?;
        let seq = changes::max_seq(&snapshot)?;
        let now = now_ms();
        let view = match key {
            ViewKey::Card(handle) => {
                let card = agents::card(&snapshot, handle, now)?;
                let valid_until = card.agent.valid_until();
                View { rendered: Rendered::of(&card)?, text: card.to_text(), valid_until }
            }
            ViewKey::Call(id) => {
                let call = calls::call_detail(&snapshot, id)?;
                View { rendered: Rendered::of(&call)?, text: call.to_text(), valid_until: None }
            }
            ViewKey::AgentItem(_) | ViewKey::CallItem(_) => {
                tracing::error!(?key, "an item is not a page");
                return Err(Error::Internal);
            }
        };
        drop(snapshot);
        let view = Arc::new(view);
        self.views.keep(key.clone(), Cached::Page(view.clone()), seq.get());
        Ok(view)
    }

    /// The public agents among `keys` (`agents.id`), in that order: a page of search results as
    /// readers see it.
    pub fn agent_items(&self, keys: &[i64]) -> Result<Vec<AgentView>> {
        let now = now_ms();
        self.items(
            keys,
            ViewKey::AgentItem,
            |cached| if let Cached::Agent(a) = cached { Some(a) } else { None },
            Cached::Agent,
            |conn, missing| views::agents_by_ids(conn, missing, now),
        )
    }

    /// The visible calls among `keys` (`posts.seq`), in that order.
    pub fn call_items(&self, keys: &[i64]) -> Result<Vec<CallSummary>> {
        self.items(
            keys,
            ViewKey::CallItem,
            |cached| if let Cached::Call(c) = cached { Some(c) } else { None },
            Cached::Call,
            views::calls_by_seqs,
        )
    }

    /// Items of a page: each from memory when held, the rest read from SQLite in one go and
    /// kept. Items that `load` does not return (no longer public) are left out.
    fn items<T: Clone>(
        &self,
        keys: &[i64],
        key: fn(i64) -> ViewKey,
        held: fn(Cached) -> Option<Arc<T>>,
        keep: fn(Arc<T>) -> Cached,
        load: impl FnOnce(&rusqlite::Connection, &[i64]) -> Result<Vec<(i64, T)>>,
    ) -> Result<Vec<T>> {
        let now = now_ms();
        let mut found: HashMap<i64, Arc<T>> = HashMap::with_capacity(keys.len());
        let mut missing = Vec::new();
        for &k in keys {
            match self.views.get(&key(k), now).and_then(held) {
                Some(item) => {
                    found.insert(k, item);
                }
                None => missing.push(k),
            }
        }
        if !missing.is_empty() {
            // Read before the rows: an eviction that lands meanwhile is newer, and refuses them.
            let seq = self.views.applied();
            for (k, item) in load(&*self.read()?, &missing)? {
                let item = Arc::new(item);
                self.views.keep(key(k), keep(item.clone()), seq);
                found.insert(k, item);
            }
        }
        Ok(keys.iter().filter_map(|k| found.get(k)).map(|item| T::clone(item)).collect())
    }
}
