//! The web's conventions around every answer (CONTRACT.md "Clients and conventions"): CORS on
//! the public reads, a strong `ETag` (and `304`) on every public read that has none of its own,
//! and `WWW-Authenticate` on a `401`. Compression is `compression`'s.
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
/// The largest answer a public read is tagged for (larger ones are not buffered to hash them).
const TAGGED_MAX_BYTES: usize = 8 * 1024 * 1024;

/// The route templates the conventions know (a cheap clone).
#[derive(Clone)]
pub struct Conventions(Arc<HashSet<&'static str>>);

impl Conventions {
    /// The public `GET` routes of the table.
    pub fn new() -> Conventions {
        let public = endpoints()
            .into_iter()
            .filter(|e| e.method == Method::GET && e.access == Access::Public)
            .map(|e| e.path)
            .collect();
        Conventions(Arc::new(public))
    }

    fn public_read(&self, req: &Request) -> bool {
        req.extensions().get::<MatchedPath>().is_some_and(|p| self.0.contains(p.as_str()))
    }
}

impl Default for Conventions {
    fn default() -> Self {
        Conventions::new()
    }
}

pub async fn apply(State(conventions): State<Conventions>, req: Request, next: Next) -> Response {
    let keyed = req.headers().contains_key(header::AUTHORIZATION);
    let public = conventions.public_read(&req);
    if public && req.method() == Method::OPTIONS {
        return preflight();
    }
    // A write to the same path (POST /api/agents) is no public read.
    if !public || !matches!(*req.method(), Method::GET | Method::HEAD) {
        let mut res = next.run(req).await;
        challenge(&mut res, keyed);
        return res;
    }
    let head = req.method() == Method::HEAD;
    let if_none_match: Vec<String> = req
        .headers()
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok().map(str::to_owned))
        .collect();
    let (mut parts, body) = req.into_parts();
    if head {
        // The tag is of the body a GET would get; the server leaves the body out of a HEAD answer.
        parts.method = Method::GET;
    }
    let mut res = next.run(Request::from_parts(parts, body)).await;
    challenge(&mut res, keyed);
    if res.status() == StatusCode::OK && !res.headers().contains_key(header::ETAG) {
        res = tag(res, &if_none_match).await;
    }
    allow_any_origin(res.headers_mut());
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

/// A strong `ETag` of the answer's bytes, and `304` without a body when the client holds them.
async fn tag(res: Response, if_none_match: &[String]) -> Response {
    let (mut parts, body) = res.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, TAGGED_MAX_BYTES).await else {
        return crate::error::Error::Internal.into_response();
    };
    let rendered = Rendered::from_json(bytes.to_vec());
    let Ok(etag) = HeaderValue::from_str(&rendered.etag) else {
        return Response::from_parts(parts, Body::from(bytes));
    };
    parts.headers.insert(header::ETAG, etag);
    parts.headers.entry(header::CACHE_CONTROL).or_insert(HeaderValue::from_static("no-cache"));
    if if_none_match.iter().any(|v| rendered.matches(v)) {
        parts.status = StatusCode::NOT_MODIFIED;
        parts.headers.remove(header::CONTENT_TYPE);
        parts.headers.remove(header::CONTENT_LENGTH);
        return Response::from_parts(parts, Body::empty());
    }
    Response::from_parts(parts, Body::from(rendered.json))
}
