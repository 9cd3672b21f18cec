//! The two hottest reads — an agent's card and a call, by `tools/call` (`get_agent`,
//! `get_call`) or by `resources/read` — answered without the general MCP machinery.
//!
//! Measured on the card read: rmcp's stateless path (typed parse of the message, a task and
//! channels per request, the result turned into a JSON value and back) cost three times the
//! whole REST read of the same card. The core holds the card rendered (see
//! [`ToolOutput::rendered_json`](crate::ToolOutput::rendered_json)); this path frames those
//! bytes with the text and the request's id, and keeps nothing of its own.
//!
//! It checks nothing: `Host` and `Origin` were checked for both paths before (see `guard`), and
//! it only picks the plainest requests, the ones rmcp accepts as they are and answers exactly
//! as this path does: `POST`, `Accept` naming JSON and SSE without parameters, a JSON
//! `Content-Type`, no session and no other `Mcp-*` header than a protocol version up to
//! 2025-11-25, and a body with nothing but `jsonrpc`, `id`, `method` and the tool's or
//! resource's arguments. Everything else — and any failure, not-found included — goes to rmcp,
//! whose checks and answers are the only ones.

use std::convert::Infallible;

use bytes::Bytes;
use http::{HeaderMap, Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full};
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::guard::BoxResponse;
use crate::port::Arguments;
use crate::{DirectoryRead, render, resources};

/// Protocol revisions whose answers to these reads are the plain ones built here. Newer
/// revisions (standard headers, result types) and the oldest (no structured content) go to rmcp.
const PLAIN_REVISIONS: [&str; 3] = ["2025-03-26", "2025-06-18", "2025-11-25"];
/// Counter of the reads answered by this path (recorded through the `metrics` facade).
pub const FAST_ANSWERS: &str = "agentdir_mcp_fast_answers_total";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Message<'a> {
    jsonrpc: &'a str,
    #[serde(borrow)]
    id: &'a RawValue,
    method: &'a str,
    #[serde(borrow)]
    params: &'a RawValue,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ToolCall<'a> {
    name: &'a str,
    #[serde(borrow)]
    arguments: &'a RawValue,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ResourceRead {
    uri: String,
}

pub(crate) struct Fast<P> {
    port: P,
}

impl<P: DirectoryRead> Fast<P> {
    pub(crate) fn new(port: P) -> Self {
        Fast { port }
    }

    /// The answer, when the request is one this path takes and the read succeeds.
    pub(crate) async fn answer(&self, parts: &http::request::Parts, body: &Bytes) -> Option<BoxResponse> {
        if parts.method != Method::POST || !plain_headers(&parts.headers) {
            return None;
        }
        let message: Message<'_> = serde_json::from_slice(body).ok()?;
        if message.jsonrpc != "2.0" || !plain_id(message.id) {
            return None;
        }
        let result = match message.method {
            "tools/call" => self.tool(message.params).await?,
            "resources/read" => self.resource(message.params).await?,
            _ => return None,
        };
        let mut framed = Vec::with_capacity(result.len() + message.id.get().len() + 40);
        framed.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
        framed.extend_from_slice(message.id.get().as_bytes());
        framed.extend_from_slice(b",\"result\":");
        framed.extend_from_slice(&result);
        framed.push(b'}');
        metrics::counter!(FAST_ANSWERS).increment(1);
        let mut res = Response::new(Full::new(Bytes::from(framed)).boxed());
        *res.status_mut() = StatusCode::OK;
        res.headers_mut().insert(header::CONTENT_TYPE, http::HeaderValue::from_static("application/json"));
        Some(res)
    }

    async fn tool(&self, params: &RawValue) -> Option<Vec<u8>> {
        let call: ToolCall<'_> = serde_json::from_str(params.get()).ok()?;
        let args: Arguments = serde_json::from_str(call.arguments.get()).ok()?;
        match call.name {
            "get_agent" => render::framed_tool_result(&self.port.get_agent(args).await.ok()?),
            "get_call" => render::framed_tool_result(&self.port.get_call(args).await.ok()?),
            _ => None,
        }
    }

    async fn resource(&self, params: &RawValue) -> Option<Vec<u8>> {
        let read: ResourceRead = serde_json::from_str(params.get()).ok()?;
        let mut output = match resources::parse_uri(&read.uri)? {
            resources::Target::Agent(handle) => {
                let out = self.port.get_agent(resources::single("handle", handle)).await.ok()?;
                resources::json_contents(&read.uri, Ok(out)).ok()?
            }
            resources::Target::Call(id) => {
                let out = self.port.get_call(resources::single("id", id)).await.ok()?;
                resources::json_contents(&read.uri, Ok(out)).ok()?
            }
        };
        // The revisions this path serves predate result types (rmcp clears it for them too).
        output.result_type = None;
        serde_json::to_vec(&output).ok()
    }
}

/// Whether the headers are the plain form (see the module's documentation).
fn plain_headers(h: &HeaderMap) -> bool {
    let single = |name: header::HeaderName| {
        let mut all = h.get_all(name).iter();
        match (all.next(), all.next()) {
            (Some(v), None) => v.to_str().ok(),
            _ => None,
        }
    };
    let accepts = single(header::ACCEPT).is_some_and(|a| {
        let mut types: Vec<&str> = a.split(',').map(str::trim).collect();
        types.sort_unstable();
        types == ["application/json", "text/event-stream"]
    });
    let json = single(header::CONTENT_TYPE).is_some_and(|c| {
        let essence = c.split_once(';').map_or(c, |(e, _)| e);
        essence.trim().eq_ignore_ascii_case("application/json")
    });
    let mcp_headers_plain = h.keys().filter(|k| k.as_str().starts_with("mcp-")).all(|k| {
        k.as_str() == "mcp-protocol-version"
            && single(k.clone()).is_some_and(|v| PLAIN_REVISIONS.contains(&v))
    });
    accepts && json && mcp_headers_plain
}

/// A JSON-RPC id rmcp reads as it is written: an integer or a string.
fn plain_id(id: &RawValue) -> bool {
    let text = id.get();
    let integer = !text.is_empty() && text.trim_start_matches('-').bytes().all(|b| b.is_ascii_digit());
    integer && text.parse::<i64>().is_ok() || text.starts_with('"')
}

/// Reads the whole body (already bounded by the server) and hands the request to `fast` or, when
/// it declines, to `slow`.
pub(crate) async fn serve<P, B, S>(fast: &Fast<P>, mut slow: S, req: Request<B>) -> BoxResponse
where
    P: DirectoryRead,
    B: http_body::Body + Send + 'static,
    B::Data: Send,
    B::Error: std::fmt::Display,
    S: tower_service::Service<Request<Full<Bytes>>, Response = BoxResponse, Error = Infallible>,
{
    let (parts, body) = req.into_parts();
    let bytes = match body.collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(e) => {
            tracing::debug!(error = %e, "reading an MCP request body failed");
            Bytes::new()
        }
    };
    if let Some(res) = fast.answer(&parts, &bytes).await {
        return res;
    }
    match slow.call(Request::from_parts(parts, Full::new(bytes))).await {
        Ok(res) => res,
        Err(never) => match never {},
    }
}
