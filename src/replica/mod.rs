//! Read replicas, the adapter side: forwarding and the link to the primary. It depends on the
//! core (`app::role::Replica` holds where the copy stands), never the reverse.
//!
//! A replica is the same `agentdir serve` in the replica role: Litestream keeps a
//! copy of the primary's SQLite file up to date (`litestream restore -f`), the replica reads it
//! read-only, follows its change log into its own search index and view cache exactly as the
//! primary does, serves every read, and forwards every write to the primary (`forward`).
//!
//! Positions: every write through a server advances the primary's write position
//! (`store::replica`), and the primary answers each write with it in [`POSITION_HEADER`]. A replica
//! knows the position of its copy once its followers have applied it; it answers a forwarded
//! write only when it has applied the write's position (or says in [`CAUGHT_UP_HEADER`] that it
//! gave up waiting), and a read carrying [`POSITION_HEADER`] waits the same way or goes to the
//! primary. See `docs/replicas.md`.

pub mod forward;
pub mod link;

use axum::http::HeaderName;

/// On the primary's answer to a write: the write position after it. On a read sent to a
/// replica: the position the client has seen and wants the answer to include. (Its name on the
/// wire, `X-Agentdir-Seq`, is older than the word "position".)
pub const POSITION_HEADER: HeaderName = HeaderName::from_static("x-agentdir-seq");

/// On a write a replica forwarded: `true` when the replica had applied the write before
/// answering, `false` when it stopped waiting (a read right after may not show the write yet).
pub const CAUGHT_UP_HEADER: HeaderName = HeaderName::from_static("x-agentdir-caught-up");

/// On an answer the replica fetched from the primary: which node answered.
pub const SERVED_BY_HEADER: HeaderName = HeaderName::from_static("x-agentdir-served-by");
