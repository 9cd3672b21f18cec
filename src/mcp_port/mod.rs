//! The core's side of the MCP adapter (`agentdir-mcp`): `port` implements its read port over the
//! directory with the same operations, validation and errors the REST handlers use; `text` is
//! the short text a person reads next to each tool result.
//!
//! Nothing here decides what a reader may see: hidden calls and suspended agents are filtered
//! by the core reads themselves, so MCP cannot show more than REST.

mod port;
mod text;

pub use port::{AgentHandle, CallId, CardOutput, DocumentOutput, McpPort};
