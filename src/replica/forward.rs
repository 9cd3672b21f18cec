//! The HTTP side of replication.
//!
//! On the primary: every answer to a write carries the write position in `X-Agentdir-Seq`.
//!
//! On a replica, by the route's [`Node`] in the route table (never by what the client sends):
//! - a write or a route that needs a key is sent to the primary, to the configured primary
//!   origin with the request's path and query, whatever the request line holds; the primary's
//!   answer is passed back once the replica has applied its position (bounded wait;
//!   `X-Agentdir-Caught-Up` tells which), and only when it is within [`ANSWER_LIMIT`];
//! - a public read is answered from the copy. A read carrying `X-Agentdir-Seq` first waits for
//!   that position (`await_position`, before the request takes an in-flight slot) when the
//!   primary really issued it, and is sent to the primary when the wait runs out; a position
//!   the primary never issued is treated as absent.
//! - anything no route matches is answered here (404 or 405): nothing unknown is forwarded.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::{ConnectInfo, MatchedPath, Request, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, Uri, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::{CAUGHT_UP_HEADER, POSITION_HEADER, SERVED_BY_HEADER, link};
use crate::app::role::FORWARD_TIMEOUT;
use crate::app::{App, Node, Replica};
use crate::domain::schema::MAX_BODY_BYTES;
use crate::error::Error;
use crate::net::InFlightSlot;
use crate::store::positions::WritePosition;

/// The largest answer of the primary a replica passes on (125 MiB). The largest legitimate one
/// is a change-feed page at its maximum limit whose every entry is an agent's card: a profile of
/// at most one request body, rendered with its evidence in less than twice that.
pub const ANSWER_LIMIT: usize = 2 * crate::domain::changes::MAX_LIMIT as usize * MAX_BODY_BYTES;

/// Hop-by-hop headers (RFC 9110 §7.6.1) and the ones the client library sets itself.
const NOT_FORWARDED: [HeaderName; 10] = [
    header::CONNECTION,
    HeaderName::from_static("keep-alive"),
    header::PROXY_AUTHENTICATE,
    header::PROXY_AUTHORIZATION,
    header::TE,
    header::TRAILER,
    header::TRANSFER_ENCODING,
    header::UPGRADE,
    header::HOST,
    header::CONTENT_LENGTH,
];

const X_FORWARDED_FOR: HeaderName = HeaderName::from_static("x-forwarded-for");

/// Set by `await_position` on a read whose position the copy did not reach in time.
#[derive(Clone, Copy)]
struct BehindClient;

fn is_write(method: &Method) -> bool {
    !matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS)
}

/// What the forwarding layers hold: the app, and which node answers each route (method and path
/// template), as the REST adapter's route table says; the server's wiring hands it over, so
/// this adapter never reads the other's table. One reference count to clone, as `App` is.
#[derive(Clone)]
pub struct Forwarding(Arc<Routes>);

struct Routes {
    app: App,
    /// Which node answers each route, and whether its requests may wait (a long poll).
    nodes: HashMap<(Method, &'static str), (Node, bool)>,
    /// The reads served from the copy beside the route table's (the pages, `/mcp`).
    other_reads: HashSet<(Method, &'static str)>,
}

impl Forwarding {
    /// `routes`: the route table's routes, each with its node and whether it may wait;
    /// `other_reads`: the other routes (method and path or template) that read the copy.
    pub fn new(
        app: App,
        routes: impl IntoIterator<Item = (Method, &'static str, Node, bool)>,
        other_reads: impl IntoIterator<Item = (Method, &'static str)>,
    ) -> Forwarding {
        let nodes =
            routes.into_iter().map(|(method, path, node, waits)| ((method, path), (node, waits))).collect();
        Forwarding(Arc::new(Routes { app, nodes, other_reads: other_reads.into_iter().collect() }))
    }

    /// Whether `req` is a read this node answers from its copy, so that a position it carries
    /// is worth waiting for (or forwarding when the copy lags). Not a path no route serves, a
    /// method a route does not take, nor the operator routes: those are answered here.
    fn reads_the_copy(&self, req: &Request) -> bool {
        let method = if req.method() == Method::HEAD { Method::GET } else { req.method().clone() };
        let Some(matched) = req.extensions().get::<MatchedPath>().map(MatchedPath::as_str) else {
            return self.0.other_reads.contains(&(method, req.uri().path()));
        };
        matches!(self.0.nodes.get(&(method.clone(), matched)), Some((Node::Any, _)))
            || self.0.other_reads.contains(&(method.clone(), matched))
            || self.0.other_reads.contains(&(method, req.uri().path()))
    }

    fn route_of(&self, req: &Request) -> (Node, bool) {
        let Some(matched) = req.extensions().get::<MatchedPath>() else { return (Node::Any, false) };
        let method = if req.method() == Method::HEAD { Method::GET } else { req.method().clone() };
        self.0.nodes.get(&(method, matched.as_str())).copied().unwrap_or((Node::Any, false))
    }

    /// The node that answers this request, from the route it matched. Unmatched paths, wrong
    /// methods and `/mcp` (read-only) are answered by any node.
    fn node_of(&self, req: &Request) -> Node {
        self.route_of(req).0
    }
}

fn position_of(headers: &HeaderMap) -> Option<WritePosition> {
    headers.get(POSITION_HEADER)?.to_str().ok()?.trim().parse().ok().map(WritePosition::new)
}

/// Before a read takes an in-flight slot: waits for the position the client carries when the
/// primary issued it. Waiting here holds nothing other requests need.
pub async fn await_position(State(forwarding): State<Forwarding>, mut req: Request, next: Next) -> Response {
    if let Some(replica) = forwarding.0.app.role().replica()
        && forwarding.reads_the_copy(&req)
        && let Some(wanted) = position_of(req.headers())
        && wanted > replica.applied_position()
    {
        // One wait in all: asking the primary whether it issued the position counts against
        // it, and a primary too slow to say is taken as not having issued it.
        let started = std::time::Instant::now();
        let issued = tokio::time::timeout(replica.wait, link::issued(replica, wanted)).await.unwrap_or(false);
        if !issued {
            metrics::counter!(link::UNISSUED_POSITIONS).increment(1);
        } else {
            let waiting = metrics::gauge!(link::READS_WAITING);
            waiting.increment(1.0);
            let left = replica.wait.saturating_sub(started.elapsed());
            let reached = replica.wait_for_within(wanted, left).await;
            waiting.decrement(1.0);
            if !reached {
                req.extensions_mut().insert(BehindClient);
            }
        }
    }
    next.run(req).await
}

pub async fn route(State(forwarding): State<Forwarding>, req: Request, next: Next) -> Response {
    let app = &forwarding.0.app;
    let Some(replica) = app.role().replica() else {
        // Reads, the bulk of the traffic, skip the route lookup.
        let writes = is_write(req.method()) && forwarding.node_of(&req) == Node::Primary;
        let mut res = next.run(req).await;
        if writes {
            res.headers_mut().insert(POSITION_HEADER, HeaderValue::from(app.written().get()));
        }
        return res;
    };
    let (node, waits) = forwarding.route_of(&req);
    if node == Node::Primary {
        // A long poll waits on the primary for as long as the primary does: the replica holds
        // no in-flight slot meanwhile, only the forwarded request.
        if waits && let Some(slot) = req.extensions().get::<InFlightSlot>() {
            slot.give_back();
        }
        return if is_write(req.method()) {
            forward_write(app, replica, req).await
        } else {
            forward(app, replica, req).await
        };
    }
    if req.extensions().get::<BehindClient>().is_some() {
        return forward(app, replica, req).await;
    }
    next.run(req).await
}

async fn forward_write(app: &App, replica: &Replica, req: Request) -> Response {
    let started = std::time::Instant::now();
    let mut res = forward(app, replica, req).await;
    let Some(position) = position_of(res.headers()) else { return res };
    replica.primary_at(position);
    // The primary applied the write: its answer goes back in time, caught up or not (a 504 here
    // would tell the client to send the write again).
    let left = replica.answer_within.saturating_sub(started.elapsed());
    let caught_up = replica.applied_position() >= position || replica.wait_for_within(position, left).await;
    if !caught_up {
        metrics::counter!(link::NOT_CAUGHT_UP).increment(1);
        tracing::info!(
            position = position.get(),
            applied = replica.applied_position().get(),
            "answering a forwarded write before applying it"
        );
    }
    res.headers_mut()
        .insert(CAUGHT_UP_HEADER, HeaderValue::from_static(if caught_up { "true" } else { "false" }));
    res
}

/// Why a forwarded request got no answer to pass on.
#[derive(Debug, thiserror::Error)]
enum Failed {
    /// No connection to the primary: the request never reached it.
    #[error("the primary could not be reached: {0}")]
    Unreached(reqwest::Error),
    /// Anything else: the request may have reached the primary (and a write been made).
    #[error("the primary's answer was lost: {0}")]
    Lost(#[from] anyhow::Error),
    #[error("the primary's answer is over {ANSWER_LIMIT} bytes")]
    TooLarge,
}

impl From<reqwest::Error> for Failed {
    fn from(e: reqwest::Error) -> Self {
        if e.is_connect() { Failed::Unreached(e) } else { Failed::Lost(e.into()) }
    }
}

/// Sends `req` to the primary and returns its answer unchanged but for hop-by-hop headers;
/// 503 `primary_unavailable` (with Retry-After) when no connection to the primary could be made
/// (the request never reached it), 502 `bad_gateway` when its answer was lost or is past
/// [`ANSWER_LIMIT`] (a write may have been made).
async fn forward(app: &App, replica: &Replica, req: Request) -> Response {
    if has_dot_segment(req.uri().path()) {
        // The primary's URL would lose it (a URL resolves `..`), so the primary would answer a
        // path the client did not ask for. No resource of the directory is named `.` or `..`.
        return Error::NotFound.into_response();
    }
    metrics::counter!(link::FORWARDED).increment(1);
    match send(app, replica, req).await {
        Ok(res) => res,
        Err(e @ Failed::Unreached(_)) => {
            tracing::warn!(error = %e, "the primary could not be reached for a forwarded request");
            Error::PrimaryUnavailable.into_response()
        }
        Err(e) => {
            tracing::warn!(error = %e, "a forwarded request's answer was not passed on");
            Error::BadGateway.into_response()
        }
    }
}

/// Whether a path holds a segment a URL resolves away: `.` or `..`, percent-encoded or not
/// (`%2e`, `.%2E`), between slashes or backslashes (which a URL of `http` reads as slashes).
fn has_dot_segment(path: &str) -> bool {
    path.split(['/', '\\']).any(|segment| {
        let dots = segment.to_ascii_lowercase().replace("%2e", ".");
        dots == "." || dots == ".."
    })
}

/// The primary's URL for a request: the configured origin with the request's path and query.
/// The request line's authority, and a path that looks like one (`//host/…`, `/\host`), never
/// choose the host.
fn primary_url(primary: &url::Url, uri: &Uri) -> anyhow::Result<url::Url> {
    let mut url = primary.clone();
    url.set_path(uri.path());
    url.set_query(uri.query());
    url.set_fragment(None);
    anyhow::ensure!(url.origin() == primary.origin(), "a forwarded URL left the primary's origin");
    Ok(url)
}

async fn send(app: &App, replica: &Replica, req: Request) -> Result<Response, Failed> {
    let peer = req.extensions().get::<ConnectInfo<std::net::SocketAddr>>().map(|c| c.0.ip());
    let client = crate::net::client_ip(
        peer.unwrap_or(std::net::IpAddr::from([127, 0, 0, 1])),
        req.headers(),
        &app.settings().trusted_proxies,
    );
    let (parts, body) = req.into_parts();
    let url = primary_url(&replica.primary, &parts.uri)?;
    let mut headers = without_hop_by_hop(&parts.headers);
    // The replica worked out who the client is (believing only its trusted proxies); the
    // primary, which trusts the replica, sees that address for its rate limits.
    headers.remove(X_FORWARDED_FOR);
    headers.insert(X_FORWARDED_FOR, HeaderValue::from_str(&client.to_string()).map_err(anyhow::Error::from)?);
    let body = axum::body::to_bytes(body, MAX_BODY_BYTES).await.map_err(|e| anyhow::anyhow!("{e}"))?;
    let answer = replica
        .client
        .request(parts.method, url)
        .headers(headers)
        .body(body)
        .timeout(replica.answer_within.min(FORWARD_TIMEOUT))
        .send()
        .await?;
    let status = answer.status();
    let mut res_headers = without_hop_by_hop(answer.headers());
    res_headers.insert(SERVED_BY_HEADER, HeaderValue::from_static("primary"));
    let bytes = read_bounded(answer).await?;
    let mut res = Response::new(Body::from(bytes));
    *res.status_mut() = status;
    *res.headers_mut() = res_headers;
    Ok(res)
}

/// The answer's body, or `TooLarge` as soon as it passes [`ANSWER_LIMIT`] (declared or sent).
async fn read_bounded(mut answer: reqwest::Response) -> Result<Bytes, Failed> {
    if answer.content_length().is_some_and(|n| n > ANSWER_LIMIT as u64) {
        return Err(Failed::TooLarge);
    }
    let declared = answer.content_length().unwrap_or(0) as usize;
    let mut body = Vec::with_capacity(declared);
    while let Some(chunk) = answer.chunk().await? {
        if body.len() + chunk.len() > ANSWER_LIMIT {
            return Err(Failed::TooLarge);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(Bytes::from(body))
}

/// `headers` without the hop-by-hop ones, including those the `Connection` header names.
fn without_hop_by_hop(headers: &HeaderMap) -> HeaderMap {
    let named: Vec<String> = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|n| n.trim().to_ascii_lowercase())
        .collect();
    let mut out = HeaderMap::with_capacity(headers.len());
    for (name, value) in headers {
        if NOT_FORWARDED.contains(name) || named.iter().any(|n| n == name.as_str()) {
            continue;
        }
        out.append(name.clone(), value.clone());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_answer_past_the_bound_is_not_read() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        tokio::spawn(async move {
            let (mut stream, _) = listener.accept().await.expect("accept");
            let _ = stream.read(&mut [0u8; 1024]).await;
            let head = format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", 300 << 20);
            let _ = stream.write_all(head.as_bytes()).await;
            let _ = stream.write_all(&[b'x'; 64 * 1024]).await;
        });
        let answer = reqwest::get(format!("http://{addr}/")).await.expect("answer");
        assert!(matches!(read_bounded(answer).await, Err(Failed::TooLarge)));
    }

    #[test]
    fn paths_a_url_would_resolve_are_not_forwarded() {
        for path in
            ["/api/agents/../me", "/api/agents/%2e%2E/me", "/api/posts/.%2e", "/api/./me", "/api/x/..\\me"]
        {
            assert!(has_dot_segment(path), "{path}");
        }
        for path in ["/api/me", "/api/agents/a.b/contact", "/api/agents/.../x", "/api/posts/%2e%2e%2e"] {
            assert!(!has_dot_segment(path), "{path}");
        }
        let primary = url::Url::parse("http://10.0.0.5:8080/").expect("url");
        let uri: Uri = "/api/agents/%2e%2e/me".parse().expect("uri");
        assert_eq!(primary_url(&primary, &uri).expect("url").path(), "/api/me", "why they are not");
    }

    #[test]
    fn forwarded_urls_stay_on_the_primary_whatever_the_path_looks_like() {
        let primary = url::Url::parse("http://10.0.0.5:8080/").expect("url");
        for target in [
            "//127.0.0.1:9999/latest/meta-data",
            "//user:pw@127.0.0.1:9999/",
            "///127.0.0.1:9999/x",
            "/api/agents?q=//evil.example/",
            "http://127.0.0.1:9999/api/me",
        ] {
            let uri: Uri = target.parse().expect("uri");
            let url = primary_url(&primary, &uri).expect("forwarded url");
            assert_eq!(url.host_str(), Some("10.0.0.5"), "{target} -> {url}");
            assert_eq!(url.port(), Some(8080), "{target} -> {url}");
            assert_eq!(url.username(), "", "{target} -> {url}");
            assert_eq!(url.path(), uri.path(), "{target} -> {url}");
            assert_eq!(url.query(), uri.query(), "{target} -> {url}");
        }
    }
}
