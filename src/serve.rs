//! The server as one program, `agentdir serve`: the REST adapter's routes with the MCP adapter
//! at `/mcp` and the pages for people (`/`, `/agents`, …) and, on a replica, the replica adapter's forwarding around them; the background
//! work of the role; metrics; graceful shutdown. This is where the adapters meet: none of them
//! imports another, and what one needs of another (which routes the primary answers) is handed
//! over here.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use axum::Router;
use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use crate::app::App;
use crate::http::conventions::{self, Conventions};
use crate::http::handlers::meta;
use crate::http::middleware::Hardening;
use crate::http::{docs, error, middleware, ops, routes, server};
use crate::replica::forward::{self, Forwarding};

/// Every REST route, the operator endpoints, the read-only MCP endpoint at `/mcp`, the pages,
/// and for unknown paths and wrong methods the envelope (a page for a browser), inside a
/// replica's forwarding. Fails only when
/// the base URL is not an absolute http(s) URL, which the MCP `Host`/`Origin` checks are
/// derived from.
pub fn router(
    app: App,
    forwarding: Forwarding,
    metrics: ops::MetricsOn,
) -> Result<Router, agentdir_mcp::ConfigError> {
    docs::publish(&app.settings().base_url, SERVER_CARD);
    let mcp_config =
        agentdir_mcp::McpConfig::new(&app.settings().base_url, crate::domain::schema::MAX_BODY_BYTES)?;
    let mcp = agentdir_mcp::streamable_http_service(crate::mcp_port::McpPort::new(app.clone()), mcp_config);
    Ok(crate::http::router(metrics)
        .merge(crate::pages::router())
        .route("/", get(front))
        .route(SERVER_CARD, get(server_card))
        .nest_service("/mcp", mcp)
        .fallback(unknown)
        .method_not_allowed_fallback(error::method_not_allowed)
        .layer(axum::middleware::from_fn_with_state(forwarding, forward::route))
        .layer(every_other_answer_compressed())
        .layer(axum::middleware::from_fn_with_state(
            Conventions::new([SERVER_CARD], crate::pages::ROUTES),
            conventions::apply,
        ))
        .with_state(app))
}

/// What the conventions do not compress themselves (keyed answers, MCP's JSON, errors), over
/// the same size, per request. Never an event stream (MCP's SSE answers are read as they come).
fn every_other_answer_compressed()
-> tower_http::compression::CompressionLayer<impl tower_http::compression::Predicate> {
    use tower_http::compression::predicate::{NotForContentType, Predicate, SizeAbove};
    let min = u16::try_from(crate::http::compression::MIN_BYTES).unwrap_or(u16::MAX);
    tower_http::compression::CompressionLayer::new()
        .quality(tower_http::CompressionLevel::Precise(4))
        .compress_when(
            SizeAbove::new(min)
                .and(NotForContentType::SSE)
                .and(NotForContentType::GRPC)
                .and(NotForContentType::IMAGES),
        )
}

/// Where the MCP Server Card is: the location the SEP-2127 draft reserves after `/mcp`.
pub const SERVER_CARD: &str = const_format::concatcp!("/mcp", agentdir_mcp::card::SUFFIX);

/// The MCP Server Card (SEP-2127 draft) of `/mcp`, built once per process.
async fn server_card(state: State<App>) -> Response {
    use axum::http::{HeaderValue, header};
    static CARD: std::sync::OnceLock<axum::body::Bytes> = std::sync::OnceLock::new();
    let body = CARD.get_or_init(|| {
        let base = &state.settings().base_url;
        let card = agentdir_mcp::card::server_card(&format!("{base}/mcp"), base);
        serde_json::to_vec(&card).unwrap_or_default().into()
    });
    let mut res = body.clone().into_response();
    let headers = res.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(agentdir_mcp::card::MEDIA_TYPE));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("public, max-age=3600"));
    res
}

/// `/`: the API's index for a machine that asks for JSON, else the home page. Either way the
/// answer varies by `Accept`.
async fn front(state: State<App>, req: Request) -> Response {
    if crate::pages::prefers_json(req.headers()) {
        let mut res = meta::index().await.into_response();
        // What the page varies by too: a cache holds one answer for both.
        res.headers_mut().insert(
            axum::http::header::VARY,
            axum::http::HeaderValue::from_static("Accept, Accept-Language"),
        );
        res
    } else {
        crate::pages::home(state, req).await
    }
}

/// A path no route knows: the envelope, or a page for a browser (one that asks for HTML over
/// JSON); either says it varies by `Accept`, so a cache does not hand one to the other.
async fn unknown(req: Request) -> Response {
    let mut res = if crate::pages::prefers_html(req.headers()) {
        crate::pages::not_found(req).await
    } else {
        error::not_found().await.into_response()
    };
    let headers = res.headers_mut();
    let vary = match headers.get(axum::http::header::VARY).and_then(|v| v.to_str().ok()) {
        Some(also) if !also.is_empty() => format!("Accept, {also}"),
        _ => "Accept".to_owned(),
    };
    if let Ok(vary) = axum::http::HeaderValue::from_str(&vary) {
        headers.insert(axum::http::header::VARY, vary);
    }
    res
}

/// The whole application as served: the routes of `router` inside `middleware`, and outside it
/// a replica's wait for a client's position (which must not hold an in-flight slot).
pub fn app(
    app: App,
    limits: &Hardening,
    metrics: ops::MetricsOn,
) -> Result<Router, agentdir_mcp::ConfigError> {
    let endpoints = routes::endpoints();
    let templates: Vec<(&'static str, bool)> = endpoints
        .iter()
        .map(|e| (e.path, e.waits))
        .chain(crate::pages::ROUTES.iter().map(|r| (*r, false)))
        .collect();
    // Beside the route table, the pages and MCP read the copy too.
    let other_reads = crate::pages::ROUTES
        .iter()
        .map(|r| (axum::http::Method::GET, *r))
        .chain([(axum::http::Method::POST, "/mcp")]);
    let forwarding = Forwarding::new(
        app.clone(),
        endpoints.into_iter().map(|e| (e.method, e.path, e.node, e.waits)),
        other_reads,
    );
    let positions = axum::middleware::from_fn_with_state(forwarding.clone(), forward::await_position);
    Ok(middleware::stack(router(app, forwarding, metrics)?, templates, limits).layer(positions))
}

/// Why [`serve`] stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stopped {
    /// SIGINT or SIGTERM.
    Asked,
    /// A replica's copy was replaced under it (`replica::link::run`): the caller exits with a
    /// status that says so (75), for the supervisor to start it again on the new copy.
    CopyReplaced,
}

/// Serves until SIGINT or SIGTERM (or, on a replica, until its copy is replaced), then lets
/// in-flight requests finish (within the grace period of `limits`). With `metrics_listener`,
/// `/metrics` is served there and not on the main port.
pub async fn serve(
    app: App,
    listener: tokio::net::TcpListener,
    metrics_listener: Option<tokio::net::TcpListener>,
    limits: Hardening,
) -> std::io::Result<Stopped> {
    let metrics = crate::telemetry::install();
    let metrics_on =
        if metrics_listener.is_some() { ops::MetricsOn::OwnListener } else { ops::MetricsOn::MainPort };
    let service = self::app(app.clone(), &limits, metrics_on)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    let scrapes = metrics_listener.map(|l| {
        // Anything else there gets the same envelope as on the main port.
        let service = ops::metrics_only()
            .fallback(error::not_found)
            .method_not_allowed_fallback(error::method_not_allowed)
            .with_state(app.clone());
        let limits = limits.clone();
        tokio::spawn(async move { server::run(l, service, &limits, std::future::pending()).await })
    });
    let replica =
        app.role().replica().is_some().then(|| tokio::spawn(crate::replica::link::run(app.clone())));
    let background = app.start_background();
    // Histogram samples pile up until folded in; do it even when nobody scrapes.
    let upkeep = tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_secs(5));
        loop {
            tick.tick().await;
            metrics.run_upkeep();
        }
    });
    let replaced = Arc::new(AtomicBool::new(false));
    let replica_abort = replica.as_ref().map(tokio::task::JoinHandle::abort_handle);
    let stop = {
        let replaced = replaced.clone();
        async move {
            let Some(replica) = replica else { return shutdown_signal().await };
            tokio::select! {
                () = shutdown_signal() => {}
                ended = replica => {
                    if matches!(ended, Ok(crate::replica::link::Ended::CopyReplaced)) {
                        replaced.store(true, Ordering::Release);
                    }
                }
            }
        }
    };
    server::run(listener, service, &limits, stop).await;
    drop(background);
    if let Some(replica) = replica_abort {
        replica.abort();
    }
    upkeep.abort();
    if let Some(scrapes) = scrapes {
        scrapes.abort();
    }
    Ok(if replaced.load(Ordering::Acquire) { Stopped::CopyReplaced } else { Stopped::Asked })
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = terminate => {},
    }
    tracing::info!("shutdown signal received");
}
