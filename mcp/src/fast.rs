//! The two hottest reads — an agent's card and a call, by `tools/call` (`get_agent`,
//! `get_call`) or by `resources/read` — answered without the general MCP machinery.
//!
//! Measured on the card read: rmcp's stateless path (typed parse of the message, a task and
//! channels per request, the result turned into a JSON value and back) cost three times the
//! whole REST read of the same card. The core holds the card rendered (see
//! [`ToolOutput::rendered_json`](crate::ToolOutput::rendered_json)); this path frames those
//! bytes with the text and the request's id. Writing the text means reading the document's JSON
//! (twice the work of the whole REST read), so the result framed for a document is remembered
//! under the document's tag (see [`Framed`]).
//!
//! Measured with `mcp_vs_rest` (16 clients, release): `get_agent` at 93 % of the REST card's
//! throughput with the framed results remembered, 48–49 % when each is framed anew, and about
//! 40 % through rmcp's path (docs/mcp.md).
//!
//! It checks nothing: `Host` and `Origin` were checked for both paths before (see `guard`), and
//! it only picks the plainest requests, the ones rmcp accepts as they are and answers exactly
//! as this path does: `POST`, `Accept` naming JSON and SSE without parameters, a JSON
//! `Content-Type`, no session and no other `Mcp-*` header than a protocol version up to
//! 2025-11-25, and a body with nothing but `jsonrpc`, `id`, `method` and the tool's or
//! resource's arguments. Everything else — and any failure, not-found included — goes to rmcp,
//! whose checks and answers are the only ones.

use std::convert::Infallible;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http::{HeaderMap, Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full};
use lru::LruCache;
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::error::ToolError;
use crate::guard::BoxResponse;
use crate::port::{Arguments, ToolOutput};
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
    framed: Framed,
}

impl<P: DirectoryRead> Fast<P> {
    pub(crate) fn new(port: P) -> Self {
        Fast { port, framed: Framed::new(FRAMED_BYTES) }
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

    async fn tool(&self, params: &RawValue) -> Option<Arc<[u8]>> {
        let call: ToolCall<'_> = serde_json::from_str(params.get()).ok()?;
        let args: Arguments = serde_json::from_str(call.arguments.get()).ok()?;
        match call.name {
            "get_agent" => self.framed(&self.port.get_agent(args).await.ok()?),
            "get_call" => self.framed(&self.port.get_call(args).await.ok()?),
            _ => None,
        }
    }

    /// The tool result of `output`: remembered when its document has a tag, else framed now.
    fn framed<T: ToolOutput>(&self, output: &T) -> Option<Arc<[u8]>> {
        let Some(tag) = output.rendered_tag() else {
            return render::framed_tool_result(output).map(Arc::from);
        };
        if let Some(held) = self.framed.get(tag) {
            return Some(held);
        }
        let result: Arc<[u8]> = render::framed_tool_result(output)?.into();
        self.framed.keep(tag, result.clone());
        Some(result)
    }

    async fn resource(&self, params: &RawValue) -> Option<Arc<[u8]>> {
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
        serde_json::to_vec(&output).ok().map(Arc::from)
    }
}

type Results = LruCache<String, Arc<[u8]>>;

/// Memory for the results the short path framed.
const FRAMED_BYTES: usize = 8 << 20;

/// Framed tool results by the tag of the document they frame, least recently used out first past
/// a budget of bytes. A result is a function of its document's bytes and a changed document has
/// a new tag, so an entry is never stale and nothing but the budget evicts it: there is nothing
/// to invalidate. Documents themselves stay in the core's cache; this holds only MCP's framing.
struct Framed {
    /// The results by tag, and the bytes they hold.
    held: Mutex<(Results, usize)>,
    max_bytes: usize,
}

impl Framed {
    fn new(max_bytes: usize) -> Framed {
        Framed { held: Mutex::new((LruCache::unbounded(), 0)), max_bytes }
    }

    fn get(&self, tag: &str) -> Option<Arc<[u8]>> {
        self.held.lock().unwrap_or_else(|e| e.into_inner()).0.get(tag).cloned()
    }

    fn keep(&self, tag: &str, result: Arc<[u8]>) {
        let bytes = result.len() + tag.len();
        if bytes > self.max_bytes {
            return;
        }
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        let (entries, total) = &mut *held;
        if let Some(old) = entries.put(tag.to_owned(), result) {
            *total -= old.len() + tag.len();
        }
        *total += bytes;
        while *total > self.max_bytes {
            match entries.pop_lru() {
                Some((gone_tag, gone)) => *total -= gone.len() + gone_tag.len(),
                None => break,
            }
        }
    }
}

/// Whether the headers are the plain form (see the module's documentation).
fn plain_headers(h: &HeaderMap) -> bool {
    let accepts = single(h, header::ACCEPT).is_some_and(|a| {
        let mut types: Vec<&str> = a.split(',').map(str::trim).collect();
        types.sort_unstable();
        types == ["application/json", "text/event-stream"]
    });
    let json = json_body(h);
    let mcp_headers_plain = h.keys().filter(|k| k.as_str().starts_with("mcp-")).all(|k| {
        k.as_str() == "mcp-protocol-version"
            && single(h, k.clone()).is_some_and(|v| PLAIN_REVISIONS.contains(&v))
    });
    accepts && json && mcp_headers_plain
}

/// Whether the request says its body is JSON (one `Content-Type`, `application/json`), as rmcp
/// requires before it reads the body.
fn json_body(h: &HeaderMap) -> bool {
    single(h, header::CONTENT_TYPE).is_some_and(|c| {
        let essence = c.split_once(';').map_or(c, |(e, _)| e);
        essence.trim().eq_ignore_ascii_case("application/json")
    })
}

/// The header's value when it is sent once, as text.
fn single(h: &HeaderMap, name: header::HeaderName) -> Option<&str> {
    let mut all = h.get_all(name).iter();
    match (all.next(), all.next()) {
        (Some(v), None) => v.to_str().ok(),
        _ => None,
    }
}

/// A JSON-RPC id rmcp reads as it is written: an integer or a string. A string's escapes are
/// read when it has any: one that is no text (a lone surrogate, `"\ud800"`) makes the body no
/// JSON for rmcp, and would be echoed back to a client that cannot read it either.
fn plain_id(id: &RawValue) -> bool {
    let text = id.get();
    let integer = !text.is_empty() && text.trim_start_matches('-').bytes().all(|b| b.is_ascii_digit());
    let string =
        text.starts_with('"') && (!text.contains('\\') || serde_json::from_str::<String>(text).is_ok());
    integer && text.parse::<i64>().is_ok() || string
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
    let said_json = parts.method == Method::POST && json_body(&parts.headers);
    if said_json && let Some(res) = without_params(&bytes) {
        return res;
    }
    let res = match slow.call(Request::from_parts(parts, Full::new(bytes.clone()))).await {
        Ok(res) => res,
        Err(never) => match never {},
    };
    // rmcp answers a JSON body it cannot read as a message "415 Unsupported Media Type" in
    // plain text; the media type was right, so the client gets JSON-RPC's own answer.
    if said_json && res.status() == StatusCode::UNSUPPORTED_MEDIA_TYPE {
        return unreadable(&bytes);
    }
    if res.status().is_client_error() && !speaks_json(res.headers()) {
        return in_json(res).await;
    }
    let small = http_body::Body::size_hint(res.body()).exact().is_some_and(|n| n <= SMALL_ANSWER_BYTES);
    if res.status() == StatusCode::OK && small {
        return with_params_error_told(res).await;
    }
    res
}

/// Longest answer that can be one of rmcp's bare errors [`with_params_error_told`] rewrites; a
/// result is longer, or is not looked at.
const SMALL_ANSWER_BYTES: u64 = 512;

/// rmcp's answer to a method this server answers, sent with params it cannot read, told as
/// JSON-RPC says and in both languages: rmcp answers `-32601` (as if the method did not exist)
/// when a typed read of the params fails, and `-32602` without the envelope for some others.
async fn with_params_error_told(res: BoxResponse) -> BoxResponse {
    let (parts, body) = res.into_parts();
    let bytes = match body.collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(never) => match never {},
    };
    let rebuilt = || Response::from_parts(parts.clone(), Full::new(bytes.clone()).boxed());
    let Ok(serde_json::Value::Object(mut answer)) = serde_json::from_slice::<serde_json::Value>(&bytes)
    else {
        return rebuilt();
    };
    let Some(serde_json::Value::Object(error)) = answer.get_mut("error") else { return rebuilt() };
    let code = error.get("code").and_then(serde_json::Value::as_i64);
    let told = match (code, error.get("message").and_then(serde_json::Value::as_str)) {
        _ if error.contains_key("data") => return rebuilt(),
        // rmcp names the method it could not read as the message.
        (Some(-32601), Some(method)) if NEEDS_PARAMS.contains(&method) => {
            let told = ToolError::params_malformed(Some(method));
            error.insert("message".into(), told.message_en.clone().into());
            told
        }
        // A method nobody here answers: JSON-RPC's own code, and the envelope beside it.
        (Some(-32601), Some(method)) => {
            let told = ToolError::unknown_method(method);
            error.insert("data".into(), told.envelope());
            return told_again(parts, answer);
        }
        (Some(-32602), Some(message)) => {
            ToolError::params_malformed(NEEDS_PARAMS.iter().find(|m| message.contains(*m)).copied())
        }
        _ => return rebuilt(),
    };
    error.insert("code".into(), (-32602).into());
    error.insert("data".into(), told.envelope());
    told_again(parts, answer)
}

/// The answer `answer`, changed, under the head `parts` it came with.
fn told_again(
    mut parts: http::response::Parts,
    answer: serde_json::Map<String, serde_json::Value>,
) -> BoxResponse {
    parts.headers.remove(header::CONTENT_LENGTH);
    let body = serde_json::Value::Object(answer).to_string();
    Response::from_parts(parts, Full::new(Bytes::from(body)).boxed())
}

/// Methods this server answers that cannot go without `params`. rmcp reads such a request
/// without them as an unknown method (-32601), which JSON-RPC reserves for methods that do not
/// exist.
const NEEDS_PARAMS: [&str; 4] = ["initialize", "tools/call", "resources/read", "completion/complete"];

const PARAMS_KEY: &[u8] = b"\"params\"";

/// JSON-RPC's -32602 for a request of [`NEEDS_PARAMS`] that has none, answered to its id.
fn without_params(body: &[u8]) -> Option<BoxResponse> {
    // Nearly every request names its params: those are not read a second time here.
    if body.windows(PARAMS_KEY.len()).any(|w| w == PARAMS_KEY) {
        return None;
    }
    let serde_json::Value::Object(message) = serde_json::from_slice(body).ok()? else { return None };
    let method = message.get("method")?.as_str()?;
    let id = message.get("id").filter(|id| id.is_string() || id.is_i64())?;
    if !NEEDS_PARAMS.contains(&method) || message.get("params").is_some_and(|p| !p.is_null()) {
        return None;
    }
    let error = ToolError::params_missing(method);
    let answer = serde_json::json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {"code": -32602, "message": error.message_en, "data": error.envelope()},
    });
    let mut res = Response::new(Full::new(Bytes::from(answer.to_string())).boxed());
    res.headers_mut().insert(header::CONTENT_TYPE, http::HeaderValue::from_static("application/json"));
    Some(res)
}

/// Whether an answer is JSON or an event stream (JSON-RPC either way), not rmcp's plain text.
fn speaks_json(h: &HeaderMap) -> bool {
    h.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).is_some_and(|c| {
        let essence = c.split_once(';').map_or(c, |(e, _)| e).trim().to_ascii_lowercase();
        essence == "application/json" || essence == "text/event-stream"
    })
}

/// rmcp's plain-text refusal as a JSON-RPC error with the bilingual envelope, its status and
/// other headers (`Allow`) kept.
async fn in_json(res: BoxResponse) -> BoxResponse {
    let (mut parts, body) = res.into_parts();
    let detail = match body.collect().await {
        Ok(collected) => String::from_utf8_lossy(&collected.to_bytes()).trim().to_owned(),
        Err(_) => String::new(),
    };
    let error = ToolError::refused(parts.status, &detail);
    parts.headers.remove(header::CONTENT_LENGTH);
    json_rpc_error(parts.status, -32600, &error, Some(parts.headers))
}

/// An answer of JSON-RPC's error with `id: null` (no message was read), the envelope as `data`.
pub(crate) fn json_rpc_error(
    status: StatusCode,
    code: i32,
    error: &ToolError,
    headers: Option<HeaderMap>,
) -> BoxResponse {
    let message = serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {"code": code, "message": error.message_en, "data": error.envelope()},
    });
    let mut res = Response::new(Full::new(Bytes::from(message.to_string())).boxed());
    *res.status_mut() = status;
    if let Some(headers) = headers {
        *res.headers_mut() = headers;
    }
    res.headers_mut().insert(header::CONTENT_TYPE, http::HeaderValue::from_static("application/json"));
    res
}

/// 400 with the JSON-RPC error for a body that is no message: -32700 when it is not JSON at
/// all, -32600 when it is JSON but not a request, notification or response; `data` holds the
/// bilingual envelope.
fn unreadable(body: &[u8]) -> BoxResponse {
    let (code, error) = match serde_json::from_slice::<serde_json::Value>(body) {
        Err(_) => (-32700, ToolError::not_json()),
        Ok(_) => (-32600, ToolError::not_a_message()),
    };
    json_rpc_error(StatusCode::BAD_REQUEST, code, &error, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn framed_results_stay_within_their_budget_oldest_out_first() {
        let framed = Framed::new(100);
        framed.keep("a", Arc::from(vec![0u8; 40]));
        framed.keep("b", Arc::from(vec![1u8; 40]));
        assert!(framed.get("a").is_some(), "a is now the most recent");
        framed.keep("c", Arc::from(vec![2u8; 40]));
        assert!(framed.get("b").is_none(), "b was the least recently used");
        assert_eq!(framed.get("a").as_deref(), Some(&[0u8; 40][..]));
        assert_eq!(framed.get("c").as_deref(), Some(&[2u8; 40][..]));
        framed.keep("huge", Arc::from(vec![3u8; 200]));
        assert!(framed.get("huge").is_none(), "larger than the whole budget");
        assert!(framed.get("c").is_some());
    }
}
