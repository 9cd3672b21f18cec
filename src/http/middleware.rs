//! What every request passes through, in one function (`guard`) rather than a stack of layers:
//! each layer boxed a future, allocated its labels and cloned its service per request, which
//! cost two thirds of a hello-world's throughput. In order:
//!
//! 1. an `X-Request-Id`: the client's when sane, else a new one (a per-process prefix and a
//!    counter: unique, and free to make);
//! 2. the request timeout (504 envelope), which also bounds how long a body may trickle in;
//! 3. the 64 KiB body limit for every route, MCP included (413 envelope);
//! 4. outside the operator endpoints: the in-flight limit. A request past it waits its turn
//!    (first come, first served) for a bounded time, so a burst queues instead of failing; only
//!    one that waited that long gets 503 and `Retry-After`. On a route that may wait (a long
//!    poll), the request gets its slot as an `InFlightSlot` and gives it back while it waits;
//! 5. the handler; a panic in it becomes a 500 envelope;
//! 6. on the way out: the request id, security headers, `Cache-Control: no-store` on keyed
//!    requests, metrics by route template, method and status (handles looked up once per label
//!    set, not per request), and a log line — at DEBUG for an answer, at WARN for a 5xx — with
//!    method, path, status and latency, never headers or bodies, so API keys and mailboxes
//!    cannot reach the logs.
//!
//! Header size and header read time are bounded earlier, in the connection (`server`).
//!
//! Nothing here makes requests on different cores wait for one another beyond the in-flight
//! gate's own count: the metric handles are looked up in a table of the thread's own, and new
//! request ids are taken from a block the thread holds (a shared lock or counter touched by
//! every request passes its cache line from core to core, which is what stops a read path
//! from scaling).

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::{Body, HttpBody};
use axum::extract::{MatchedPath, Request, State};
use axum::http::{HeaderName, HeaderValue, Method, StatusCode, header};
use axum::middleware::{Next, from_fn_with_state};
use axum::response::{IntoResponse, Response};
use futures_util::FutureExt;
use http_body_util::{BodyExt, LengthLimitError, Limited};
use metrics::{Counter, Histogram};
use tokio::sync::{AcquireError, OwnedSemaphorePermit, Semaphore, SemaphorePermit};
use tokio::time::error::Elapsed;
use tracing::Instrument;

use crate::domain::schema::{MAX_BODY_BYTES, MAX_HEAD_BYTES, MAX_HEADERS};
use crate::domain::trust::DIRECTORY_HEADER;
use crate::error::Error;
use crate::net::InFlightSlot;
use crate::telemetry;

/// Limits of the server itself. The CLI fills them from flags and environment (defaults and
/// meanings in `config::ServeArgs`).
#[derive(Debug, Clone)]
pub struct Hardening {
    pub max_in_flight: usize,
    /// How long a request past the in-flight limit waits for its turn before 503.
    pub queue_wait: Duration,
    pub max_connections: usize,
    /// Open connections of one client that is not a trusted proxy.
    pub max_connections_per_ip: usize,
    /// Peers not capped per address: every client behind them shares their address.
    pub trusted_proxies: Vec<ipnet::IpNet>,
    pub request_timeout: Duration,
    /// How long a body may take to arrive after its headers.
    pub body_timeout: Duration,
    pub header_timeout: Duration,
    pub shutdown_grace: Duration,
}

pub const X_REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// Nothing on this origin is a web page: forbid every fetch, framing, and form or base targets.
const SECURITY_HEADERS: [(HeaderName, HeaderValue); 4] = [
    (header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff")),
    (header::REFERRER_POLICY, HeaderValue::from_static("no-referrer")),
    (
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
        ),
    ),
    (header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY")),
];
const NO_STORE: HeaderValue = HeaderValue::from_static("no-store");

/// Label of requests no route matched (so a client cannot grow the label set by inventing paths).
const UNMATCHED: &str = "unmatched";
/// The MCP endpoint's path, and the route label of it and the documents under it.
const MCP_PATH: &str = "/mcp";

/// The operator endpoints: answered even when the directory is saturated.
pub const OPS_ROUTES: [&str; 3] = ["/healthz", "/readyz", "/metrics"];

/// What `guard` needs, shared by every route (a cheap clone).
#[derive(Clone)]
struct Gate(Arc<GateInner>);

struct GateInner {
    slots: Arc<Semaphore>,
    queue_wait: Duration,
    request_timeout: Duration,
    body_timeout: Duration,
    /// Route templates, as the static labels metrics use, and whether each may wait.
    routes: HashMap<&'static str, (&'static str, bool)>,
    /// Random per process, so ids of two runs do not collide.
    id_prefix: u32,
    /// The first id of the next block a thread takes (`ID_BLOCK` at a time).
    next_id_block: AtomicU64,
    /// `agentdir_http_requests_in_flight`, looked up once (the recorder is installed first).
    in_flight: metrics::Gauge,
}

/// Request ids a thread takes at once: the shared counter moves once per this many requests.
const ID_BLOCK: u64 = 1 << 10;

/// Wraps `router` (every route, `/mcp` and the operator endpoints) in `guard`. `routes` are the
/// templates it serves, for the metric labels, each with whether its requests may wait (and so
/// give back their in-flight slot while they do).
pub fn stack(
    router: Router,
    routes: impl IntoIterator<Item = (&'static str, bool)>,
    limits: &Hardening,
) -> Router {
    let gate = Gate(Arc::new(GateInner {
        slots: Arc::new(Semaphore::new(limits.max_in_flight)),
        queue_wait: limits.queue_wait,
        request_timeout: limits.request_timeout,
        body_timeout: limits.body_timeout,
        routes: routes
            .into_iter()
            .chain(OPS_ROUTES.map(|r| (r, false)))
            .map(|(r, waits)| (r, (r, waits)))
            .collect(),
        id_prefix: rand::random(),
        next_id_block: AtomicU64::new(0),
        in_flight: metrics::gauge!(telemetry::HTTP_IN_FLIGHT),
    }));
    router.layer(from_fn_with_state(gate, guard))
}

/// A request being answered, counted in `agentdir_http_requests_in_flight` until it is dropped,
/// however it ends (answered, timed out, or the client gone).
struct Answering(metrics::Gauge);

impl Answering {
    fn start(in_flight: &metrics::Gauge) -> Answering {
        in_flight.increment(1.0);
        Answering(in_flight.clone())
    }
}

impl Drop for Answering {
    fn drop(&mut self) {
        self.0.decrement(1.0);
    }
}

async fn guard(State(gate): State<Gate>, req: Request, next: Next) -> Response {
    let _answering = Answering::start(&gate.0.in_flight);
    let started = Instant::now();
    let g = &gate.0;
    let id = request_id(&req, g);
    let (route, waits) = route_label(&req, g);
    let method = method_label(req.method());
    let keyed = req.headers().contains_key(header::AUTHORIZATION);
    // The path only: no query string, no headers, no body. Disabled (and free) unless DEBUG.
    let span = tracing::debug_span!("request", id = ?id, method, path = %req.uri().path());
    let queued = !OPS_ROUTES.contains(&route);
    // What the gate itself refuses: told as JSON-RPC on the MCP endpoint, as it tells its own
    // (not on the documents beside it, such as its server card).
    let json_rpc = req.uri().path() == MCP_PATH;
    let refuse = |e: Error| if json_rpc { super::error::json_rpc(e) } else { e.into_response() };
    let work = async {
        if head_too_large(&req) {
            return refuse(Error::HeadTooLarge);
        }
        if coded_body(&req) {
            return refuse(Error::UnsupportedMediaType);
        }
        let mut req = match limit_body(req, g.body_timeout).await {
            Ok(req) => req,
            Err(e) => {
                let mut res = refuse(e.clone());
                // The rest of the body stays unread, so the connection cannot carry another
                // request: say so, or a client may send its next request down a closing one.
                if matches!(e, Error::PayloadTooLarge | Error::BodyTimeout) {
                    res.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
                }
                return res;
            }
        };
        // Held here until the answer; a request that may wait holds its own slot, which it gives
        // back while it waits.
        let _slots = match (queued, waits) {
            (false, false) => (None, None),
            (false, true) => (None, Some(InFlightSlot::holding(None))),
            (true, false) => match wait_for_turn(g).await {
                Some(slot) => (Some(slot), None),
                None => return refuse(Error::Overloaded),
            },
            (true, true) => match wait_for_own_turn(g).await {
                Some(slot) => (None, Some(InFlightSlot::holding(Some(slot)))),
                None => return refuse(Error::Overloaded),
            },
        };
        if let Some(shared) = &_slots.1 {
            req.extensions_mut().insert(shared.clone());
        }
        match AssertUnwindSafe(next.run(req)).catch_unwind().await {
            Ok(res) => res,
            Err(panic) => refuse(panicked(panic)),
        }
    };
    let mut res = match tokio::time::timeout(g.request_timeout, work.instrument(span.clone())).await {
        Ok(res) => res,
        Err(_) => {
            metrics::counter!(telemetry::HTTP_TIMEOUTS).increment(1);
            refuse(Error::Timeout)
        }
    };
    let headers = res.headers_mut();
    for (name, value) in SECURITY_HEADERS {
        headers.entry(name).or_insert(value);
    }
    // Says the answer is a directory's, whose pages prove nothing of an agent (link proofs).
    headers.insert(HeaderName::from_static(DIRECTORY_HEADER), HeaderValue::from_static("agentdir"));
    if keyed {
        // What a key unlocks (the own profile with its mailbox) must not sit in a shared cache.
        headers.insert(header::CACHE_CONTROL, NO_STORE);
    }
    headers.insert(X_REQUEST_ID, id.clone());
    let status = res.status();
    let elapsed = started.elapsed();
    record(route, method, status, elapsed);
    let latency_ms = elapsed.as_secs_f64() * 1000.0;
    span.in_scope(|| {
        if status.is_server_error() {
            tracing::warn!(id = ?id, route, status = status.as_u16(), latency_ms, "request failed");
        } else {
            tracing::debug!(status = status.as_u16(), latency_ms, "request");
        }
    });
    res
}

/// Whether the request line and headers, as sent (give or take the spaces and line ends the
/// parser dropped), are over the rule. The parser's own bound is higher, so a head between the
/// two is read and refused here, with an envelope.
fn head_too_large(req: &Request) -> bool {
    let headers = req.headers();
    if headers.len() > MAX_HEADERS {
        return true;
    }
    // "METHOD target HTTP/1.1\r\n", then "name: value\r\n" for each field.
    let uri = req.uri();
    let target = uri.path_and_query().map_or(1, |p| p.as_str().len())
        + uri.authority().map_or(0, |a| a.as_str().len() + "http://".len());
    let line = req.method().as_str().len() + target + " HTTP/1.1\r\n ".len();
    let fields: usize = headers.iter().map(|(name, value)| name.as_str().len() + value.len() + 4).sum();
    line + fields > MAX_HEAD_BYTES
}

/// Whether a request that may carry a body says it is coded (`gzip`, `br`): no route undoes a
/// coding, so a coded body would be read as broken JSON, and a plain one labelled coded taken
/// for what it is not (REST and MCP alike).
fn coded_body(req: &Request) -> bool {
    !matches!(*req.method(), Method::GET | Method::HEAD | Method::OPTIONS)
        && req
            .headers()
            .get_all(header::CONTENT_ENCODING)
            .iter()
            .any(|v| !v.as_bytes().eq_ignore_ascii_case(b"identity"))
}

/// The client's id when it is short and plain (so it cannot forge log lines or smuggle anything
/// into headers), else a new one.
fn request_id(req: &Request, g: &GateInner) -> HeaderValue {
    if let Some(v) = req.headers().get(X_REQUEST_ID)
        && sane_request_id(v).is_some()
    {
        return v.clone();
    }
    let n = next_id(&g.next_id_block);
    let mut buf = [0u8; 20];
    hex_into(&mut buf[..8], u64::from(g.id_prefix));
    hex_into(&mut buf[8..], n);
    HeaderValue::from_bytes(&buf).unwrap_or(HeaderValue::from_static("0"))
}

/// A number no other request of this process gets: the next of the thread's block, a new block
/// from `blocks` when it is used up. (Threads serve requests of every router of the process:
/// the block is the thread's, and drawn from the gate the request came through, so ids of one
/// gate stay distinct.)
fn next_id(blocks: &AtomicU64) -> u64 {
    thread_local! {
        /// The block's gate (its counter's address), next id and end.
        static BLOCK: Cell<(usize, u64, u64)> = const { Cell::new((0, 0, 0)) };
    }
    let gate = std::ptr::from_ref(blocks) as usize;
    BLOCK.with(|block| {
        let (of, next, end) = block.get();
        let (next, end) = if of == gate && next < end {
            (next, end)
        } else {
            let start = blocks.fetch_add(ID_BLOCK, Ordering::Relaxed);
            (start, start + ID_BLOCK)
        };
        block.set((gate, next + 1, end));
        next
    })
}

/// Writes the low `out.len() * 4` bits of `n` as lower-case hex.
fn hex_into(out: &mut [u8], mut n: u64) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    for slot in out.iter_mut().rev() {
        *slot = DIGITS[(n & 0xf) as usize];
        n >>= 4;
    }
}

fn sane_request_id(v: &HeaderValue) -> Option<&str> {
    let s = v.to_str().ok()?;
    let plain = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b':');
    (!s.is_empty() && s.len() <= 64 && s.bytes().all(plain)).then_some(s)
}

/// The route's label, and whether its requests may wait.
fn route_label(req: &Request, g: &GateInner) -> (&'static str, bool) {
    let Some(matched) = req.extensions().get::<MatchedPath>() else {
        return (UNMATCHED, false);
    };
    let path = matched.as_str();
    if path == MCP_PATH || path.starts_with("/mcp/") {
        return (MCP_PATH, false);
    }
    g.routes.get(path).copied().unwrap_or((UNMATCHED, false))
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

/// Buffers at most 64 KiB of any request body, so every route — the JSON extractors, the
/// handlers without a body, `/mcp` — answers an oversized body with the same 413 envelope, and
/// a body that does not arrive within `deadline` with 408 (a trickling body must not keep its
/// connection for the whole request timeout).
async fn limit_body(req: Request, deadline: Duration) -> Result<Request, Error> {
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if declared.is_some_and(|n| n > MAX_BODY_BYTES as u64) {
        return Err(Error::PayloadTooLarge);
    }
    if HttpBody::is_end_stream(req.body()) {
        return Ok(req);
    }
    let (parts, body) = req.into_parts();
    let Ok(collected) = tokio::time::timeout(deadline, Limited::new(body, MAX_BODY_BYTES).collect()).await
    else {
        metrics::counter!(telemetry::BODY_TIMEOUTS).increment(1);
        return Err(Error::BodyTimeout);
    };
    match collected {
        Ok(collected) => Ok(Request::from_parts(parts, Body::from(collected.to_bytes()))),
        Err(e) if e.is::<LengthLimitError>() => Err(Error::PayloadTooLarge),
        // The client broke off mid-body; it will not read this answer.
        Err(_) => Err(Error::InvalidJson),
    }
}

/// One of the in-flight slots, waited for in arrival order (tokio's semaphore is fair), or
/// `None` after the queue wait. Borrowed from the gate: taking one moves the semaphore's count
/// and nothing else shared.
async fn wait_for_turn(g: &GateInner) -> Option<SemaphorePermit<'_>> {
    if let Ok(slot) = g.slots.try_acquire() {
        return Some(slot);
    }
    shed_unless(tokio::time::timeout(g.queue_wait, g.slots.acquire()).await)
}

/// The same for a request that may wait (a long poll): its slot is its own, so it can give it
/// back while it waits.
async fn wait_for_own_turn(g: &GateInner) -> Option<OwnedSemaphorePermit> {
    if let Ok(slot) = g.slots.clone().try_acquire_owned() {
        return Some(slot);
    }
    shed_unless(tokio::time::timeout(g.queue_wait, g.slots.clone().acquire_owned()).await)
}

fn shed_unless<P>(turn: Result<Result<P, AcquireError>, Elapsed>) -> Option<P> {
    match turn {
        Ok(Ok(slot)) => Some(slot),
        _ => {
            metrics::counter!(telemetry::HTTP_SHED).increment(1);
            None
        }
    }
}

fn panicked(panic: Box<dyn Any + Send + 'static>) -> Error {
    let what = panic
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| panic.downcast_ref::<&str>().copied())
        .unwrap_or("(no message)");
    tracing::error!(panic = what, "a request handler panicked");
    Error::Internal
}

type MeterKey = (&'static str, &'static str, StatusCode);

/// Counts the request and its latency under its labels. The handles of each label set are
/// registered once per thread and kept in the thread's own table: the labels are allocated
/// once, and no lock is shared between requests on different cores. (Handles are the
/// process-wide recorder's, whichever router the request came through.)
fn record(route: &'static str, method: &'static str, status: StatusCode, elapsed: Duration) {
    thread_local! {
        static METERS: RefCell<HashMap<MeterKey, (Counter, Histogram)>> = RefCell::new(HashMap::new());
    }
    let seconds = elapsed.as_secs_f64();
    METERS.with_borrow_mut(|meters| {
        let (count, time) = meters.entry((route, method, status)).or_insert_with(|| {
            let labels = [
                ("route", route.to_owned()),
                ("method", method.to_owned()),
                ("status", status.as_str().to_owned()),
            ];
            (
                metrics::counter!(telemetry::HTTP_REQUESTS, &labels),
                metrics::histogram!(telemetry::HTTP_DURATION, &labels),
            )
        });
        count.increment(1);
        time.record(seconds);
    });
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

    #[test]
    fn request_ids_taken_on_many_threads_are_all_distinct() {
        let blocks = Arc::new(AtomicU64::new(0));
        let per_thread = 3 * ID_BLOCK as usize + 5;
        let taken: Vec<u64> = (0..4)
            .map(|_| {
                let blocks = blocks.clone();
                std::thread::spawn(move || (0..per_thread).map(|_| next_id(&blocks)).collect::<Vec<_>>())
            })
            .collect::<Vec<_>>()
            .into_iter()
            .flat_map(|t| t.join().expect("thread"))
            .collect();
        let distinct: std::collections::HashSet<u64> = taken.iter().copied().collect();
        assert_eq!(distinct.len(), 4 * per_thread);
        // A second gate on a thread that holds a block of the first starts from its own counter.
        let other = AtomicU64::new(1 << 40);
        assert_eq!(next_id(&blocks) >> 40, 0);
        assert_eq!(next_id(&other) >> 40, 1);
    }

    #[test]
    fn new_request_ids_are_distinct_hex() {
        let mut a = [0u8; 8];
        hex_into(&mut a, 0xdead_beef);
        assert_eq!(&a, b"deadbeef");
        let mut b = [0u8; 12];
        hex_into(&mut b, 42);
        assert_eq!(&b, b"00000000002a");
    }
}
