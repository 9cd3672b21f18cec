//! Endpoints and signed statements end to end: real A2A and MCP servers (the A2A SDK's card
//! route, the `mcp` SDK's streamable HTTP server; tests/python/endpoint_servers.py) on loopback
//! ports, listed on profiles of a real `agentdir serve`, going live, down and invalid; statements
//! verified by the JOSE libraries people use (joserfc, jwcrypto, PyJWT, jose in Node) and by
//! `cryptography` by hand (tests/python/verify_statement.py).

mod common;

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use common::{Agent, RELAXED_LIMITS, Server};
use serde_json::{Value, json};

const SERVERS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/python/endpoint_servers.py");
const VERIFY: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/python/verify_statement.py");

/// One real endpoint process on a loopback port; killed when dropped.
struct Endpoint {
    child: Option<Child>,
    port: u16,
}

impl Endpoint {
    fn start(kind: &str, proof_of: Option<&str>) -> Endpoint {
        let mut cmd = Command::new("python3");
        cmd.arg(SERVERS).arg(kind).args(proof_of).stdout(Stdio::piped()).stderr(Stdio::null());
        let mut child = cmd.spawn().expect("python3 must be installed (tests/python/requirements.txt)");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout")).read_line(&mut line).expect("first line");
        let port = line
            .trim()
            .strip_prefix("listening on ")
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("{kind} endpoint did not start: {line:?}"));
        Endpoint { child: Some(child), port }
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// Stops the process: the endpoint no longer answers.
    fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A server whose checks may reach loopback and run every second.
async fn checking_server() -> Server {
    let mut env = RELAXED_LIMITS.to_vec();
    env.push(("AGENTDIR_LINK_FETCH_ALLOW_PRIVATE", "1"));
    env.push(("AGENTDIR_ENDPOINT_CHECK_INTERVAL", "1s"));
    Server::start_with(&env).await
}

async fn register_with(s: &Server, handle: &str, endpoints: Value) -> Agent {
    let r = s
        .post(
            "/api/agents",
            None,
            json!({
                "handle": handle, "name": "Endpoint Owner", "owner": "Test Owner",
                "mailbox": format!("{handle}@example.org"), "accept_rules": true,
                "description_en": "Lists its endpoints.", "endpoints": endpoints,
            }),
        )
        .await;
    r.expect(201);
    assert!(r.json["agent"]["endpoints"].as_array().is_some_and(|e| !e.is_empty()));
    Agent {
        handle: handle.to_owned(),
        key: r.json["api_key"].as_str().expect("api_key").to_owned(),
        mailbox: format!("{handle}@example.org"),
    }
}

/// The card's endpoints once `done` holds for them (checks answer within seconds).
async fn endpoints_when(s: &Server, handle: &str, what: &str, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    endpoints_within(s, handle, what, Duration::from_secs(60), done).await
}

/// The card's endpoints once `done` holds for them, failing after `limit`.
async fn endpoints_within(
    s: &Server,
    handle: &str,
    what: &str,
    limit: Duration,
    done: impl Fn(&[Value]) -> bool,
) -> Vec<Value> {
    let deadline = Instant::now() + limit;
    loop {
        let card = s.get(&format!("/api/agents/{handle}"), None).await;
        card.expect(200);
        let endpoints = card.json["agent"]["endpoints"].as_array().cloned().unwrap_or_default();
        if done(&endpoints) {
            return endpoints;
        }
        assert!(Instant::now() < deadline, "{what}: still {endpoints:#?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn status_of(e: &Value) -> &str {
    e["status"].as_str().unwrap_or_default()
}

async fn checks_done(s: &Server) -> u64 {
    let text = s.get("/metrics", None).await.text;
    text.lines()
        .filter(|l| l.starts_with("agentdir_endpoint_checks_total{"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
        .sum()
}

#[tokio::test]
async fn listed_endpoints_go_live_down_and_invalid() {
    let s = checking_server().await;
    let handle = common::unique_handle("reachable");
    let a2a = Endpoint::start("a2a", Some(&handle));
    let mut mcp = Endpoint::start("mcp", None);
    let bad = Endpoint::start("a2a-bad", None);
    let listed = json!([
        {"kind": "a2a", "url": a2a.url("/")},
        {"kind": "mcp", "url": mcp.url("/mcp")},
        {"kind": "a2a", "url": bad.url("/")},
    ]);
    let agent = register_with(&s, &handle, listed.clone()).await;

    let e =
        endpoints_when(&s, &handle, "all three checked", |e| e.iter().all(|e| status_of(e) != "unchecked"))
            .await;
    assert_eq!(status_of(&e[0]), "live", "{e:#?}");
    assert_eq!((e[0]["name"].as_str(), e[0]["protocol_version"].as_str()), (Some("Echo Agent"), Some("1.0")));
    assert_eq!((e[0]["skill_count"].as_u64(), e[0]["tool_count"].as_u64()), (Some(2), None));
    // The card's description holds the agent's proof text: its skills are the agent's.
    assert_eq!(e[0]["proof"], "answer");
    assert_eq!(
        e[0]["skills"],
        json!([
            {"name": "Echo", "description": "Echoes text.", "tags": ["echo"]},
            {"name": "Shout", "description": "Echoes text loudly.", "tags": ["echo"]},
        ])
    );
    assert_eq!(
        (e[1]["proof"].clone(), e[1]["tools"].clone()),
        (Value::Null, Value::Null),
        "no proof, no tools"
    );
    assert_eq!(status_of(&e[1]), "live", "{e:#?}");
    assert_eq!((e[1]["name"].as_str(), e[1]["tool_count"].as_u64()), (Some("Loopback Tools"), Some(2)));
    assert_eq!(e[1]["protocol_version"], "2026-07-28");
    assert_eq!(status_of(&e[2]), "invalid", "a card without skills is not a valid card: {e:#?}");
    assert_eq!(e[2]["reason"], "not_a2a_card", "{e:#?}");
    assert!(e[..2].iter().all(|e| e["reason"].is_null()), "a live endpoint has no reason: {e:#?}");
    assert!(
        e.iter().all(|e| e["owned"] == false && e["status_since"].as_str().is_some_and(|t| t.ends_with('Z')))
    );

    // live=true wants a live endpoint the agent shows it controls.
    const LIVE: &str = "/api/agents?live=true&limit=100";
    assert!(!s.get(LIVE, None).await.text.contains(&handle));
    let proof = s
        .post("/api/me/links", Some(&agent.key), json!({"url": a2a.url("/.well-known/agent-card.json")}))
        .await;
    proof.expect(200);
    let e = endpoints_when(&s, &handle, "the a2a endpoint owned", |e| e[0]["owned"] == true).await;
    assert_eq!(e[1]["owned"], false, "another origin is not owned");
    let found = s.get(LIVE, None).await;
    found.expect(200);
    assert_eq!(
        found.json["agents"].as_array().map(|a| a.iter().filter(|x| x["handle"] == handle.as_str()).count()),
        Some(1)
    );
    assert!(
        s.get("/api/agents?live=false&limit=100", None).await.json["agents"]
            .as_array()
            .is_some_and(|a| a.iter().all(|x| x["handle"] != handle.as_str()))
    );

    // Setting the same list again keeps what is known until the new checks answer.
    let again = s.patch("/api/me", Some(&agent.key), json!({"endpoints": listed})).await;
    again.expect(200);
    assert_eq!(again.json["agent"]["endpoints"][0]["status"], "live", "{}", again.text);

    // The MCP server stops: the next check finds it down, and the change reaches the feed.
    let live_since = e[1]["status_since"].clone();
    mcp.stop();
    let e = endpoints_when(&s, &handle, "the stopped MCP server down", |e| status_of(&e[1]) == "down").await;
    assert_ne!(e[1]["status_since"], live_since, "status_since moves with the status");
    assert_eq!(e[1]["name"], Value::Null, "a down server teaches nothing");
    assert_eq!(e[1]["reason"], "unreachable", "{e:#?}");
    let feed = s.get("/api/changes?limit=1000", None).await;
    let entry =
        feed.json["changes"].as_array().and_then(|c| c.iter().find(|c| c["id"] == handle.as_str())).cloned();
    assert_eq!(entry.map(|c| c["data"]["endpoints"][1]["status"].clone()), Some(json!("down")));

    let metrics = s.get("/metrics", None).await.text;
    for series in [
        r#"agentdir_endpoint_checks_total{kind="a2a",outcome="live"}"#,
        r#"agentdir_endpoint_checks_total{kind="a2a",outcome="invalid"}"#,
        r#"agentdir_endpoint_checks_total{kind="mcp",outcome="down"}"#,
    ] {
        assert!(metrics.contains(series), "{series} missing from /metrics");
    }
}

#[tokio::test]
async fn a_check_that_finds_nothing_new_writes_nothing() {
    let s = checking_server().await;
    let a2a = Endpoint::start("a2a", None);
    let handle = common::unique_handle("steady");
    register_with(&s, &handle, json!([{"kind": "a2a", "url": a2a.url("/")}])).await;
    endpoints_when(&s, &handle, "live", |e| status_of(&e[0]) == "live").await;

    let card = s.get(&format!("/api/agents/{handle}"), None).await;
    let etag = card.header("etag").expect("etag").to_owned();
    let next = s.get("/api/changes?limit=1000", None).await.json["next"].as_str().expect("next").to_owned();
    let before = checks_done(&s).await;
    let deadline = Instant::now() + Duration::from_secs(60);
    while checks_done(&s).await < before + 3 {
        assert!(Instant::now() < deadline, "the schedule did not check again");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let card = s.get(&format!("/api/agents/{handle}"), None).await;
    assert_eq!(card.header("etag"), Some(etag.as_str()), "an unchanged finding changed the card");
    let later = s.get(&format!("/api/changes?after={next}"), None).await;
    later.expect(200);
    assert_eq!(later.json["changes"], json!([]), "an unchanged finding reached the feed: {}", later.text);
}

#[tokio::test]
async fn mcp_revisions_oauth_and_plain_http() {
    let s = checking_server().await;
    let legacy = Endpoint::start("mcp-legacy", None);
    let oauth = Endpoint::start("mcp-auth", None);
    let a2a = Endpoint::start("a2a", None);
    let lingering = Endpoint::start("mcp-lingering", None);
    let handle = common::unique_handle("kinds");
    let agent = register_with(
        &s,
        &handle,
        json!([
            {"kind": "mcp", "url": legacy.url("/mcp")},
            {"kind": "mcp", "url": oauth.url("/mcp")},
            {"kind": "http", "url": a2a.url("/.well-known/agent-card.json")},
        ]),
    )
    .await;
    let e =
        endpoints_when(&s, &handle, "all checked", |e| e.iter().all(|e| status_of(e) != "unchecked")).await;
    assert_eq!(status_of(&e[0]), "live", "{e:#?}");
    assert_eq!(e[0]["protocol_version"], "2025-11-25", "initialize when server/discover is refused");
    assert_eq!((e[0]["name"].as_str(), e[0]["tool_count"].as_u64()), (Some("Loopback Tools"), Some(2)));
    assert_eq!((status_of(&e[1]), e[1]["auth"].as_str()), ("live", Some("required")), "{e:#?}");
    assert_eq!(status_of(&e[2]), "live");

    // An SSE answer left open after its event is read up to the answer, not to the deadline
    // (which would make the server look down).
    s.patch(
        "/api/me",
        Some(&agent.key),
        json!({"endpoints": [{"kind": "mcp", "url": lingering.url("/mcp")}]}),
    )
    .await
    .expect(200);
    let e = endpoints_when(&s, &handle, "the lingering server checked", |e| {
        e.len() == 1 && status_of(&e[0]) != "unchecked"
    })
    .await;
    assert_eq!((status_of(&e[0]), e[0]["tool_count"].as_u64()), ("live", Some(2)), "{e:#?}");

    // A page that answers 404 is not a live HTTP endpoint; an A2A endpoint with nothing
    // listening is down.
    let mut gone = Endpoint::start("a2a", None);
    let gone_url = gone.url("/");
    gone.stop();
    let set = json!({"endpoints": [{"kind": "http", "url": a2a.url("/nothing-here")}, {"kind": "a2a", "url": gone_url}]});
    s.patch("/api/me", Some(&agent.key), set).await.expect(200);
    let e = endpoints_when(&s, &handle, "404 and closed port checked", |e| {
        e.len() == 2 && e.iter().all(|e| status_of(e) != "unchecked")
    })
    .await;
    assert_eq!((status_of(&e[0]), status_of(&e[1])), ("invalid", "down"), "{e:#?}");
    assert_eq!(
        (e[0]["reason"].as_str(), e[1]["reason"].as_str()),
        (Some("http_status"), Some("unreachable"))
    );
}

#[tokio::test]
async fn an_mcp_post_follows_a_same_origin_redirect_only() {
    let s = checking_server().await;
    let slash = Endpoint::start("mcp-slash", None);
    let elsewhere = Endpoint::start("mcp-elsewhere", None);
    let handle = common::unique_handle("redirected");
    register_with(
        &s,
        &handle,
        json!([
            {"kind": "mcp", "url": slash.url("/mcp")},
            {"kind": "mcp", "url": elsewhere.url("/mcp")},
        ]),
    )
    .await;
    let e =
        endpoints_when(&s, &handle, "both checked", |e| e.iter().all(|e| status_of(e) != "unchecked")).await;
    // /mcp answers 307 -> /mcp/ (as FastMCP 1.9 does): the handshake goes on at /mcp/.
    assert_eq!((status_of(&e[0]), e[0]["tool_count"].as_u64()), ("live", Some(2)), "{e:#?}");
    assert_eq!(e[0]["url"], slash.url("/mcp"), "the listed URL stays as listed");
    // A POST is sent again only to the origin it was sent to.
    assert_eq!((status_of(&e[1]), e[1]["reason"].as_str()), ("invalid", Some("redirect")), "{e:#?}");
}

#[tokio::test]
async fn a_refused_address_and_a_failed_lookup_read_the_same() {
    // Loopback is not public here: the directory will not fetch it.
    let mut env = RELAXED_LIMITS.to_vec();
    env.push(("AGENTDIR_ENDPOINT_CHECK_INTERVAL", "1s"));
    let s = Server::start_with(&env).await;
    let handle = common::unique_handle("unreachable");
    register_with(
        &s,
        &handle,
        json!([
            {"kind": "mcp", "url": "http://127.0.0.1/mcp"},
            {"kind": "a2a", "url": "http://no-such-host.invalid/"},
        ]),
    )
    .await;
    let e =
        endpoints_when(&s, &handle, "both checked", |e| e.iter().all(|e| status_of(e) != "unchecked")).await;
    let seen: Vec<_> = e.iter().map(|e| (status_of(e), e["reason"].as_str())).collect();
    assert_eq!(seen, [("down", Some("unreachable")), ("down", Some("unreachable"))], "{e:#?}");
}

#[tokio::test]
async fn endpoint_rules_when_set() {
    let mut env = RELAXED_LIMITS.to_vec();
    env.retain(|(k, _)| *k != "AGENTDIR_RATE_LIMIT_LINKS");
    env.push(("AGENTDIR_RATE_LIMIT_LINKS", "2/h"));
    let s = Server::start_with(&env).await;
    let a = s.register("rules").await;
    let card_before = s.get(&format!("/api/agents/{}", a.handle), None).await.text;
    let ok = json!({"kind": "http", "url": "https://example.org/"});
    let cases = [
        (json!([ok, {"kind": "mcp", "url": "https://example.org:22/mcp"}]), "endpoints.1.url"),
        (json!([{"kind": "grpc", "url": "https://example.org/"}]), "endpoints.0.kind"),
        (json!([ok, ok]), "endpoints.1"),
        (json!([ok, ok, ok, ok]), "endpoints"),
        (json!([{"kind": "a2a", "url": "ftp://example.org/"}]), "endpoints.0.url"),
    ];
    for (endpoints, field) in cases {
        let r = s.patch("/api/me", Some(&a.key), json!({"endpoints": endpoints})).await;
        r.expect_error(400, "validation_failed");
        assert_eq!(r.json["error"]["field"], field, "{}", r.text);
        assert!(r.json["error"]["message_zh"].as_str().is_some_and(|m| !m.is_empty()));
    }
    let port = s
        .patch(
            "/api/me",
            Some(&a.key),
            json!({"endpoints": [ok, {"kind": "mcp", "url": "https://example.org:22/"}]}),
        )
        .await;
    assert!(port.json["error"]["message_en"].as_str().is_some_and(|m| m.contains("8443")), "{}", port.text);
    assert_eq!(
        s.get(&format!("/api/agents/{}", a.handle), None).await.text,
        card_before,
        "a refused list changed the card"
    );

    // Setting endpoints counts against the link-proof limit (2/h here).
    for _ in 0..2 {
        s.patch("/api/me", Some(&a.key), json!({"endpoints": [ok]})).await.expect(200);
    }
    let r = s.patch("/api/me", Some(&a.key), json!({"endpoints": [ok]})).await;
    r.expect_error(429, "rate_limited");
    assert!(r.header("retry-after").is_some());
    let r = s
        .post(
            "/api/agents",
            None,
            json!({"handle": "rules-port", "name": "n", "owner": "o", "mailbox": "p@example.org", "accept_rules": true,
                   "description_en": "d", "endpoints": [{"kind": "http", "url": "http://example.org:8081/"}]}),
        )
        .await;
    r.expect_error(400, "validation_failed");
    assert_eq!(r.json["error"]["field"], "endpoints.0.url");
    s.get("/api/agents/rules-port", None).await.expect(404);
    // The same endpoint again with a field the input ignores.
    let mcp = json!({"kind": "mcp", "url": "https://example.org/mcp"});
    let r = s
        .post(
            "/api/agents",
            None,
            json!({"handle": "rules-twice", "name": "n", "owner": "o", "mailbox": "p@example.org", "accept_rules": true,
                   "description_en": "d", "endpoints": [mcp, {"kind": "mcp", "url": "https://example.org/mcp", "note": "again"}]}),
        )
        .await;
    // Valid by the schema (its uniqueItems compares the items as sent) and one endpoint.
    r.expect(201);
    let listed = s.get("/api/agents/rules-twice", None).await;
    listed.expect(200);
    assert_eq!(listed.json["agent"]["endpoints"].as_array().map(Vec::len), Some(1), "{}", listed.text);
}

/// Verifies the statement of `handle` (fetched by the script, or `saved`) with independent code.
fn verify_saved(s: &Server, handle: &str, saved: Option<&Value>) -> String {
    let file = tempfile::NamedTempFile::new().expect("temp file");
    let mut cmd = Command::new("python3");
    cmd.arg(VERIFY).arg(s.url("")).arg(handle);
    if let Some(statement) = saved {
        std::fs::write(file.path(), statement.to_string()).expect("write statement");
        cmd.arg(file.path());
    }
    let out = cmd.output().expect("python3");
    let stdout = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    assert!(
        out.status.success(),
        "statement of {handle} not verified: {stdout} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

fn verify(s: &Server, handle: &str) -> String {
    verify_saved(s, handle, None)
}

#[tokio::test]
async fn statements_verify_elsewhere_and_survive_a_key_rotation() {
    let s = Server::start().await;
    let a = s.register("signed").await;
    s.patch("/api/me", Some(&a.key), json!({"description_zh": "中文的说明，带\"引号\"和换行\n第二行"}))
        .await
        .expect(200);
    let first = verify(&s, &a.handle);
    let sub = first.strip_prefix("ok ").expect("ok <sub>").to_owned();
    assert!(sub.starts_with("agt_"), "{sub}");

    let key_file = s.data_dir.join("signing-keys.json");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&key_file).expect("key file").permissions().mode() & 0o777, 0o600);
    }
    let db = std::fs::read(s.data_dir.join("agentdir.sqlite3")).expect("database");
    let secret = std::fs::read_to_string(&key_file).expect("keys");
    let d =
        serde_json::from_str::<Value>(&secret).expect("json")["keys"][0]["d"].as_str().expect("d").to_owned();
    assert!(!db.windows(d.len()).any(|w| w == d.as_bytes()), "the private key reached the database");

    let old = s.get(&format!("/api/agents/{}/statement", a.handle), None).await;
    old.expect(200);
    let kids = |jwks: &Value| -> Vec<String> {
        jwks["keys"]
            .as_array()
            .map(|k| k.iter().filter_map(|k| k["kid"].as_str().map(str::to_owned)).collect())
            .unwrap_or_default()
    };
    let before = kids(&s.get("/.well-known/jwks.json", None).await.json);
    assert_eq!(before.len(), 1);
    let rotated = s.admin_ok(&["rotate-signing-key"]);
    assert!(rotated.contains("new signing key"), "{rotated}");
    let deadline = Instant::now() + Duration::from_secs(30);
    let after = loop {
        let k = kids(&s.get("/.well-known/jwks.json", None).await.json);
        if k.len() == 2 {
            break k;
        }
        assert!(Instant::now() < deadline, "the rotation was not picked up: {k:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(after.contains(&before[0]), "the old public key stays listed");
    assert_eq!(
        verify_saved(&s, &a.handle, Some(&old.json)),
        first,
        "a statement of the old key still verifies"
    );
    assert_eq!(verify(&s, &a.handle), first, "same sub after the rotation");
    let header = |st: &Value| -> Value {
        use base64::Engine;
        let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(st["protected"].as_str().expect("protected"))
            .expect("b64");
        serde_json::from_slice(&raw).expect("header")
    };
    let new = s.get(&format!("/api/agents/{}/statement", a.handle), None).await;
    assert_eq!(header(&new.json)["kid"], after[0].as_str(), "the new key signs");
    assert_eq!(header(&old.json)["kid"], before[0].as_str());
    assert_eq!((header(&new.json)["alg"].as_str(), new.json["notice"].is_object()), (Some("EdDSA"), true));
    assert_eq!(header(&new.json)["typ"], "JOSE+JSON", "the registered typ of a JWS in JSON serialisation");

    let backup = s.data_dir.join("backup.sqlite3");
    let said = s.admin_ok(&["backup", backup.to_str().expect("path")]);
    let keys_copy = s.data_dir.join("backup.sqlite3.signing-keys.json");
    assert!(said.contains("signing keys"), "{said}");
    assert_eq!(
        std::fs::read_to_string(keys_copy).expect("key backup").len(),
        std::fs::read_to_string(&key_file).expect("keys").len()
    );

    s.get("/api/agents/nobody-here/statement", None).await.expect_error(404, "not_found");
    s.get("/api/agents/NOT_A_HANDLE/statement", None).await.expect_error(404, "not_found");
}

/// Statements say `EdDSA` because one of the four JOSE libraries people verify with cannot read
/// RFC 9864's `Ed25519` (src/domain/statement.rs). This asks the pinned four again: when all of
/// them read `Ed25519`, it is time to sign with it (a new key, the JWKS listing both).
#[test]
fn statements_say_eddsa_while_a_jose_library_refuses_ed25519() {
    let out = Command::new("python3").arg(VERIFY).arg("--fully-specified").output().expect("python3");
    let said = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    assert!(out.status.success(), "{said} {}", String::from_utf8_lossy(&out.stderr));
    let refused = said.strip_prefix("refused:").unwrap_or_else(|| panic!("unexpected answer: {said}")).trim();
    assert!(
        !refused.is_empty(),
        "joserfc, jwcrypto, PyJWT and jose all verify `Ed25519` now: sign statements with it (RFC 9864)"
    );
    assert_eq!(refused, "PyJWT", "the reason src/domain/statement.rs gives for EdDSA changed");
}

#[tokio::test]
async fn mcp_returns_the_statement_and_filters_live_agents() {
    use rmcp::ServiceExt;
    use rmcp::model::{CallToolRequestParams, ClientConfig};
    use rmcp::transport::StreamableHttpClientTransport;

    let s = checking_server().await;
    let handle = common::unique_handle("mcp-live");
    let a2a = Endpoint::start("a2a", Some(&handle));
    let agent = register_with(&s, &handle, json!([{"kind": "a2a", "url": a2a.url("/")}])).await;
    s.post("/api/me/links", Some(&agent.key), json!({"url": a2a.url("/.well-known/agent-card.json")}))
        .await
        .expect(200);
    endpoints_when(&s, &handle, "live and owned", |e| status_of(&e[0]) == "live" && e[0]["owned"] == true)
        .await;

    let client = ClientConfig::default()
        .serve(StreamableHttpClientTransport::from_uri(s.url("/mcp")))
        .await
        .expect("MCP client connects");
    let call = |tool: &str, args: Value| {
        let Value::Object(args) = args else { panic!("arguments") };
        client.call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(args))
    };
    let found = call("search_agents", json!({"live": true, "limit": 100})).await.expect("search_agents");
    // The text a model reads names the live endpoint, that it is the agent's own, and the proof.
    let shown: String = found.content.iter().filter_map(|c| c.as_text().map(|t| t.text.clone())).collect();
    let line = shown.lines().skip_while(|l| !l.contains(&handle)).nth(1).unwrap_or_default().to_owned();
    assert!(line.contains(&format!("live endpoints: a2a {}, proven its own", a2a.url("/"))), "{shown}");
    assert!(line.contains(&format!("proven links: {}", a2a.url("/.well-known/agent-card.json"))), "{shown}");
    let agents = found.structured_content.expect("structured")["agents"].clone();
    let hit = agents.as_array().and_then(|a| a.iter().find(|x| x["handle"] == handle.as_str())).cloned();
    let hit = hit.unwrap_or_else(|| panic!("{agents}"));
    assert_eq!(
        (hit["endpoints"][0]["status"].as_str(), hit["endpoints"][0]["proof"].as_str()),
        (Some("live"), Some("answer"))
    );

    let plain = call("get_agent", json!({"handle": handle}))
        .await
        .expect("get_agent")
        .structured_content
        .expect("structured");
    assert!(plain.get("statement").is_none());
    let with = call("get_agent", json!({"handle": handle, "with_statement": true})).await.expect("get_agent");
    let body = with.structured_content.expect("structured");
    assert_eq!(body["agent"]["endpoints"][0]["status"], "live");
    let out = verify_saved(&s, &handle, Some(&body["statement"]));
    assert!(out.starts_with("ok agt_"), "{out}");
    client.cancel().await.expect("close");
}

/// A web server of the test's own on a loopback address (127.0.0.2 is another host than
/// 127.0.0.1 to the directory): each request is answered after `delay`, with a 200 or a redirect
/// to `redirect`, unless the client hangs up first. It counts requests per path, and how many
/// it is serving at once.
#[derive(Clone)]
struct Site {
    base: String,
    paths: Arc<Mutex<HashMap<String, usize>>>,
    at_once: Arc<AtomicUsize>,
    most: Arc<AtomicUsize>,
}

impl Site {
    async fn start(ip: &str, delay: Duration, redirect: Option<String>) -> Site {
        let listener = tokio::net::TcpListener::bind((ip, 0)).await.expect("bind a loopback address");
        let base = format!("http://{}", listener.local_addr().expect("addr"));
        let site = Site { base, paths: Arc::default(), at_once: Arc::default(), most: Arc::default() };
        let serving = site.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(serving.clone().serve(stream, delay, redirect.clone()));
            }
        });
        site
    }

    async fn serve(self, mut stream: tokio::net::TcpStream, delay: Duration, redirect: Option<String>) {
        let mut head = Vec::new();
        let mut buf = [0u8; 2048];
        while !head.windows(4).any(|w| w == b"\r\n\r\n") {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => head.extend_from_slice(&buf[..n]),
            }
        }
        let path = String::from_utf8_lossy(&head).split_whitespace().nth(1).unwrap_or("/").to_owned();
        *self.paths.lock().expect("lock").entry(path).or_default() += 1;
        let now = self.at_once.fetch_add(1, Ordering::SeqCst) + 1;
        self.most.fetch_max(now, Ordering::SeqCst);
        let answered = tokio::select! {
            _ = tokio::time::sleep(delay) => true,
            // The client gave up (its deadline): it is no longer being served.
            _ = stream.read(&mut buf) => false,
        };
        if answered {
            let reply = match &redirect {
                Some(to) => format!(
                    "HTTP/1.1 302 Found\r\nLocation: {to}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                ),
                None => "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok".to_owned(),
            };
            let _ = stream.write_all(reply.as_bytes()).await;
            let _ = stream.shutdown().await;
        }
        self.at_once.fetch_sub(1, Ordering::SeqCst);
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    fn requests(&self, path: &str) -> usize {
        self.paths.lock().expect("lock").get(path).copied().unwrap_or(0)
    }

    fn all_requests(&self) -> usize {
        self.paths.lock().expect("lock").values().sum()
    }
}

#[tokio::test]
async fn a_slow_host_does_not_hold_up_unrelated_checks() {
    let s = checking_server().await;
    // Seven agents, three endpoints each, all on one host that never answers in time.
    let slow = Site::start("127.0.0.1", Duration::from_secs(60), None).await;
    for a in 0..7 {
        let listed: Vec<Value> =
            (0..3).map(|e| json!({"kind": "http", "url": slow.url(&format!("/{a}/{e}"))})).collect();
        register_with(&s, &common::unique_handle("slowpoke"), Value::Array(listed)).await;
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    while slow.all_requests() == 0 {
        assert!(Instant::now() < deadline, "the slow host's checks did not start");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    let fast = Site::start("127.0.0.2", Duration::ZERO, None).await;
    let handle = common::unique_handle("unrelated");
    let asked = Instant::now();
    register_with(&s, &handle, json!([{"kind": "http", "url": fast.url("/")}])).await;
    let e = endpoints_within(&s, &handle, "the unrelated check", Duration::from_secs(15), |e| {
        status_of(&e[0]) != "unchecked"
    })
    .await;
    assert_eq!(status_of(&e[0]), "live", "{e:#?}");
    assert!(asked.elapsed() < Duration::from_secs(15), "took {:?}", asked.elapsed());
    assert_eq!(slow.most.load(Ordering::SeqCst), 1, "one check at a time on the slow host");
}

#[tokio::test]
async fn redirects_take_turns_with_the_host_they_lead_to() {
    let s = checking_server().await;
    let target = Site::start("127.0.0.1", Duration::from_millis(1500), None).await;
    let via_a = Site::start("127.0.0.2", Duration::ZERO, Some(target.url("/from-a"))).await;
    let via_b = Site::start("127.0.0.3", Duration::ZERO, Some(target.url("/from-b"))).await;
    let own = common::unique_handle("target");
    register_with(
        &s,
        &own,
        json!([{"kind": "http", "url": target.url("/1")}, {"kind": "http", "url": target.url("/2")}]),
    )
    .await;
    let redirected = common::unique_handle("redirected");
    register_with(
        &s,
        &redirected,
        json!([{"kind": "http", "url": via_a.url("/")}, {"kind": "a2a", "url": via_b.url("/")}]),
    )
    .await;
    endpoints_when(&s, &own, "both live", |e| e.iter().all(|e| status_of(e) == "live")).await;
    endpoints_when(&s, &redirected, "both checked", |e| e.iter().all(|e| status_of(e) != "unchecked")).await;
    let deadline = Instant::now() + Duration::from_secs(60);
    while target.requests("/from-a") < 2 || target.requests("/from-b") < 2 {
        assert!(Instant::now() < deadline, "the redirects were not followed again");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        target.most.load(Ordering::SeqCst),
        1,
        "a redirect reached a host another check was talking to"
    );
}

#[tokio::test]
async fn endpoints_of_deleted_and_suspended_agents_are_not_checked() {
    let s = checking_server().await;
    let site = Site::start("127.0.0.1", Duration::ZERO, None).await;
    let mut agents = Vec::new();
    for path in ["/deleted", "/suspended", "/listed"] {
        let handle = common::unique_handle("hidden");
        let agent = register_with(&s, &handle, json!([{"kind": "http", "url": site.url(path)}])).await;
        endpoints_when(&s, &handle, "live", |e| status_of(&e[0]) == "live").await;
        agents.push(agent);
    }
    s.delete("/api/me", Some(&agents[0].key)).await.expect(200);
    s.admin_ok(&["suspend", "--category", "abuse", &agents[1].handle]);
    // A check under way when they left may still reach them; none after it.
    let wait_for_listed = |more: usize| {
        let (site, deadline) = (site.clone(), Instant::now() + Duration::from_secs(60));
        let until = site.requests("/listed") + more;
        async move {
            while site.requests("/listed") < until {
                assert!(Instant::now() < deadline, "the listed endpoint is no longer checked");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    };
    wait_for_listed(2).await;
    let (deleted, suspended) = (site.requests("/deleted"), site.requests("/suspended"));
    wait_for_listed(3).await;
    assert_eq!(site.requests("/deleted"), deleted, "a deleted agent's endpoint was checked");
    assert_eq!(site.requests("/suspended"), suspended, "a suspended agent's endpoint was checked");
}

/// The similarity `explain=true` shows for `handle` for `need`, if it is listed.
async fn similarity(s: &Server, need: &str, handle: &str) -> Option<f64> {
    let q: String = url::form_urlencoded::byte_serialize(need.as_bytes()).collect();
    let r = s.get(&format!("/api/agents?q={q}&explain=true&limit=100"), None).await;
    r.expect(200);
    let hits = r.json["agents"].as_array().cloned().unwrap_or_default();
    hits.into_iter().find(|a| a["handle"] == handle)?["ranking"]["signals"]["similarity"].as_f64()
}

async fn handles_for(s: &Server, q: &str) -> Vec<String> {
    let r = s.get(&format!("/api/agents?q={q}&limit=100"), None).await;
    r.expect(200);
    r.json["agents"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|a| a["handle"].as_str().map(str::to_owned))
        .collect()
}

/// A proof counts only where the endpoint itself answers: not through a redirect of its
/// origin's well-known path to a page (where a site's users may write), and not in a card that a
/// redirect fetched from another origin.
#[tokio::test]
async fn a_proof_reached_through_a_redirect_proves_nothing() {
    let s = checking_server().await;
    let handle = common::unique_handle("redirected-proof");
    let redirected = Endpoint::start("mcp-tides-redirected", Some(&handle));
    let elsewhere = Endpoint::start("a2a-elsewhere", Some(&handle));
    register_with(
        &s,
        &handle,
        json!([{"kind": "mcp", "url": redirected.url("/mcp")}, {"kind": "a2a", "url": elsewhere.url("/")}]),
    )
    .await;
    let e = endpoints_when(&s, &handle, "both live", |e| e.iter().all(|e| status_of(e) == "live")).await;
    for endpoint in &e {
        let shown = [&endpoint["proof"], &endpoint["tools"], &endpoint["skills"]];
        assert_eq!(shown, [&Value::Null, &Value::Null, &Value::Null], "{e:#?}");
    }
    assert_eq!(e[0]["tool_count"], 1, "{e:#?}");
    assert!(
        !handles_for(&s, "tide").await.contains(&handle),
        "an unproven endpoint's tools are not searched"
    );
}

#[tokio::test]
async fn what_a_proven_endpoint_exposes_is_shown_and_searched_as_the_agents() {
    let s = checking_server().await;
    let handle = common::unique_handle("harbour");
    // A page with the proof text on the endpoint's origin proves the origin (`owned`), not what
    // the endpoint exposes: its own answer holds no proof.
    let unproven = Endpoint::start("mcp-tides", Some(&handle));
    let agent = register_with(&s, &handle, json!([{"kind": "mcp", "url": unproven.url("/mcp")}])).await;
    s.post("/api/me/links", Some(&agent.key), json!({"url": unproven.url("/about")})).await.expect(200);
    let e = endpoints_when(&s, &handle, "live and owned by a link proof", |e| {
        status_of(&e[0]) == "live" && e[0]["owned"] == true
    })
    .await;
    assert_eq!((e[0]["proof"].clone(), e[0]["tools"].clone()), (Value::Null, Value::Null), "{e:#?}");
    assert_eq!(e[0]["tool_count"], 1);
    assert!(
        !handles_for(&s, "tide").await.contains(&handle),
        "an unproven endpoint's tools are not searched"
    );
    let need = "when is high water at the port tomorrow";
    let before = similarity(&s, need, &handle).await.unwrap_or(0.0);

    // The endpoint's own answer holds the proof: its tool is the agent's. (It holds another
    // agent's too, as a host shared by two agents would: one URL still counts for one agent.)
    let other = common::unique_handle("copycat");
    let proven = Endpoint::start("mcp-tides-proven", Some(&format!("{handle} agentdir-proof:{other}")));
    s.patch("/api/me", Some(&agent.key), json!({"endpoints": [{"kind": "mcp", "url": proven.url("/mcp")}]}))
        .await
        .expect(200);
    let e = endpoints_when(&s, &handle, "proven by its answer", |e| e[0]["proof"] == "answer").await;
    let tools = e[0]["tools"].as_array().cloned().unwrap_or_default();
    assert_eq!(tools.len(), 1, "{e:#?}");
    assert_eq!(tools[0]["name"], "tide_table");
    assert_eq!(tools[0]["description"], "Predicts high and low tide heights for a harbour on any date.");
    assert_eq!(e[0]["skills"], Value::Null, "an MCP server lists tools, not skills");
    // Searched by words and by meaning as one more field of the profile.
    assert_eq!(handles_for(&s, "tide").await, vec![handle.clone()]);
    // `explain` names the part of the profile that holds the word: the endpoint's first tool.
    let r = s.get("/api/agents?q=tide&explain=true", None).await;
    r.expect(200);
    assert_eq!(
        r.json["agents"][0]["ranking"]["signals"]["matched_fields"],
        json!(["endpoints.0.tools.0"]),
        "{}",
        r.json
    );
    let mut after = 0.0;
    for _ in 0..100 {
        after = similarity(&s, need, &handle).await.unwrap_or(0.0);
        if after > before + 0.05 {
            break;
        }
        // The profile's vector is computed again in the background after the card changed.
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(after > before + 0.05, "by meaning: {before} before, {after} after");
    // The signed statement covers it.
    let statement = s.get(&format!("/api/agents/{handle}/statement"), None).await;
    statement.expect(200);
    assert!(statement.text.contains('.'), "a JWS");

    // One endpoint URL counts for one agent: another agent listing it gains nothing, though the
    // answer holds its proof too, however it spells the URL (kept in one spelling).
    let spelt = proven.url("/./m%63p?#copy").replacen("http://", "HTTP://", 1);
    let copycat = register_with(&s, &other, json!([{"kind": "mcp", "url": spelt}])).await;
    let e = endpoints_when(&s, &other, "the copied endpoint checked", |e| status_of(&e[0]) == "live").await;
    assert_eq!(e[0]["url"], proven.url("/mcp"), "{e:#?}");
    assert_eq!((e[0]["proof"].clone(), e[0]["tools"].clone()), (Value::Null, Value::Null), "{e:#?}");
    // Nor can a URL carry the proof text, which a server that writes back the URL it was asked
    // for would put in its answer.
    let echoed = proven.url(&format!("/mcp?agentdir-proof:{other}"));
    let r =
        s.patch("/api/me", Some(&copycat.key), json!({"endpoints": [{"kind": "mcp", "url": echoed}]})).await;
    r.expect_error(400, "validation_failed");
    assert_eq!(r.json["error"]["field"], "endpoints.0.url", "{}", r.text);

    // The origin's well-known proof does the same as the answer.
    let well_known = Endpoint::start("mcp-tides-well-known", Some(&handle));
    s.patch(
        "/api/me",
        Some(&agent.key),
        json!({"endpoints": [{"kind": "mcp", "url": well_known.url("/mcp")}]}),
    )
    .await
    .expect(200);
    let e = endpoints_when(&s, &handle, "proven at the origin", |e| e[0]["proof"] == "well_known").await;
    assert_eq!(e[0]["tools"].as_array().map(Vec::len), Some(1), "{e:#?}");
    // The first agent lists the shared endpoint no more: the other's own proof counts for it now.
    let e =
        endpoints_when(&s, &other, "proven once the first let it go", |e| e[0]["proof"] == "answer").await;
    assert_eq!(e[0]["tools"].as_array().map(Vec::len), Some(1), "{e:#?}");

    // A proof that stops holding is dropped at the next check, and the tools with it.
    drop(well_known);
    let e = endpoints_when(&s, &handle, "down", |e| status_of(&e[0]) == "down").await;
    assert_eq!((e[0]["proof"].clone(), e[0]["tools"].clone()), (Value::Null, Value::Null), "{e:#?}");
    assert!(!handles_for(&s, "tide").await.contains(&handle));
}
