//! The streamable HTTP endpoint: stateless, JSON responses, `Host` and `Origin` checked against
//! the base URL. Mount it with `Router::nest_service("/mcp", …)`.

use std::sync::Arc;

use rmcp::transport::streamable_http_server::{
    StreamableHttpServerConfig, StreamableHttpService, session::never::NeverSessionManager,
};

use crate::{DirectoryRead, McpConfig, McpServer};

/// Same cap as a REST body: tool arguments are a handful of short fields.
const MAX_REQUEST_BODY_BYTES: usize = 64 * 1024;

/// The tower service that serves MCP; `Clone`, infallible, usable with axum's `nest_service`.
pub type McpService<P> = StreamableHttpService<McpServer<P>, NeverSessionManager>;

/// The `/mcp` endpoint over `port`.
///
/// No session is kept between requests (any instance behind a load balancer can answer any
/// request), `tools/call` works without a prior `initialize`, and answers are plain JSON.
/// A `Host` other than the base URL's host or loopback, or an `Origin` other than the base URL's
/// origin, gets 403 before any MCP processing; requests without `Origin` are not affected.
///
/// # Panics
/// When an input type of the port does not describe a JSON object (see [`DirectoryRead`]).
pub fn streamable_http_service<P: DirectoryRead>(port: P, cfg: McpConfig) -> McpService<P> {
    let server = McpServer::new(port, &cfg);
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_allowed_hosts(cfg.allowed_hosts())
        .with_allowed_origins(cfg.allowed_origins())
        .with_max_request_body_bytes(MAX_REQUEST_BODY_BYTES);
    StreamableHttpService::new(move || Ok(server.clone()), Arc::new(NeverSessionManager::default()), config)
}
