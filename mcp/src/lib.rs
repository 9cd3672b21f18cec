//! agentdir's read-only MCP server: tools, resources and the streamable HTTP endpoint, generic
//! over a read port ([`DirectoryRead`]) that the core implements.
//!
//! This crate never depends on the core: it declares what it needs and the core provides it,
//! which keeps the MCP surface read-only by construction.
//!
//! ```ignore
//! let cfg = agentdir_mcp::McpConfig::new("https://agentdir.example", 64 * 1024)?;
//! let app = axum::Router::new()
//!     .nest_service("/mcp", agentdir_mcp::streamable_http_service(port, cfg));
//! ```

pub mod card;
mod config;
mod error;
mod fast;
mod guard;
mod port;
mod render;
mod resources;
mod schema;
mod server;
mod tools;
mod transport;

pub use config::{ConfigError, McpConfig};
pub use error::{ErrorKind, ToolError};
pub use fast::FAST_ANSWERS;
pub use port::{Arguments, DirectoryRead, ToText, ToolOutput};
pub use server::McpServer;
pub use transport::{McpService, streamable_http_service};
