//! The layers every request passes through, outermost first:
//!
//! 1. request context: an `X-Request-Id` (the client's when sane, else a new one), a log span
//!    carrying it, one access-log line — method, path, status, latency; never headers or bodies,
//!    so API keys and mailboxes cannot reach the logs;
//! 2. security headers on every response;
//! 3. metrics by route template, method and status;
//! 4. a panic becomes a 500 envelope;
//! 5. the request timeout (504 envelope), which also bounds how long a body may trickle in;
//! 6. the 64 KiB body limit for every route, MCP included (413 envelope);
//! 7. outside the operator endpoints: a global in-flight limit. A request past it waits its turn
//!    (first come, first served) for a bounded time, so a burst queues instead of failing; only
//!    one that waited that long gets 503 and `Retry-After`.
//!
//! Header size and header read time are bounded earlier, in the connection (`server`).

use std::any::Any;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::{Body, HttpBody};
use axum::error_handling::HandleErrorLayer;
use axum::extract::{MatchedPath, Request, State};
use axum::http::{HeaderName, HeaderValue, Method, header};
use axum::middleware::{Next, from_fn, from_fn_with_state};
use axum::response::{IntoResponse, Response};
use http_body_util::{BodyExt, LengthLimitError, Limited};
use tokio::sync::Semaphore;
use tower::timeout::TimeoutLayer;
use tower::timeout::error::Elapsed;
use tower::{BoxError, ServiceBuilder};
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::set_header::SetResponseHeaderLayer;
use tracing::Instrument;

use super::extract::BODY_LIMIT;
use crate::error::Error;
use crate::telemetry;

/// Limits of the server itself. The CLI fills them from flags and environment (defaults and
/// meanings in `config::ServeArgs`).
#[derive(Debug, Clone)]
pub struct Hardening {
    pub max_in_flight: usize,
    /// How long a request past the in-flight limit waits for its turn before 503.
    pub queue_wait: Duration,
    pub max_connections: usize,
    pub request_timeout: Duration,
    pub header_timeout: Duration,
    pub shutdown_grace: Duration,
}

pub const X_REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// Nothing on this origin is a web page: forbid every fetch, framing, and form or base targets.
const CSP: &str = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

/// Wraps `api` (the directory's routes and `/mcp`) and `ops` (health and metrics, which must
/// answer even when the directory is saturated) in the layers above.
pub fn stack(api: Router, ops: Router, limits: &Hardening) -> Router {
    let turns =
        InFlightLimit { slots: Arc::new(Semaphore::new(limits.max_in_flight)), wait: limits.queue_wait };
    let admitted = api.layer(from_fn(stamp_route)).layer(from_fn_with_state(turns, wait_for_turn));
    let routed = ops.layer(from_fn(stamp_route)).fallback_service(admitted);
    let outer = ServiceBuilder::new()
        .layer(from_fn(request_context))
        .layer(security_header(header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .layer(security_header(header::REFERRER_POLICY, "no-referrer"))
        .layer(security_header(header::CONTENT_SECURITY_POLICY, CSP))
        .layer(security_header(header::X_FRAME_OPTIONS, "DENY"))
        .layer(from_fn(record_metrics))
        .layer(CatchPanicLayer::custom(panic_response))
        .layer(HandleErrorLayer::new(timeout_error))
        .layer(TimeoutLayer::new(limits.request_timeout))
        .layer(from_fn(limit_body))
        .service(routed);
    Router::new().fallback_service(outer)
}

fn security_header(name: HeaderName, value: &'static str) -> SetResponseHeaderLayer<HeaderValue> {
    SetResponseHeaderLayer::if_not_present(name, HeaderValue::from_static(value))
}

/// The id of one request, as sent back in `X-Request-Id` and written in its log span.
#[derive(Debug, Clone)]
pub struct RequestId(pub Arc<str>);

/// An incoming id is kept only when it is short and plain, so it cannot forge log lines or
/// smuggle anything into headers.
fn sane_request_id(v: &HeaderValue) -> Option<&str> {
    let s = v.to_str().ok()?;
    let plain = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b':');
    (!s.is_empty() && s.len() <= 64 && s.bytes().all(plain)).then_some(s)
}

async fn request_context(mut req: Request, next: Next) -> Response {
    let id: Arc<str> = match req.headers().get(X_REQUEST_ID).and_then(sane_request_id) {
        Some(s) => s.into(),
        None => ulid::Ulid::new().to_string().to_ascii_lowercase().into(),
    };
    let header_value = HeaderValue::from_str(&id).ok();
    if let Some(v) = &header_value {
        req.headers_mut().insert(X_REQUEST_ID, v.clone());
    }
    req.extensions_mut().insert(RequestId(id.clone()));
    let keyed = req.headers().contains_key(header::AUTHORIZATION);
    let method = req.method().clone();
    // The path only: no query string, no headers, no body.
    let span = tracing::info_span!("request", id = %id, method = %method, path = %req.uri().path());
    let started = Instant::now();
    let mut res = next.run(req).instrument(span.clone()).await;
    if let Some(v) = header_value {
        res.headers_mut().insert(X_REQUEST_ID, v);
    }
    if keyed {
        // What a key unlocks (the own profile with its mailbox) must not sit in a shared cache.
        res.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    let status = res.status().as_u16();
    let latency_ms = started.elapsed().as_secs_f64() * 1000.0;
    span.in_scope(|| {
        if status >= 500 {
            tracing::warn!(status, latency_ms, "request failed");
        } else {
            tracing::info!(status, latency_ms, "request");
        }
    });
    res
}

/// The route template a response came from, for metric labels (set inside the router, where
/// the match is known; read outside it).
#[derive(Debug, Clone)]
struct RouteLabel(Arc<str>);

async fn stamp_route(req: Request, next: Next) -> Response {
    let route = req.extensions().get::<MatchedPath>().map(|m| Arc::<str>::from(m.as_str()));
    let mut res = next.run(req).await;
    if let Some(route) = route
        && res.extensions().get::<RouteLabel>().is_none()
    {
        res.extensions_mut().insert(RouteLabel(route));
    }
    res
}

/// Keeps label values to a fixed set, whatever clients send.
fn method_label(m: &Method) -> &'static str {
    match *m {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::PATCH => "PATCH",
        Method::DELETE => "DELETE",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        _ => "other",
    }
}

/// Decrements the in-flight gauge even when the client goes away and the future is dropped.
struct InFlight;

impl InFlight {
    fn enter() -> Self {
        metrics::gauge!(telemetry::HTTP_IN_FLIGHT).increment(1.0);
        InFlight
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        metrics::gauge!(telemetry::HTTP_IN_FLIGHT).decrement(1.0);
    }
}

async fn record_metrics(req: Request, next: Next) -> Response {
    let method = method_label(req.method());
    let started = Instant::now();
    let guard = InFlight::enter();
    let res = next.run(req).await;
    drop(guard);
    // Requests refused before routing (413, 503, 504, unknown paths) share one label, so a
    // client cannot grow the label set by inventing paths.
    let route = res.extensions().get::<RouteLabel>().map_or("unmatched".to_owned(), |r| r.0.to_string());
    let labels =
        [("route", route), ("method", method.to_owned()), ("status", res.status().as_str().to_owned())];
    metrics::counter!(telemetry::HTTP_REQUESTS, &labels).increment(1);
    metrics::histogram!(telemetry::HTTP_DURATION, &labels).record(started.elapsed().as_secs_f64());
    res
}

/// Buffers at most 64 KiB of any request body, so every route — the JSON extractors, the
/// handlers without a body, `/mcp` — answers an oversized body with the same 413 envelope.
async fn limit_body(req: Request, next: Next) -> Response {
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if declared.is_some_and(|n| n > BODY_LIMIT as u64) {
        return too_large();
    }
    let (parts, body) = req.into_parts();
    if HttpBody::is_end_stream(&body) {
        return next.run(Request::from_parts(parts, body)).await;
    }
    match Limited::new(body, BODY_LIMIT).collect().await {
        Ok(collected) => next.run(Request::from_parts(parts, Body::from(collected.to_bytes()))).await,
        Err(e) if e.is::<LengthLimitError>() => too_large(),
        // The client broke off mid-body; it will not read this answer.
        Err(_) => Error::InvalidJson.into_response(),
    }
}

/// The rest of the body stays unread, so the connection cannot carry another request: say so,
/// or a client may send its next request down a connection that is closing.
fn too_large() -> Response {
    let mut res = Error::PayloadTooLarge.into_response();
    res.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
    res
}

/// The requests answered at once, and how long one may wait for its turn.
#[derive(Clone)]
struct InFlightLimit {
    slots: Arc<Semaphore>,
    wait: Duration,
}

/// Waits (in arrival order: tokio's semaphore is fair) for one of the in-flight slots; a request
/// that waited `wait` in vain is answered 503 with `Retry-After`.
async fn wait_for_turn(State(limit): State<InFlightLimit>, req: Request, next: Next) -> Response {
    let slot = match limit.slots.clone().try_acquire_owned() {
        Ok(slot) => slot,
        Err(_) => match tokio::time::timeout(limit.wait, limit.slots.clone().acquire_owned()).await {
            Ok(Ok(slot)) => slot,
            _ => {
                metrics::counter!(telemetry::HTTP_SHED).increment(1);
                return Error::Overloaded.into_response();
            }
        },
    };
    let res = next.run(req).await;
    drop(slot);
    res
}

async fn timeout_error(err: BoxError) -> Error {
    if err.is::<Elapsed>() {
        metrics::counter!(telemetry::HTTP_TIMEOUTS).increment(1);
        Error::Timeout
    } else {
        tracing::error!(error = %err, "unexpected error from the request timeout");
        Error::Internal
    }
}

fn panic_response(panic: Box<dyn Any + Send + 'static>) -> Response {
    let what = panic
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| panic.downcast_ref::<&str>().copied())
        .unwrap_or("(no message)");
    tracing::error!(panic = what, "a request handler panicked");
    Error::Internal.into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn incoming_request_ids_are_kept_only_when_plain() {
        let ok = HeaderValue::from_static("3f2a-9c_01.trace:7");
        assert_eq!(sane_request_id(&ok), Some("3f2a-9c_01.trace:7"));
        for bad in ["", "has space", "semi;colon", "quote\"", &"x".repeat(65)] {
            let v = HeaderValue::from_str(bad).expect("header value");
            assert_eq!(sane_request_id(&v), None, "{bad:?} should be replaced");
        }
    }
}
