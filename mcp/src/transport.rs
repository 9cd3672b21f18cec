//! The streamable HTTP endpoint: stateless, JSON responses, `Host` and `Origin` checked against
//! the base URL (`guard`), the hottest reads on a short path (`fast`), everything else served by
//! rmcp. Mount it with `Router::nest_service("/mcp", …)`.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use rmcp::transport::streamable_http_server::{
    StreamableHttpServerConfig, StreamableHttpService, session::never::NeverSessionManager,
};

use crate::fast::{self, Fast};
use crate::guard::{BoxResponse, Guard};
use crate::{DirectoryRead, McpConfig, McpServer};

/// The tower service that serves MCP: `Clone`, infallible, usable with axum's `nest_service`.
pub struct McpService<P> {
    guard: Arc<Guard>,
    rmcp: StreamableHttpService<McpServer<P>, NeverSessionManager>,
    fast: Arc<Fast<P>>,
}

impl<P> Clone for McpService<P> {
    fn clone(&self) -> Self {
        McpService { guard: self.guard.clone(), rmcp: self.rmcp.clone(), fast: self.fast.clone() }
    }
}

/// The `/mcp` endpoint over `port`.
///
/// No session is kept between requests (any instance behind a load balancer can answer any
/// request), `tools/call` works without a prior `initialize`, and answers are plain JSON.
/// A `Host` other than the base URL's host or loopback, or an `Origin` other than the base URL's
/// origin, gets 403 before any MCP processing; requests without `Origin` are not affected.
/// The hottest reads take a shorter path (see `fast`).
///
/// # Panics
/// When an input type of the port does not describe a JSON object (see [`DirectoryRead`]).
pub fn streamable_http_service<P: DirectoryRead>(port: P, cfg: McpConfig) -> McpService<P> {
    let server = McpServer::new(port.clone(), &cfg);
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        // `guard` checks Host and Origin for both paths.
        .disable_allowed_hosts()
        .disable_allowed_origins()
        .with_max_request_body_bytes(cfg.max_body_bytes());
    let rmcp = StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(NeverSessionManager::default()),
        config,
    );
    McpService { guard: Arc::new(Guard::new(&cfg)), rmcp, fast: Arc::new(Fast::new(port)) }
}

impl<P, B> tower_service::Service<http::Request<B>> for McpService<P>
where
    P: DirectoryRead,
    B: http_body::Body + Send + 'static,
    B::Data: Send,
    B::Error: std::fmt::Display,
{
    type Response = BoxResponse;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<BoxResponse, Infallible>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: http::Request<B>) -> Self::Future {
        let this = self.clone();
        Box::pin(async move {
            if let Err(refused) = this.guard.check(req.uri(), req.headers()) {
                return Ok(refused.into_response());
            }
            Ok(fast::serve(&this.fast, this.rmcp, req).await)
        })
    }
}
