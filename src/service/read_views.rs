//! Serving the cached public views (see `cache`): the card and the call with its replies, for
//! REST and MCP alike. A hit is answered without leaving the calling thread; a miss renders the
//! view from one SQLite snapshot and keeps it when it is current.

use std::sync::Arc;

use agentdir_mcp::ToText;

use super::cache::{View, ViewKey};
use super::rendered::Rendered;
use super::{Directory, agents, calls};
use crate::domain::trust::ProofStatus;
use crate::error::Result;
use crate::store::changes;
use crate::time::now_ms;

impl Directory {
    /// The view, from memory on the calling thread when held, else rendered on the blocking
    /// pool.
    pub async fn public_view(self: &Arc<Self>, key: ViewKey) -> Result<Arc<View>> {
        if let Some(view) = self.cached_view(&key)? {
            return Ok(view);
        }
        self.run(move |d| d.view(&key)).await
    }

    /// The view from memory, if held and current. Other processes' writes are followed first, so
    /// an operator's change or a verification by mail shows at once.
    pub fn cached_view(&self, key: &ViewKey) -> Result<Option<Arc<View>>> {
        self.catch_up_views()?;
        Ok(self.views.get(key, now_ms()))
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
                let valid_until = card
                    .agent
                    .trust
                    .links
                    .iter()
                    .filter(|l| l.status == ProofStatus::Verified)
                    .map(|l| l.expires_at.0)
                    .min();
                View { rendered: Rendered::of(&card)?, text: card.to_text(), valid_until }
            }
            ViewKey::Call(id) => {
                let call = calls::call_detail(&snapshot, id)?;
                View { rendered: Rendered::of(&call)?, text: call.to_text(), valid_until: None }
            }
        };
        drop(snapshot);
        let view = Arc::new(view);
        self.views.keep(key.clone(), view.clone(), seq);
        Ok(view)
    }
}
