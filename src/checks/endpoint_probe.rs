//! Liveness checks of listed endpoints: whether an A2A agent serves a valid agent card, an MCP
//! server completes its handshake and lists its tools, an HTTP service answers 2xx.
//!
//! Every request goes through `link_fetch::exchange`, so the SSRF rules of link proofs hold for
//! checks too (public addresses and web ports only, pinned connections, redirects rechecked, a
//! deadline, a read bound), and every hop of every request is admitted by the caller's
//! `HopGate` (the schedule's turns per host). That is also why MCP is spoken here as a few JSON-RPC posts rather than through
//! an MCP client crate: a generic client opens its own connections and would bypass the checks.
//!
//! It owns no state: scheduling checks and recording what they find is `service::endpoint_checks`.

use reqwest::header::HeaderMap;
use serde_json::{Value, json};

use super::link_fetch::{self, Answer, FetchPolicy, HopGate, LinkFetchError, PrivateTargets, Request};
use crate::domain::endpoint::{
    A2A_WELL_KNOWN, CHECK_DEADLINE, CHECK_READ_BYTES, EndpointKind, EndpointProof, EndpointReason as Why,
    EndpointStatus, Finding, MCP_DISCOVER_REVISION, MCP_INITIALIZE_REVISION, OBSERVED_PER_ENDPOINT, Observed,
    PROOF_WELL_KNOWN, TOOL_PAGES_COUNTED,
};
use crate::domain::trust::{carries_proof_text, holds_proof};

/// How a check reaches the network: the fetch rules, and the gate every hop passes.
#[derive(Clone, Copy)]
struct Reach<'a> {
    policy: &'a FetchPolicy,
    gate: &'a dyn HopGate,
}

impl Reach<'_> {
    async fn exchange(&self, url: &str, request: &Request) -> Result<Answer, LinkFetchError> {
        link_fetch::exchange(url, request, self.policy, self.gate).await
    }
}

/// Checks one endpoint of the agent `handle` within `CHECK_DEADLINE`; `gate` admits every hop of
/// every request. What a live A2A or MCP endpoint exposes (skills, tools) is kept only when the
/// endpoint proves it is the agent's: its own answer holds the agent's proof text, or its
/// origin's `PROOF_WELL_KNOWN` does.
pub async fn check(
    kind: EndpointKind,
    url: &str,
    handle: &str,
    private: &PrivateTargets,
    gate: &dyn HopGate,
) -> Finding {
    let policy = FetchPolicy {
        timeout: CHECK_DEADLINE,
        max_bytes: CHECK_READ_BYTES,
        ..FetchPolicy::reaching(private)
    };
    let reach = Reach { policy: &policy, gate };
    let checked = async {
        let (mut found, answer) = match kind {
            EndpointKind::Http => return http(url, reach).await,
            EndpointKind::A2a => a2a(url, reach).await,
            EndpointKind::Mcp => mcp(url, reach).await,
        };
        if found.status() != EndpointStatus::Live {
            return found;
        }
        found.proof = if answer.iter().any(|text| holds_proof(text, handle)) {
            Some(EndpointProof::Answer)
        } else if proven_at_origin(url, handle, reach).await {
            Some(EndpointProof::WellKnown)
        } else {
            None
        };
        if found.proof.is_none() {
            found.observed.clear();
        }
        found
    };
    tokio::time::timeout(CHECK_DEADLINE, checked).await.unwrap_or_else(|_| Finding::down(Why::Timeout))
}

/// Why a check ended early, as a finding. A name that does not resolve, an address that is not
/// public and a connection refused all read `down`, `unreachable`: what the directory can reach
/// from where it stands is not shown to whoever lists an endpoint.
fn failed(e: &LinkFetchError) -> Finding {
    use LinkFetchError::*;
    match e {
        Resolve(_) | RefusedAddress(_) | Connect(_) | Http(_) => Finding::down(Why::Unreachable),
        Timeout => Finding::down(Why::Timeout),
        Tls(_) => Finding::down(Why::Tls),
        // Never recorded: the schedule tries again when the host is free.
        HostBusy => Finding::down(Why::Unreachable),
        Status(status) => not_success(*status),
        // The endpoint's own URL passed these rules when it was set: a redirect broke them.
        InvalidUrl(_) | UnsupportedScheme(_) | CredentialsInUrl | RefusedPort(_) | TooManyRedirects
        | RedirectElsewhere => Finding::invalid(Why::Redirect),
    }
}

/// A status that says the server is not answering now (rather than answering wrongly).
fn unavailable(status: u16) -> bool {
    status >= 500 || status == 408 || status == 429
}

fn not_success(status: u16) -> Finding {
    if unavailable(status) { Finding::down(Why::HttpStatus) } else { Finding::invalid(Why::HttpStatus) }
}

/// A 2xx answer that is not what the kind answers: `too_large` when it was cut at the bound
/// (which is likely why it did not read), else `wrong`.
fn unreadable(answer: &Answer, wrong: Why) -> Finding {
    Finding::invalid(if answer.truncated { Why::TooLarge } else { wrong })
}

fn success(status: u16) -> bool {
    (200..300).contains(&status)
}

async fn http(url: &str, reach: Reach<'_>) -> Finding {
    match reach.exchange(url, &Request::get()).await {
        Ok(a) if success(a.status) => Finding::live(),
        Ok(a) => not_success(a.status),
        Err(e) => failed(&e),
    }
}

/// The URL itself when it serves a valid card, else the card at its origin's well-known path.
/// When neither is valid, a 2xx at the URL itself (a card gone wrong, a page, an answer past
/// the read bound) says why; otherwise the well-known path's answer decides.
/// With a live card, the card's text (where its proof text may stand).
async fn a2a(url: &str, reach: Reach<'_>) -> (Finding, Vec<String>) {
    let get = || Request::get().header("accept", "application/json");
    let first = match reach.exchange(url, &get()).await {
        Ok(a) => a,
        Err(e) => return (failed(&e), Vec::new()),
    };
    // A 2xx that is no card (a page, or one cut at the read bound) says why, rather than the
    // well-known path's answer, which the agent did not list.
    let own = success(first.status).then(|| {
        json_object(&first.body).map_or_else(|| unreadable(&first, Why::NotA2aCard), |card| a2a_card(&card))
    });
    if let Some(found) = &own
        && found.status() == EndpointStatus::Live
    {
        return (found.clone(), own_words(url, &first));
    }
    let well_known = url::Url::parse(url).ok().and_then(|u| u.join(A2A_WELL_KNOWN).ok());
    let Some(well_known) = well_known.filter(|w| w.as_str() != url) else {
        return (own.unwrap_or_else(|| not_success(first.status)), Vec::new());
    };
    let (there, text) = match reach.exchange(well_known.as_str(), &get()).await {
        Ok(a) if success(a.status) => (
            json_object(&a.body).map_or_else(|| unreadable(&a, Why::NotA2aCard), |card| a2a_card(&card)),
            own_words(url, &a),
        ),
        Ok(a) => (not_success(a.status), Vec::new()),
        Err(e) => (failed(&e), Vec::new()),
    };
    if there.status() == EndpointStatus::Live { (there, text) } else { (own.unwrap_or(there), Vec::new()) }
}

/// Whether the endpoint's origin publishes the agent's proof text at `PROOF_WELL_KNOWN`: that
/// path itself answers it, not a page a redirect leads to (a site that sends unknown paths to
/// its users' pages must not prove every endpoint there for whoever writes on one).
async fn proven_at_origin(url: &str, handle: &str, reach: Reach<'_>) -> bool {
    let Some(at) = url::Url::parse(url).ok().and_then(|u| u.join(PROOF_WELL_KNOWN).ok()) else {
        return false;
    };
    match reach.exchange(at.as_str(), &Request::get()).await {
        Ok(a) if success(a.status) && same_origin(&at, &a.url) && a.url.path() == at.path() => {
            holds_proof(&String::from_utf8_lossy(&a.body), handle)
        }
        _ => false,
    }
}

/// The text of an answer that may prove whose the endpoint `url` is: none when a redirect led
/// to another origin, whose answer is that origin's word, not the endpoint's, nor when a
/// redirect led to a URL that carries the proof text, which a server may write back.
fn own_words(url: &str, answer: &Answer) -> Vec<String> {
    match url::Url::parse(url) {
        Ok(asked) if same_origin(&asked, &answer.url) && !carries_proof_text(answer.url.as_str()) => {
            vec![String::from_utf8_lossy(&answer.body).into_owned()]
        }
        _ => Vec::new(),
    }
}

/// Whether `answered` is `asked`'s origin, or the same host's default https where `asked` is its
/// default http (a site that upgrades every request).
fn same_origin(asked: &url::Url, answered: &url::Url) -> bool {
    asked.origin() == answered.origin()
        || asked.scheme() == "http"
            && answered.scheme() == "https"
            && asked.host() == answered.host()
            && asked.port().is_none()
            && answered.port().is_none()
}

fn json_object(body: &[u8]) -> Option<serde_json::Map<String, Value>> {
    match serde_json::from_slice(body) {
        Ok(Value::Object(map)) => Some(map),
        _ => None,
    }
}

/// Validates an agent card: the required fields of A2A v1.0 (`supportedInterfaces`), or of a
/// 0.3 card (`url`, with its `protocolVersion`), whose version is shown as it is.
pub fn a2a_card(card: &serde_json::Map<String, Value>) -> Finding {
    let text = |k: &str| card.get(k).and_then(Value::as_str).filter(|s| !s.trim().is_empty());
    let strings =
        |k: &str| card.get(k).and_then(Value::as_array).is_some_and(|a| a.iter().all(Value::is_string));
    let skills = card.get("skills").and_then(Value::as_array);
    let skills_valid = skills.is_some_and(|list| {
        list.iter().all(|s| {
            ["id", "name", "description"].iter().all(|k| s.get(k).and_then(Value::as_str).is_some())
                && s.get("tags").and_then(Value::as_array).is_some()
        })
    });
    let common = text("name").is_some()
        && text("description").is_some()
        && text("version").is_some()
        && card.get("capabilities").is_some_and(Value::is_object)
        && strings("defaultInputModes")
        && strings("defaultOutputModes")
        && skills_valid;
    let protocol_version = match card.get("supportedInterfaces") {
        Some(Value::Array(interfaces)) if !interfaces.is_empty() => {
            let valid = interfaces.iter().all(|i| {
                i.get("url").and_then(Value::as_str).is_some()
                    && i.get("protocolBinding").and_then(Value::as_str).is_some()
            });
            valid.then(|| {
                interfaces[0].get("protocolVersion").and_then(Value::as_str).unwrap_or("1.0").to_owned()
            })
        }
        Some(_) => None,
        None => text("url").map(|_| text("protocolVersion").unwrap_or("0.3.0").to_owned()),
    };
    match protocol_version {
        Some(version) if common => Finding {
            name: text("name").map(|n| clip(n, NAME_CHARS)),
            protocol_version: Some(clip(&version, VERSION_CHARS)),
            count: skills.map(|s| u32::try_from(s.len()).unwrap_or(u32::MAX)),
            observed: skills
                .map(|list| list.iter().filter_map(skill).take(OBSERVED_PER_ENDPOINT).collect())
                .unwrap_or_default(),
            ..Finding::live()
        },
        _ => Finding::invalid(Why::NotA2aCard),
    }
}

/// A skill of a card as it is kept (see `Observed::kept`).
fn skill(s: &Value) -> Option<Observed> {
    let strings = |k: &str| -> Vec<&str> {
        s.get(k)
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default()
    };
    Observed::kept(
        s.get("name").and_then(Value::as_str)?,
        s.get("description").and_then(Value::as_str),
        &strings("tags"),
        &strings("examples"),
    )
}

/// A tool of `tools/list` as it is kept.
fn tool(t: &Value) -> Option<Observed> {
    Observed::kept(
        t.get("name").and_then(Value::as_str)?,
        t.get("description").and_then(Value::as_str),
        &[],
        &[],
    )
}

/// What is kept of a name or version another server states: enough to recognise it, never
/// enough to turn a card into a billboard.
const NAME_CHARS: usize = 100;
const VERSION_CHARS: usize = 40;

fn clip(s: &str, max: usize) -> String {
    s.chars().filter(|c| !c.is_control()).take(max).collect()
}

/// The newest revision's handshake first (`server/discover`), then `initialize` for servers of
/// earlier revisions; then `tools/list`. A 401 with an OAuth challenge is a live server that
/// wants its clients to authorise. With a live server, the texts it says of itself (its
/// instructions and description, where its proof text may stand).
async fn mcp(url: &str, reach: Reach<'_>) -> (Finding, Vec<String>) {
    let mut session =
        McpSession { url, reach, session_id: None, revision: MCP_DISCOVER_REVISION, next_id: 1 };
    let mut said = Vec::new();
    let discovered = match session.call("server/discover", json!({})).await {
        Ok(Reply::Result(r)) => {
            let speaks = r
                .get("supportedVersions")
                .and_then(Value::as_array)
                .is_some_and(|v| v.iter().any(|v| v.as_str() == Some(MCP_DISCOVER_REVISION)));
            if speaks {
                said.extend(self_descriptions(&r));
            }
            speaks.then(|| meta_server_name(&r))
        }
        Ok(Reply::AuthRequired) => return (auth_required(), said),
        // Any other answer (an error, 400 for a missing session, even a 5xx): perhaps a server
        // of an earlier revision, whose own handshake decides.
        Ok(_) => None,
        Err(e) => return (failed(&e), said),
    };
    let name = match discovered {
        Some(name) => name,
        None => {
            session.revision = MCP_INITIALIZE_REVISION;
            let params = json!({
                "protocolVersion": MCP_INITIALIZE_REVISION,
                "capabilities": {},
                "clientInfo": client_info(),
            });
            let result = match session.call("initialize", params).await {
                Ok(Reply::Result(r)) => r,
                Ok(Reply::AuthRequired) => return (auth_required(), said),
                Ok(Reply::Refused(status)) => return (not_success(status), said),
                Ok(reply @ (Reply::Error | Reply::NotJsonRpc { .. })) => {
                    return (reply.handshake_failed(), said);
                }
                Err(e) => return (failed(&e), said),
            };
            let Some(revision) = result.get("protocolVersion").and_then(Value::as_str) else {
                return (Finding::invalid(Why::McpHandshake), said);
            };
            session.revision =
                KNOWN_REVISIONS.iter().copied().find(|r| *r == revision).unwrap_or(MCP_INITIALIZE_REVISION);
            if let Err(e) = session.notify("notifications/initialized").await {
                return (failed(&e), said);
            }
            said.extend(self_descriptions(&result));
            result.get("serverInfo").and_then(|s| s.get("name")).and_then(Value::as_str).map(str::to_owned)
        }
    };
    let mut tools = 0usize;
    let mut observed = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..TOOL_PAGES_COUNTED {
        let params = cursor.as_ref().map_or_else(|| json!({}), |c| json!({ "cursor": c }));
        let page = match session.call("tools/list", params).await {
            Ok(Reply::Result(r)) => r,
            Ok(Reply::AuthRequired) => return (auth_required(), said),
            Ok(Reply::Refused(status)) => return (not_success(status), said),
            Ok(reply @ (Reply::Error | Reply::NotJsonRpc { .. })) => return (reply.handshake_failed(), said),
            Err(e) => return (failed(&e), said),
        };
        let Some(listed) = page.get("tools").and_then(Value::as_array) else {
            return (Finding::invalid(Why::McpHandshake), said);
        };
        tools += listed.len();
        let room = OBSERVED_PER_ENDPOINT.saturating_sub(observed.len());
        observed.extend(listed.iter().filter_map(tool).take(room));
        cursor = page.get("nextCursor").and_then(Value::as_str).map(str::to_owned);
        if cursor.is_none() {
            break;
        }
    }
    let found = Finding {
        name: name.map(|n| clip(&n, NAME_CHARS)),
        protocol_version: Some(session.revision.to_owned()),
        count: Some(u32::try_from(tools).unwrap_or(u32::MAX)),
        observed,
        ..Finding::live()
    };
    (found, said)
}

/// What an MCP server says of itself in a handshake's result: its instructions, and its
/// `serverInfo`'s (or the 2026-07-28 `_meta` server info's) description and title.
fn self_descriptions(result: &serde_json::Map<String, Value>) -> Vec<String> {
    let info = [result.get("serverInfo"), result.get("_meta").and_then(|m| m.get(SERVER_INFO_META))];
    let from_info = info.into_iter().flatten().flat_map(|i| ["description", "title"].map(|k| i.get(k)));
    std::iter::once(result.get("instructions"))
        .chain(from_info)
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_owned)
        .collect()
}

/// Revisions whose `initialize` answer is believed as it is; another answer is shown as the
/// newest of them.
const KNOWN_REVISIONS: [&str; 4] = ["2024-11-05", "2025-03-26", "2025-06-18", MCP_INITIALIZE_REVISION];
/// Where a 2026-07-28 server names itself: the `_meta` of its results.
const SERVER_INFO_META: &str = "io.modelcontextprotocol/serverInfo";

fn auth_required() -> Finding {
    Finding { auth_required: true, ..Finding::live() }
}

fn client_info() -> Value {
    json!({ "name": "agentdir-endpoint-check", "version": env!("CARGO_PKG_VERSION") })
}

fn meta_server_name(result: &serde_json::Map<String, Value>) -> Option<String> {
    result.get("_meta")?.get(SERVER_INFO_META)?.get("name")?.as_str().map(str::to_owned)
}

enum Reply {
    Result(serde_json::Map<String, Value>),
    /// A JSON-RPC error.
    Error,
    /// 401 with a `Bearer` challenge.
    AuthRequired,
    /// Another non-2xx status.
    Refused(u16),
    /// A 2xx whose body holds no JSON-RPC answer to the request; `truncated` when it was cut
    /// at the read bound.
    NotJsonRpc {
        truncated: bool,
    },
}

impl Reply {
    /// What a JSON-RPC error or a 2xx without an answer makes of the endpoint.
    fn handshake_failed(&self) -> Finding {
        match self {
            Reply::NotJsonRpc { truncated: true } => Finding::invalid(Why::TooLarge),
            _ => Finding::invalid(Why::McpHandshake),
        }
    }
}

struct McpSession<'a> {
    url: &'a str,
    reach: Reach<'a>,
    session_id: Option<String>,
    revision: &'static str,
    next_id: u64,
}

impl McpSession<'_> {
    fn request(&self, method: &str, body: &Value) -> Request {
        let mut r = Request {
            headers: vec![
                ("accept", "application/json, text/event-stream".into()),
                ("mcp-protocol-version", self.revision.into()),
            ],
            json_body: Some(serde_json::to_vec(body).unwrap_or_default()),
        };
        if self.revision == MCP_DISCOVER_REVISION {
            r = r.header("mcp-method", method);
        }
        if let Some(id) = &self.session_id {
            r = r.header("mcp-session-id", id.clone());
        }
        r
    }

    /// The 2026-07-28 envelope every request carries in `params._meta`.
    fn params(&self, mut params: Value) -> Value {
        if self.revision == MCP_DISCOVER_REVISION
            && let Some(obj) = params.as_object_mut()
        {
            obj.insert(
                "_meta".into(),
                json!({
                    "io.modelcontextprotocol/protocolVersion": MCP_DISCOVER_REVISION,
                    "io.modelcontextprotocol/clientCapabilities": {},
                    "io.modelcontextprotocol/clientInfo": client_info(),
                }),
            );
        }
        params
    }

    async fn call(&mut self, method: &str, params: Value) -> Result<Reply, LinkFetchError> {
        let id = self.next_id;
        self.next_id += 1;
        let body = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": self.params(params) });
        let request = self.request(method, &body);
        let mut stream = SseAnswer::new(id);
        let answer = link_fetch::exchange_until(
            self.url,
            &request,
            self.reach.policy,
            self.reach.gate,
            &mut |headers, part| stream.read(headers, part),
        )
        .await?;
        if answer.status == 401 && bearer_challenge(&answer) {
            return Ok(Reply::AuthRequired);
        }
        if !success(answer.status) {
            return Ok(Reply::Refused(answer.status));
        }
        if let Some(sid) = answer.headers.get("mcp-session-id").and_then(|v| v.to_str().ok()) {
            self.session_id = Some(sid.to_owned());
        }
        let reply = if is_sse(&answer.headers) { stream.finish() } else { json_answer(&answer.body, id) };
        Ok(match reply {
            Some(Value::Object(m)) if m.contains_key("error") => Reply::Error,
            Some(Value::Object(mut m)) => match m.remove("result") {
                Some(Value::Object(result)) => Reply::Result(result),
                _ => Reply::NotJsonRpc { truncated: answer.truncated },
            },
            _ => Reply::NotJsonRpc { truncated: answer.truncated },
        })
    }

    async fn notify(&mut self, method: &str) -> Result<(), LinkFetchError> {
        let body = json!({ "jsonrpc": "2.0", "method": method });
        let answer = self.reach.exchange(self.url, &self.request(method, &body)).await?;
        if success(answer.status) { Ok(()) } else { Err(LinkFetchError::Status(answer.status)) }
    }
}

fn bearer_challenge(answer: &Answer) -> bool {
    answer
        .headers
        .get_all("www-authenticate")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.trim_start().get(..6).is_some_and(|s| s.eq_ignore_ascii_case("bearer")))
}

fn is_sse(headers: &HeaderMap) -> bool {
    headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.to_ascii_lowercase().starts_with("text/event-stream"))
}

/// The JSON-RPC message answering request `id` in a JSON body (one message or a batch).
fn json_answer(body: &[u8], id: u64) -> Option<Value> {
    let v: Value = serde_json::from_slice(body).ok()?;
    match v {
        Value::Array(batch) => batch.into_iter().find(|v| answers(v, id)),
        v if answers(&v, id) => Some(v),
        _ => None,
    }
}

fn answers(v: &Value, id: u64) -> bool {
    v.get("id").and_then(Value::as_u64) == Some(id)
}

/// Reads an SSE answer as it arrives, looking for the JSON-RPC message answering request `id`.
/// Each byte is looked at once and each event parsed once, when its blank line arrives, so a
/// server sending its stream a byte at a time costs no more than one sending it at once.
struct SseAnswer {
    id: u64,
    /// Whether the answer is an SSE stream at all (known from its headers).
    sse: Option<bool>,
    /// The line read so far.
    line: Vec<u8>,
    /// The last line ended with CR: an LF right after it ends nothing more.
    after_cr: bool,
    /// The `data` lines of the event read so far.
    data: Vec<String>,
    found: Option<Value>,
}

impl SseAnswer {
    fn new(id: u64) -> SseAnswer {
        SseAnswer { id, sse: None, line: Vec::new(), after_cr: false, data: Vec::new(), found: None }
    }

    /// Takes the next part of the body; true once the answer was found (reading may stop).
    fn read(&mut self, headers: &HeaderMap, part: &[u8]) -> bool {
        if !*self.sse.get_or_insert_with(|| is_sse(headers)) {
            return false;
        }
        for &b in part {
            if self.found.is_some() {
                break;
            }
            match b {
                b'\n' if self.after_cr => self.after_cr = false,
                b'\n' | b'\r' => {
                    self.after_cr = b == b'\r';
                    self.end_line();
                }
                _ => {
                    self.after_cr = false;
                    self.line.push(b);
                }
            }
        }
        self.found.is_some()
    }

    /// The answer, once the stream has ended (an event cut off by the end still counts).
    fn finish(mut self) -> Option<Value> {
        if !self.line.is_empty() {
            self.end_line();
        }
        self.end_event();
        self.found
    }

    fn end_line(&mut self) {
        if self.line.is_empty() {
            self.end_event();
            return;
        }
        let line = std::mem::take(&mut self.line);
        if let Some(data) = line.strip_prefix(b"data:") {
            let data = data.strip_prefix(b" ").unwrap_or(data);
            self.data.push(String::from_utf8_lossy(data).into_owned());
        }
    }

    fn end_event(&mut self) {
        if self.data.is_empty() || self.found.is_some() {
            self.data.clear();
            return;
        }
        let data = std::mem::take(&mut self.data).join("\n");
        self.found = serde_json::from_str::<Value>(&data).ok().filter(|v| answers(v, self.id));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn card(v: Value) -> Finding {
        a2a_card(v.as_object().expect("object"))
    }

    fn v1() -> Value {
        json!({
            "name": "Echo", "description": "echoes", "version": "1.2.0",
            "supportedInterfaces": [{"url": "https://a.example/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
            "capabilities": {}, "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
            "skills": [{"id": "echo", "name": "Echo", "description": "echo", "tags": []}]
        })
    }

    #[test]
    fn a2a_cards_of_both_versions() {
        let f = card(v1());
        assert_eq!(f.status(), EndpointStatus::Live);
        assert_eq!(
            (f.name.as_deref(), f.protocol_version.as_deref(), f.count),
            (Some("Echo"), Some("1.0"), Some(1))
        );
        for missing in [
            "name",
            "description",
            "supportedInterfaces",
            "version",
            "capabilities",
            "defaultInputModes",
            "defaultOutputModes",
            "skills",
        ] {
            let mut c = v1();
            c.as_object_mut().expect("object").remove(missing);
            assert_eq!(card(c).status(), EndpointStatus::Invalid, "without {missing}");
        }
        let mut old = v1();
        let o = old.as_object_mut().expect("object");
        o.remove("supportedInterfaces");
        o.insert("url".into(), json!("https://a.example/a2a"));
        o.insert("protocolVersion".into(), json!("0.3.0"));
        let f = card(old);
        assert_eq!((f.status(), f.protocol_version.as_deref()), (EndpointStatus::Live, Some("0.3.0")));
    }

    fn sse_headers() -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert("content-type", reqwest::header::HeaderValue::from_static("text/event-stream"));
        h
    }

    #[test]
    fn sse_answers_are_read_however_the_stream_is_cut() {
        let stream = "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/x\"}\n\n: comment\r\nevent: message\r\ndata: {\"jsonrpc\":\"2.0\",\r\ndata: \"id\":3,\"result\":{}}\r\n\r\n";
        for size in [1, 2, 3, 7, stream.len()] {
            let mut sse = SseAnswer::new(3);
            let done = stream.as_bytes().chunks(size).any(|part| sse.read(&sse_headers(), part));
            assert!(done, "parts of {size}");
            assert_eq!(sse.finish().map(|v| v["result"].clone()), Some(json!({})), "parts of {size}");
        }
        let mut other = SseAnswer::new(4);
        assert!(!other.read(&sse_headers(), stream.as_bytes()));
        assert_eq!(other.finish(), None, "an answer to another request");
        let mut cut = SseAnswer::new(5);
        assert!(!cut.read(&sse_headers(), b"data: {\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{}}"));
        assert!(cut.finish().is_some(), "an event cut off by the end of the stream");
        let mut json_body = SseAnswer::new(3);
        assert!(!json_body.read(&HeaderMap::new(), stream.as_bytes()), "not an SSE answer");
    }

    /// An MCP server on loopback that answers every POST with an SSE stream of `notices`
    /// notifications and then (if `answer`) the answer to request 1, each byte in an HTTP chunk
    /// of its own, and keeps the stream open.
    async fn trickling_server(notices: usize, answer: bool) -> u16 {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let port = listener.local_addr().expect("addr").port();
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let mut head = Vec::new();
                    let mut buf = [0u8; 4096];
                    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                        match stream.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => head.extend_from_slice(&buf[..n]),
                        }
                    }
                    let notice = "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"still working\"}}\n\n";
                    let mut events = notice.repeat(notices);
                    if answer {
                        events.push_str("data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[]}}\n\n");
                    }
                    let mut wire = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n".to_vec();
                    for b in events.bytes() {
                        wire.extend_from_slice(b"1\r\n");
                        wire.push(b);
                        wire.extend_from_slice(b"\r\n");
                    }
                    if stream.write_all(&wire).await.is_ok() {
                        tokio::time::sleep(std::time::Duration::from_secs(60)).await;
                    }
                });
            }
        });
        port
    }

    fn session<'a>(url: &'a str, reach: Reach<'a>) -> McpSession<'a> {
        McpSession { url, reach, session_id: None, revision: MCP_INITIALIZE_REVISION, next_id: 1 }
    }

    #[tokio::test]
    async fn an_sse_answer_sent_a_byte_at_a_time_is_read_in_time() {
        // ~40 KB of notifications before the answer: each read looks at its own byte only.
        let port = trickling_server(300, true).await;
        let policy = FetchPolicy {
            timeout: CHECK_DEADLINE,
            max_bytes: CHECK_READ_BYTES,
            ..FetchPolicy::reaching(&PrivateTargets::All)
        };
        let url = format!("http://127.0.0.1:{port}/mcp");
        let started = std::time::Instant::now();
        let reply = session(&url, Reach { policy: &policy, gate: &link_fetch::Open })
            .call("tools/list", json!({}))
            .await;
        let took = started.elapsed();
        match reply {
            Ok(Reply::Result(r)) => assert_eq!(r.get("tools"), Some(&json!([]))),
            Ok(_) => panic!("the answer was not read"),
            Err(e) => panic!("{e} after {took:?}"),
        }
        assert!(took < CHECK_DEADLINE / 2, "took {took:?}");
    }

    #[tokio::test]
    async fn a_trickling_stream_without_an_answer_ends_at_the_deadline() {
        let port = trickling_server(1500, false).await;
        let deadline = std::time::Duration::from_secs(1);
        let policy = FetchPolicy {
            timeout: deadline,
            max_bytes: CHECK_READ_BYTES,
            ..FetchPolicy::reaching(&PrivateTargets::All)
        };
        let url = format!("http://127.0.0.1:{port}/mcp");
        let started = std::time::Instant::now();
        let reply = session(&url, Reach { policy: &policy, gate: &link_fetch::Open })
            .call("tools/list", json!({}))
            .await;
        let took = started.elapsed();
        assert!(matches!(reply, Err(LinkFetchError::Timeout)), "took {took:?}");
        assert!(took < deadline + std::time::Duration::from_millis(500), "took {took:?}");
    }
}
