//! The two hottest reads — an agent's card and a call, by `tools/call` (`get_agent`,
//! `get_call`) or by `resources/read` — answered without the general MCP machinery.
//!
//! Measured on the card read: rmcp's stateless path (typed parse of the message, a task and
//! channels per request, the result turned into a JSON value and back) cost three times the
//! whole REST read of the same card. The port already holds the card rendered (see
//! [`ToText::version`]); this path serialises the tool result once per version of the view and
//! afterwards only frames it with the request's id.
//!
//! It takes only the plainest requests, whose answer is exactly what rmcp would give: `POST`,
//! `Accept` naming JSON and SSE without parameters, a JSON `Content-Type`, no session and no
//! other `Mcp-*` header than a protocol version up to 2025-11-25, a `Host` the endpoint accepts
//! and no `Origin`, and a body with nothing but `jsonrpc`, `id`, `method` and the tool's or
//! resource's arguments. Everything else — and any failure, not-found included — goes to rmcp,
//! which decides as it always does.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::Mutex;

use bytes::Bytes;
use http::{HeaderMap, Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full, combinators::BoxBody};
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::port::Arguments;
use crate::{DirectoryRead, McpConfig, ToText, render, resources};

pub(crate) type BoxResponse = Response<BoxBody<Bytes, Infallible>>;

/// Protocol revisions whose answers to these reads are the plain ones built here. Newer
/// revisions (standard headers, result types) and the oldest (no structured content) go to rmcp.
const PLAIN_REVISIONS: [&str; 3] = ["2025-03-26", "2025-06-18", "2025-11-25"];
/// Counter of the reads answered by this path (recorded through the `metrics` facade).
pub const FAST_ANSWERS: &str = "agentdir_mcp_fast_answers_total";
/// Answers remembered; past it the memory starts over (a miss costs one serialisation).
const ANSWERS_MAX: usize = 4_096;

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

/// Which read, and under which identity its answer is remembered.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Answer {
    Tool { call: bool, version: String },
    Resource { uri: String, version: String },
}

pub(crate) struct Fast<P> {
    port: P,
    hosts: Vec<String>,
    answers: Mutex<HashMap<Answer, Bytes>>,
}

impl<P: DirectoryRead> Fast<P> {
    pub(crate) fn new(port: P, cfg: &McpConfig) -> Self {
        Fast { port, hosts: cfg.allowed_hosts(), answers: Mutex::new(HashMap::new()) }
    }

    /// The answer, when the request is one this path takes and the read succeeds.
    pub(crate) async fn answer(&self, parts: &http::request::Parts, body: &Bytes) -> Option<BoxResponse> {
        if parts.method != Method::POST || !self.plain_headers(&parts.headers) {
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

    fn plain_headers(&self, h: &HeaderMap) -> bool {
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
        let host_allowed = single(header::HOST).is_some_and(|host| {
            let name = match host.rsplit_once(':') {
                Some((name, port)) if !name.ends_with(']') || host.starts_with('[') => {
                    if port.bytes().all(|b| b.is_ascii_digit()) { name } else { host }
                }
                _ => host,
            };
            self.hosts.iter().any(|allowed| allowed.eq_ignore_ascii_case(name))
        });
        accepts && json && mcp_headers_plain && host_allowed && !h.contains_key(header::ORIGIN)
    }

    async fn tool(&self, params: &RawValue) -> Option<Bytes> {
        let call: ToolCall<'_> = serde_json::from_str(params.get()).ok()?;
        let args: Arguments = serde_json::from_str(call.arguments.get()).ok()?;
        match call.name {
            "get_agent" => {
                let out = self.port.get_agent(args).await.ok()?;
                let key = Answer::Tool { call: false, version: out.version()?.to_owned() };
                self.remembered(key, || serde_json::to_vec(&older_revision(render::tool_result(Ok(out)))))
            }
            "get_call" => {
                let out = self.port.get_call(args).await.ok()?;
                let key = Answer::Tool { call: true, version: out.version()?.to_owned() };
                self.remembered(key, || serde_json::to_vec(&older_revision(render::tool_result(Ok(out)))))
            }
            _ => None,
        }
    }

    async fn resource(&self, params: &RawValue) -> Option<Bytes> {
        let read: ResourceRead = serde_json::from_str(params.get()).ok()?;
        let (output, version) = match resources::parse_uri(&read.uri)? {
            resources::Target::Agent(handle) => {
                let out = self.port.get_agent(resources::single("handle", handle)).await.ok()?;
                let version = out.version()?.to_owned();
                (resources::json_contents(&read.uri, Ok(out)).ok()?, version)
            }
            resources::Target::Call(id) => {
                let out = self.port.get_call(resources::single("id", id)).await.ok()?;
                let version = out.version()?.to_owned();
                (resources::json_contents(&read.uri, Ok(out)).ok()?, version)
            }
        };
        let key = Answer::Resource { uri: read.uri.clone(), version };
        let mut output = output;
        // The revisions this path serves predate result types (rmcp clears it for them too).
        output.result_type = None;
        self.remembered(key, || serde_json::to_vec(&output))
    }

    fn remembered(&self, key: Answer, make: impl FnOnce() -> serde_json::Result<Vec<u8>>) -> Option<Bytes> {
        if let Some(found) = self.lock().get(&key) {
            return Some(found.clone());
        }
        let bytes = Bytes::from(make().ok()?);
        let mut answers = self.lock();
        if answers.len() >= ANSWERS_MAX {
            answers.clear();
        }
        answers.insert(key, bytes.clone());
        Some(bytes)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Answer, Bytes>> {
        self.answers.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The revisions this path serves predate result types: rmcp clears the field for them too.
fn older_revision(mut result: rmcp::model::CallToolResult) -> rmcp::model::CallToolResult {
    result.result_type = None;
    result
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
