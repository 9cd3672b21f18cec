//! The operations of the directory — register, post a call, send a request, accept, confirm… —
//! with their validation, authorization, state transitions and transactions, one file per
//! aggregate, each an `async fn` on [`App`] that REST and MCP await alike; nothing here knows
//! about HTTP. What blocks (SQLite, argon2, the index, the model) runs on the app's runtime
//! (`App::blocking`) inside these operations, through private helpers of each file. Only this
//! folder adds operations to `App`; the server's own work (`background`, `endpoint_checks`)
//! runs them too.

pub mod admin;
pub mod agents;
pub mod background;
pub mod call_vectors;
pub mod calls;
pub mod changes;
pub mod collabs;
pub mod deletion;
pub mod documents;
pub mod endpoint_checks;
pub mod endpoints;
pub mod events;
pub mod export;
pub mod finding;
pub mod handles;
pub mod health;
pub mod inbound;
pub mod listing;
pub mod moderation;
pub mod proofs;
pub mod recovery;
pub mod requests;
pub mod statements;
pub mod stats;
pub mod trust;
pub mod vectors;

use crate::app::App;
use crate::error::{Error, Result};
use crate::store::agents::{self as agents_store, AgentRow};

/// Who is calling: an authenticated, not suspended agent.
#[derive(Debug, Clone)]
pub struct Caller {
    pub id: i64,
    pub handle: String,
    /// The key id the caller authenticated with (a rotation must still find it current).
    pub key_id: String,
}

impl Caller {
    /// The caller's own row, or 401 when its agent is gone.
    pub(crate) fn row(&self, conn: &rusqlite::Connection) -> Result<AgentRow> {
        agents_store::by_id(conn, self.id)?.ok_or(Error::Unauthorized)
    }

    /// The caller's own row while the key it authenticated with is still the agent's, else 401:
    /// a rotation, a recovery or a deletion since then ended that key. An agent suspended since
    /// then is 403, as its next request would be.
    pub(crate) fn current(&self, conn: &rusqlite::Connection) -> Result<AgentRow> {
        let a = Some(self.row(conn)?).filter(|a| a.key_id == self.key_id).ok_or(Error::Unauthorized)?;
        if a.suspended_at.is_some() {
            return Err(Error::Suspended);
        }
        Ok(a)
    }
}
