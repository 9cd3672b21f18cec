//! The web's conventions around every answer (CONTRACT.md "Clients and conventions"): CORS on
//! the public reads, a strong `ETag` (and `304`) on every public read that has none of its own,
//! `WWW-Authenticate` on a `401`, and the public reads' bodies compressed in the encoding the
//! client takes (`compression`), each encoding with its own tag and `Vary: Accept-Encoding`.
//!
//! CORS is for the public `GET`/`HEAD` routes of the table only (the API's reads, the keys,
//! statements, openapi.json, skill.md): anyone may read them, so any origin may, with
//! `Access-Control-Allow-Origin: *` and no credentials. A preflight is answered for them.
//! Keyed routes get none: a key is never sent by a browser on another origin's behalf. `/mcp`
//! gets none either: it refuses a foreign `Origin` (DNS rebinding), and a browser MCP client
//! reaches it through its own server.

use std::collections::HashSet;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{MatchedPath, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::compression::{self, Compressed, Encoding};
use super::routes::{Access, endpoints};
use crate::derived::rendered::Rendered;

/// What a page of another origin may read of a public answer besides the simple headers.
pub const EXPOSED: &str = "ETag, Retry-After, X-Agentdir-Seq";
/// What a cross-origin read may send beyond the simple headers (a cached copy's tag, the
/// position a replica waits for).
pub const ALLOWED_HEADERS: &str = "If-None-Match, X-Agentdir-Seq";
/// How long a browser may keep a preflight's answer (seconds).
pub const PREFLIGHT_MAX_AGE: u32 = 86_400;
/// The realm of the `WWW-Authenticate` challenge of a `401`.
pub const REALM: &str = "agentdir";
/// The largest answer of a public read this reads whole to tag and compress it. Every such
/// answer is built in memory already, the largest a sitemap of 50,000 cards (about 5 MiB); one
/// past this bound would be a defect, answered 500.
const TAGGED_MAX_BYTES: usize = 32 * 1024 * 1024;

/// The route templates the conventions know, and the compressed bodies kept (a cheap clone).
#[derive(Clone)]
pub struct Conventions {
    /// The public `GET` routes of the table: CORS, tags, kept compressed bodies.
    public: Arc<HashSet<&'static str>>,
    /// Other public reads whose bodies are kept compressed (the pages for people).
    represented: Arc<HashSet<&'static str>>,
    compressed: Compressed,
}

impl Conventions {
    /// The public `GET` routes of the table and `public` (documents served beside it, such as
    /// the MCP Server Card), and `others` (read by anyone, but not for other origins' pages).
    pub fn new(
        public: impl IntoIterator<Item = &'static str>,
        others: impl IntoIterator<Item = &'static str>,
    ) -> Conventions {
        let public = endpoints()
            .into_iter()
            .filter(|e| e.method == Method::GET && e.access == Access::Public)
            .map(|e| e.path)
            .chain(public)
            .collect();
        Conventions {
            public: Arc::new(public),
            represented: Arc::new(others.into_iter().collect()),
            compressed: Compressed::default(),
        }
    }

    fn template(req: &Request) -> Option<&str> {
        req.extensions().get::<MatchedPath>().map(MatchedPath::as_str)
    }
}

pub async fn apply(State(conventions): State<Conventions>, req: Request, next: Next) -> Response {
    let keyed = req.headers().contains_key(header::AUTHORIZATION);
    let template = Conventions::template(&req);
    let cors = template.is_some_and(|t| conventions.public.contains(t));
    let represented = cors || template.is_some_and(|t| conventions.represented.contains(t));
    if cors && req.method() == Method::OPTIONS {
        return preflight();
    }
    // A write to the same path (POST /api/agents) is no public read.
    if !represented || !matches!(*req.method(), Method::GET | Method::HEAD) {
        let mut res = next.run(req).await;
        challenge(&mut res, keyed);
        return res;
    }
    let encoding = Encoding::negotiate(req.headers());
    let if_none_match: Vec<String> = req
        .headers()
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok().map(str::to_owned))
        .collect();
    let (mut parts, body) = req.into_parts();
    // The whole identity body, to tag and compress here; which copy the client holds is
    // decided here too, against the tag of the encoding it gets.
    parts.headers.remove(header::IF_NONE_MATCH);
    parts.headers.remove(header::ACCEPT_ENCODING);
    if parts.method == Method::HEAD {
        // The tag is of the body a GET would get; the server leaves the body out of a HEAD answer.
        parts.method = Method::GET;
    }
    let mut res = next.run(Request::from_parts(parts, body)).await;
    challenge(&mut res, keyed);
    if res.status() == StatusCode::OK {
        res = represent(res, encoding, &if_none_match, &conventions.compressed).await;
    }
    if cors {
        allow_any_origin(res.headers_mut());
    }
    res
}

/// RFC 6750 §3: a `401` says how to authenticate, and that the token sent was not valid when
/// one was sent.
fn challenge(res: &mut Response, keyed: bool) {
    if res.status() != StatusCode::UNAUTHORIZED {
        return;
    }
    let value = if keyed {
        format!("Bearer realm=\"{REALM}\", error=\"invalid_token\"")
    } else {
        format!("Bearer realm=\"{REALM}\"")
    };
    if let Ok(v) = HeaderValue::from_str(&value) {
        res.headers_mut().insert(header::WWW_AUTHENTICATE, v);
    }
}

fn allow_any_origin(headers: &mut HeaderMap) {
    headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*"));
    headers.insert(header::ACCESS_CONTROL_EXPOSE_HEADERS, HeaderValue::from_static(EXPOSED));
}

fn preflight() -> Response {
    let mut res = StatusCode::NO_CONTENT.into_response();
    let headers = res.headers_mut();
    allow_any_origin(headers);
    headers.insert(header::ACCESS_CONTROL_ALLOW_METHODS, HeaderValue::from_static("GET, HEAD"));
    headers.insert(header::ACCESS_CONTROL_ALLOW_HEADERS, HeaderValue::from_static(ALLOWED_HEADERS));
    headers.insert(header::ACCESS_CONTROL_MAX_AGE, HeaderValue::from(PREFLIGHT_MAX_AGE));
    res
}

/// The answer as the client gets it: its identity tag (the view's own, or the SHA-256 of its
/// bytes), the body compressed in the negotiated encoding when it is large enough (kept, and
/// tagged for that encoding), and `304` without a body when the client holds that tag.
async fn represent(
    res: Response,
    encoding: Option<Encoding>,
    if_none_match: &[String],
    kept: &Compressed,
) -> Response {
    let (mut parts, body) = res.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, TAGGED_MAX_BYTES).await else {
        return crate::error::Error::Internal.into_response();
    };
    let identity = match parts.headers.get(header::ETAG).and_then(|v| v.to_str().ok()) {
        Some(own) => own.to_owned(),
        None => Rendered::from_json(bytes.to_vec()).etag,
    };
    parts.headers.entry(header::CACHE_CONTROL).or_insert(HeaderValue::from_static("no-cache"));
    let varies = parts
        .headers
        .get_all(header::VARY)
        .iter()
        .any(|v| v.to_str().is_ok_and(|v| v.to_ascii_lowercase().contains("accept-encoding")));
    if !varies {
        parts.headers.append(header::VARY, HeaderValue::from_static("Accept-Encoding"));
    }
    let compressible =
        bytes.len() >= compression::MIN_BYTES && !parts.headers.contains_key(header::CONTENT_ENCODING);
    let (etag, body) = match encoding.filter(|_| compressible) {
        Some(e) => match kept.get(&identity, e, &bytes).await {
            Some(compressed) => {
                parts.headers.insert(header::CONTENT_ENCODING, HeaderValue::from_static(e.token()));
                parts.headers.remove(header::CONTENT_LENGTH);
                (e.tag(&identity), compressed)
            }
            None => (identity, bytes),
        },
        None => (identity, bytes),
    };
    if let Ok(v) = HeaderValue::from_str(&etag) {
        parts.headers.insert(header::ETAG, v);
    }
    if if_none_match.iter().any(|v| names(v, &etag)) {
        parts.status = StatusCode::NOT_MODIFIED;
        for gone in [header::CONTENT_TYPE, header::CONTENT_LENGTH, header::CONTENT_ENCODING] {
            parts.headers.remove(gone);
        }
        return Response::from_parts(parts, Body::empty());
    }
    Response::from_parts(parts, Body::from(body))
}

/// Whether an `If-None-Match` value names `etag` (RFC 9110 §13.1.2: `*`, or a list of tags
/// compared weakly).
fn names(if_none_match: &str, etag: &str) -> bool {
    if_none_match
        .split(',')
        .map(str::trim)
        .any(|tag| tag == "*" || tag.strip_prefix("W/").unwrap_or(tag) == etag)
}
