//! The HTTP side of replication, one middleware for both roles.
//!
//! On the primary: every answer to a request that may write carries the write position in
//! `X-Agentdir-Seq`.
//!
//! On a replica: a request that may write (any method but GET, HEAD and OPTIONS, outside the
//! read-only `/mcp`) is sent to the primary as it came, with the client's address in
//! `X-Forwarded-For`, and the primary's answer is returned as it came, once the replica has
//! applied its position (bounded wait; `X-Agentdir-Caught-Up` tells which). A read carrying
//! `X-Agentdir-Seq` waits the same way for that position, and is sent to the primary when the
//! wait runs out.

use axum::body::Body;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::{CAUGHT_UP_HEADER, Link, SEQ_HEADER, SERVED_BY_HEADER, link};
use crate::error::Error;
use crate::http::extract::BODY_LIMIT;
use crate::service::App;

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

fn may_write(req: &Request) -> bool {
    let path = req.uri().path();
    !matches!(*req.method(), Method::GET | Method::HEAD | Method::OPTIONS)
        && path != "/mcp"
        && !path.starts_with("/mcp/")
}

fn seq_of(headers: &HeaderMap) -> Option<u64> {
    headers.get(SEQ_HEADER)?.to_str().ok()?.trim().parse().ok()
}

pub async fn route(State(app): State<App>, req: Request, next: Next) -> Response {
    let Some(link) = app.replica.as_ref() else {
        let writes = may_write(&req);
        let mut res = next.run(req).await;
        if writes {
            res.headers_mut().insert(SEQ_HEADER, HeaderValue::from(app.written()));
        }
        return res;
    };
    if may_write(&req) {
        return forward_write(&app, link, req).await;
    }
    // The client's position is waited for but never taken as the primary's: a made-up one
    // must not make the replica look behind (and so not ready).
    if let Some(wanted) = seq_of(req.headers())
        && wanted > link.applied_seq()
        && !link.wait_for(wanted).await
    {
        return forward(&app, link, req).await;
    }
    next.run(req).await
}

async fn forward_write(app: &App, link: &Link, req: Request) -> Response {
    let mut res = forward(app, link, req).await;
    let Some(position) = seq_of(res.headers()) else { return res };
    link.primary_at(position);
    let caught_up = link.applied_seq() >= position || link.wait_for(position).await;
    if !caught_up {
        metrics::counter!(link::NOT_CAUGHT_UP).increment(1);
        tracing::info!(
            position,
            applied = link.applied_seq(),
            "answering a forwarded write before applying it"
        );
    }
    res.headers_mut()
        .insert(CAUGHT_UP_HEADER, HeaderValue::from_static(if caught_up { "true" } else { "false" }));
    res
}

/// Sends `req` to the primary and returns its answer unchanged but for hop-by-hop headers;
/// 503 `overloaded` (with Retry-After) when the primary cannot be reached.
async fn forward(app: &App, link: &Link, req: Request) -> Response {
    metrics::counter!(link::FORWARDED).increment(1);
    match send(app, link, req).await {
        Ok(res) => res,
        Err(e) => {
            tracing::warn!(error = %e, "the primary did not answer a forwarded request");
            Error::Overloaded.into_response()
        }
    }
}

async fn send(app: &App, link: &Link, req: Request) -> anyhow::Result<Response> {
    let peer = req.extensions().get::<ConnectInfo<std::net::SocketAddr>>().map(|c| c.0.ip());
    let client = crate::http::extract::client_ip(
        peer.unwrap_or(std::net::IpAddr::from([127, 0, 0, 1])),
        req.headers(),
        &app.settings.trusted_proxies,
    );
    let (parts, body) = req.into_parts();
    let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    let url = link.primary.join(path)?;
    let mut headers = without_hop_by_hop(&parts.headers);
    // The replica worked out who the client is (believing only its trusted proxies); the
    // primary, which trusts the replica, sees that address for its rate limits.
    headers.remove(X_FORWARDED_FOR);
    headers.insert(X_FORWARDED_FOR, HeaderValue::from_str(&client.to_string())?);
    let body = axum::body::to_bytes(body, BODY_LIMIT).await?;
    let answer = link.client.request(parts.method, url).headers(headers).body(body).send().await?;
    let status = answer.status();
    let mut res_headers = without_hop_by_hop(answer.headers());
    res_headers.insert(SERVED_BY_HEADER, HeaderValue::from_static("primary"));
    let bytes = answer.bytes().await?;
    let mut res = Response::new(Body::from(bytes));
    *res.status_mut() = status;
    *res.headers_mut() = res_headers;
    Ok(res)
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
