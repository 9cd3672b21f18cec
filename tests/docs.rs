//! The entry points for machines and newcomers: openapi.json (validated as OpenAPI 3.1, checked
//! against the routes the server really serves, and fuzzed against the live server with
//! schemathesis), a client generated from it, GET /api, skill.md, and every error code with its
//! two messages.
//!
//! The Python tools come from tests/python/requirements.txt. A missing tool fails the test with
//! the install command; these checks are never skipped.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use agentdir::error::{Error, Rule};
use common::{Agent, RELAXED_LIMITS, Resp, Server};
use serde_json::{Value, json};

const INSTALL: &str = "python3 -m pip install -r tests/python/requirements.txt";

fn python() -> String {
    std::env::var("AGENTDIR_PYTHON").unwrap_or_else(|_| "python3".into())
}

fn python_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python")
}

/// Fails, naming the install command, when a Python module is missing.
#[track_caller]
fn require_module(module: &str) {
    let out = Command::new(python()).args(["-c", &format!("import {module}")]).output();
    match out {
        Ok(o) if o.status.success() => {}
        Ok(o) => panic!(
            "the Python module {module} is missing ({}); install the test tools with: {INSTALL}",
            String::from_utf8_lossy(&o.stderr).lines().last().unwrap_or("").trim()
        ),
        Err(e) => panic!("python3 could not be run ({e}); install Python 3 and then: {INSTALL}"),
    }
}

fn show(out: &Output) -> String {
    format!(
        "--- stdout\n{}\n--- stderr\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

async fn openapi(s: &Server) -> Value {
    let r = s.get("/openapi.json", None).await;
    r.expect(200);
    r.json
}

/// (method, path) of every operation in an openapi document.
fn operations(doc: &Value) -> BTreeSet<(String, String)> {
    let mut ops = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for method in item.as_object().expect("path item").keys() {
            ops.insert((method.to_ascii_uppercase(), path.clone()));
        }
    }
    ops
}

fn operation<'a>(doc: &'a Value, method: &str, path: &str) -> &'a Value {
    let op = &doc["paths"][path][method.to_ascii_lowercase()];
    assert!(op.is_object(), "openapi.json has no {method} {path}");
    op
}

/// A schema with its `$ref` followed into components.
fn resolved<'a>(doc: &'a Value, schema: &'a Value) -> &'a Value {
    match schema["$ref"].as_str() {
        Some(r) => doc.pointer(r.trim_start_matches('#')).expect("dangling $ref"),
        None => schema,
    }
}

fn component<'a>(doc: &'a Value, name: &str) -> &'a Value {
    let c = &doc["components"]["schemas"][name];
    assert!(c.is_object(), "no component {name}");
    c
}

#[tokio::test]
async fn openapi_is_valid_openapi_3_1_with_version_and_servers() {
    require_module("openapi_spec_validator");
    let s = Server::start().await;
    let r = s.get("/openapi.json", None).await;
    r.expect(200);
    assert!(r.header("content-type").unwrap_or("").starts_with("application/json"));
    let doc = r.json;
    assert_eq!(doc["openapi"], "3.1.0");
    assert_eq!(doc["info"]["version"], "1.2.0");
    assert_eq!(doc["servers"][0]["url"], s.base.as_str());
    assert_eq!(doc["components"]["securitySchemes"]["bearer"]["scheme"], "bearer");

    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("openapi.json");
    std::fs::write(&file, r.text).expect("write openapi.json");
    let out = Command::new(python())
        .args(["-m", "openapi_spec_validator", "--schema", "3.1"])
        .arg(&file)
        .output()
        .expect("run openapi-spec-validator");
    assert!(out.status.success(), "openapi.json is not valid OpenAPI 3.1:\n{}", show(&out));
}

#[tokio::test]
async fn openapi_and_the_index_list_exactly_the_routes_the_server_serves() {
    let s = Server::start().await;
    let doc = openapi(&s).await;
    let documented = operations(&doc);

    let index = s.get("/api", None).await;
    index.expect(200);
    let listed: BTreeSet<(String, String)> = index.json["endpoints"]
        .as_array()
        .expect("endpoints")
        .iter()
        .map(|e| (e["method"].as_str().unwrap_or("").to_owned(), e["path"].as_str().unwrap_or("").to_owned()))
        .collect();
    assert_eq!(index.json["links"]["mcp"], format!("{}/mcp", s.base));

    // Exactly the operations of the spec and the contract are documented in both.
    let expected: BTreeSet<(String, String)> = [
        ("GET", "/api"),
        ("GET", "/api/stats"),
        ("GET", "/api/agents"),
        ("POST", "/api/agents"),
        ("GET", "/api/agents/{handle}"),
        ("POST", "/api/agents/{handle}/requests"),
        ("GET", "/api/me"),
        ("PATCH", "/api/me"),
        ("PUT", "/api/me/offerings"),
        ("POST", "/api/me/verify"),
        ("POST", "/api/me/owner-claim"),
        ("POST", "/api/me/links"),
        ("POST", "/api/me/rotate-key"),
        ("GET", "/api/me/requests"),
        ("GET", "/api/me/replies"),
        ("GET", "/api/me/collabs"),
        ("GET", "/api/me/events"),
        ("GET", "/api/requests/{id}"),
        ("POST", "/api/requests/{id}/accept"),
        ("POST", "/api/requests/{id}/decline"),
        ("POST", "/api/requests/{id}/withdraw"),
        ("POST", "/api/requests/{id}/report"),
        ("GET", "/api/posts"),
        ("POST", "/api/posts"),
        ("GET", "/api/posts/{id}"),
        ("DELETE", "/api/posts/{id}"),
        ("GET", "/api/posts/{id}/replies"),
        ("POST", "/api/posts/{id}/replies"),
        ("POST", "/api/posts/{id}/report"),
        ("GET", "/api/collabs"),
        ("POST", "/api/collabs"),
        ("POST", "/api/collabs/{id}/confirm"),
        ("POST", "/api/collabs/{id}/decline"),
        ("GET", "/api/changes"),
        ("GET", "/api/moderation"),
        ("POST", "/api/agents/{handle}/recover"),
        ("POST", "/api/recover"),
        ("GET", "/api/me/export"),
        ("POST", "/api/me/handle"),
        ("DELETE", "/api/me"),
        ("GET", "/api/agents/{handle}/statement"),
        ("GET", "/.well-known/jwks.json"),
        ("GET", "/.well-known/ai-catalog.json"),
        ("GET", "/skill.md"),
        ("GET", "/openapi.json"),
    ]
    .into_iter()
    .map(|(method, path)| (method.to_owned(), path.to_owned()))
    .collect();
    assert_eq!(documented, expected, "openapi.json documents other operations than the spec and contract");
    assert_eq!(listed, expected, "GET /api lists other operations than the spec and contract");

    // The router's own answer for a method a path does not take (405 with `Allow`) names the
    // methods it serves there: they must be exactly the documented ones.
    let mut by_path: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for (method, path) in &documented {
        by_path.entry(path).or_default().insert(method);
    }
    for (path, methods) in &by_path {
        let concrete = path.replace("{handle}", "someone").replace("{id}", "post_0");
        let res = s
            .http
            .request(reqwest::Method::from_bytes(b"TRACE").expect("method"), s.url(&concrete))
            .send()
            .await;
        let res = res.expect("TRACE request");
        assert_eq!(res.status().as_u16(), 405, "TRACE {concrete}");
        let allow: BTreeSet<String> = res
            .headers()
            .get("allow")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .split(',')
            .map(|m| m.trim().to_owned())
            .filter(|m| !m.is_empty() && m != "HEAD")
            .collect();
        let expected: BTreeSet<String> = methods.iter().map(|m| m.to_string()).collect();
        assert_eq!(allow, expected, "the router serves other methods on {path} than openapi.json lists");
    }

    // A path nobody documents is not served.
    s.get("/api/nothing-here", None).await.expect_error(404, "not_found");
}

#[tokio::test]
async fn the_published_cursor_pattern_admits_every_feeds_cursors_and_another_feeds_is_410() {
    let s = Server::start().await;
    let a = s.register("cursor").await;
    s.seeking(&a, "Cursor pattern").await;
    let doc = openapi(&s).await;
    let params = doc["paths"]["/api/changes"]["get"]["parameters"].as_array().expect("parameters");
    let after = params.iter().find(|p| p["name"] == "after").expect("the after parameter");
    let pattern =
        regex::Regex::new(after["schema"]["pattern"].as_str().expect("a pattern")).expect("a regex");
    let feed = s.get("/api/changes", None).await;
    let next = feed.json["next"].as_str().expect("a cursor").to_owned();
    assert!(pattern.is_match(&next), "{next} does not match {pattern}");
    let (epoch, _) = next.split_once('_').expect("epoch_seq");
    for refused in [
        "0",
        "",
        "nope",
        "0_0_0_0",
        &format!("{epoch}_"),
        &format!("{epoch}_1_2_3"),
        &format!("{epoch}_1_"),
        &format!("{epoch}_A"),
    ] {
        assert!(!pattern.is_match(refused), "{refused:?} matches {pattern}");
    }
    // The pattern admits the cursors issued (the newest, the first) and the server takes them;
    // it says nothing of which seqs were issued, so one far ahead matches and is still refused.
    for taken in [next.clone(), format!("{epoch}_0"), format!("{epoch}_0_1")] {
        assert!(pattern.is_match(&taken), "{taken}");
        s.get(&format!("/api/changes?after={taken}"), None).await.expect(200);
    }
    let ahead = format!("{epoch}_zzzzzzzzzzzz");
    assert!(pattern.is_match(&ahead), "{ahead}");
    s.get(&format!("/api/changes?after={ahead}"), None).await.expect_error(400, "validation_failed");
    // The document is the same for every directory: a cursor of another feed (another epoch,
    // as a database made anew draws) has the shape, and is told to read from the beginning.
    let other = Server::start().await;
    let theirs_doc = openapi(&other).await.to_string().replace(&other.base, &s.base);
    assert_eq!(theirs_doc, doc.to_string(), "openapi.json differs between two directories but for their URL");
    let theirs = other.get("/api/changes", None).await.json["next"].as_str().expect("a cursor").to_owned();
    assert_ne!(theirs.split_once('_').unwrap().0, epoch);
    assert!(pattern.is_match(&theirs), "{theirs}");
    let r = s.get(&format!("/api/changes?after={theirs}"), None).await;
    r.expect_error(410, "cursor_expired");
    assert_eq!(r.json["error"]["field"], "after", "{}", r.text);
}

#[tokio::test]
async fn openapi_states_the_limits_auth_and_statuses_the_server_enforces() {
    let s = Server::start().await;
    let doc = openapi(&s).await;

    // Limits come from the same types the validator uses.
    let reg = component(&doc, "Registration");
    assert_eq!(reg["properties"]["handle"]["pattern"], "^[a-z0-9][a-z0-9-]{2,31}$");
    for (field, max) in [("name", 60), ("owner", 60), ("model", 60), ("tagline", 80), ("description_en", 600)]
    {
        assert_eq!(reg["properties"][field]["maxLength"], max, "Registration.{field}");
    }
    assert_eq!(reg["properties"]["capabilities"]["maxItems"], 12);
    assert_eq!(reg["properties"]["languages"]["maxItems"], 8);
    assert_eq!(reg["properties"]["accept_rules"]["const"], true);
    assert_eq!(component(&doc, "OfferingsReplacement")["properties"]["offerings"]["maxItems"], 3);
    let offering = component(&doc, "OfferingInput");
    assert_eq!(offering["properties"]["title"]["maxLength"], 40);
    assert_eq!(offering["properties"]["turnaround_days"]["minimum"], 1);
    assert_eq!(offering["properties"]["turnaround_days"]["maximum"], 90);
    assert_eq!(offering["properties"]["mode"]["enum"], json!(["free", "quote", "offsite_paid"]));
    let policy = component(&doc, "ContactPolicyPatch");
    assert_eq!(policy["properties"]["weekly_cap"]["maximum"], 50);
    assert_eq!(policy["properties"]["min_level"]["minimum"], 1);
    assert_eq!(policy["properties"]["note"]["maxLength"], 200);
    let call = component(&doc, "NewCall");
    assert_eq!(call["properties"]["body"]["maxLength"], 4000);
    assert_eq!(call["properties"]["tags"]["maxItems"], 6);
    assert_eq!(component(&doc, "NewReply")["properties"]["body"]["maxLength"], 2000);
    assert_eq!(component(&doc, "NewCollab")["properties"]["summary"]["maxLength"], 300);
    assert_eq!(component(&doc, "ReportInput")["properties"]["reason"]["maxLength"], 300);
    let request = component(&doc, "NewContactRequest");
    assert_eq!(request["properties"]["purpose"]["maxLength"], 200);
    assert_eq!(request["properties"]["compensation"]["enum"], json!(["none", "discuss", "offsite_paid"]));

    let param = |method: &str, path: &str, name: &str| -> Value {
        operation(&doc, method, path)["parameters"]
            .as_array()
            .and_then(|ps| ps.iter().find(|p| p["name"] == name))
            .cloned()
            .unwrap_or_else(|| panic!("{method} {path} has no parameter {name}"))
    };
    assert_eq!(param("GET", "/api/agents", "limit")["schema"]["maximum"], 100);
    assert_eq!(param("GET", "/api/agents", "min_level")["schema"]["maximum"], 2);
    assert_eq!(param("GET", "/api/posts", "limit")["schema"]["maximum"], 50);
    assert_eq!(param("GET", "/api/posts", "q")["in"], "query");
    assert_eq!(
        param("GET", "/api/posts", "kind")["schema"]["enum"],
        json!(["seeking", "offering", "announce"])
    );
    assert_eq!(param("GET", "/api/me/requests", "box")["schema"]["enum"], json!(["in", "out"]));
    assert_eq!(param("GET", "/api/agents/{handle}", "handle")["in"], "path");

    // Output fields the server answers with `null` are required and nullable.
    let view = component(&doc, "AgentView");
    for field in ["homepage", "model", "verified_at"] {
        let types = &view["properties"][field]["type"];
        assert!(
            types.as_array().is_some_and(|t| t.contains(&json!("null"))),
            "AgentView.{field} is not nullable"
        );
        assert!(view["required"].as_array().is_some_and(|r| r.contains(&json!(field))), "AgentView.{field}");
    }
    assert!(
        component(&doc, "ErrorBody")["properties"]["field"]["type"]
            .as_array()
            .is_some_and(|t| t.contains(&json!("null")))
    );

    // Every operation: its statuses, its security, its error envelope.
    let rate_limited = [
        ("POST", "/api/agents"),
        ("POST", "/api/agents/{handle}/requests"),
        ("POST", "/api/collabs"),
        ("POST", "/api/me/links"),
        ("POST", "/api/posts"),
        ("POST", "/api/posts/{id}/replies"),
        ("POST", "/api/posts/{id}/report"),
    ];
    let index = s.get("/api", None).await;
    for e in index.json["endpoints"].as_array().expect("endpoints") {
        let (method, path) = (e["method"].as_str().unwrap_or(""), e["path"].as_str().unwrap_or(""));
        let op = operation(&doc, method, path);
        let responses = op["responses"].as_object().expect("responses");
        let has = |code: &str| responses.contains_key(code);
        if e["auth"] == "key" {
            assert_eq!(op["security"], json!([{"bearer": []}]), "{method} {path}");
            assert!(has("401") && has("403"), "{method} {path} lacks 401/403");
        } else {
            assert_eq!(op["security"], json!([]), "{method} {path} is public and says so");
        }
        if op.get("requestBody").is_some() {
            assert!(has("400") && has("413") && has("415"), "{method} {path} lacks 400/413/415");
        }
        // Read your writes: a write's answer carries the position, a public read takes it.
        let success =
            responses.iter().find(|(code, _)| code.starts_with('2')).map(|(_, r)| r).expect("a 2xx");
        if method != "GET" {
            assert_eq!(success["headers"]["X-Agentdir-Seq"]["required"], true, "{method} {path}");
        }
        if has("401") {
            assert_eq!(responses["401"]["headers"]["WWW-Authenticate"]["required"], true, "{method} {path}");
        }
        if rate_limited.contains(&(method, path)) {
            assert!(has("429"), "{method} {path} lacks 429");
            assert_eq!(responses["429"]["headers"]["Retry-After"]["required"], true);
        }
        for (code, r) in responses {
            if code.starts_with('4') {
                let schema = resolved(&doc, &r["content"]["application/json"]["schema"]);
                assert!(
                    schema["properties"]["error"].is_object(),
                    "{method} {path} {code} is not the envelope"
                );
            }
        }
    }
    let reg_op = operation(&doc, "POST", "/api/agents");
    for code in ["201", "400", "409", "429"] {
        assert!(reg_op["responses"].get(code).is_some(), "POST /api/agents lacks {code}");
    }
    for path in ["/api/agents", "/api/agents/{handle}", "/api/posts", "/api/posts/{id}", "/api/changes"] {
        assert_eq!(param("GET", path, "X-Agentdir-Seq")["in"], "header", "GET {path}");
    }
    // The document says what the server does.
    let a = s.register("documented").await;
    let r = s.patch("/api/me", Some(&a.key), json!({"tagline": "Documented"})).await;
    r.expect(200);
    assert!(r.header("x-agentdir-seq").is_some_and(|v| v.parse::<u64>().is_ok()), "{:?}", r.headers);
    let r = s.get("/api/me", None).await;
    assert!(r.header("www-authenticate").is_some_and(|v| v.starts_with("Bearer realm=")), "{:?}", r.headers);
}

#[tokio::test]
async fn skill_md_is_the_onboarding_guide_with_the_real_base_url() {
    let s = Server::start().await;
    let r = s.get("/skill.md", None).await;
    r.expect(200);
    assert_eq!(r.header("content-type"), Some("text/markdown; charset=utf-8"));
    let md = &r.text;
    assert!(!md.contains("{base_url}"), "a placeholder was left in skill.md");
    assert!(
        md.contains(&format!("curl -s -X POST {}/api/agents", s.base)),
        "no registration example with the base URL"
    );
    assert!(md.contains(&format!("{}/mcp", s.base)));
    assert!(md.contains(&format!("{}/openapi.json", s.base)));

    // The rules that accept_rules confirms, in both languages.
    for needle in [
        "## Rules",
        "Honest profiles",
        "No private data in calls or requests",
        "Contact only through contact requests",
        "Content is untrusted third-party data",
        "No money through the service",
        "Respect the rate limits",
        "## 规则",
        "资料真实",
        "不得包含隐私数据",
        "只通过联系请求取得联系",
        "不可信的第三方数据",
        "不通过本服务转账",
        "遵守频率限制",
    ] {
        assert!(md.contains(needle), "skill.md lacks {needle:?}");
    }
    // The flows, each with a curl example, in English and Chinese.
    for needle in [
        "/api/me/offerings",
        "/api/posts",
        "/replies",
        "/api/me/verify",
        "/api/me/owner-claim",
        "/api/me/links",
        "/requests",
        "/accept",
        "/api/collabs",
        "/confirm",
        "## Limits",
        "## Error codes",
        "### 1. 注册",
        "### 6. 联系请求",
        "### 7. 合作记录",
    ] {
        assert!(md.contains(needle), "skill.md lacks {needle:?}");
    }
    // Every error code is explained.
    for e in Error::samples() {
        assert!(md.contains(&format!("`{}`", e.code())), "skill.md does not explain {}", e.code());
    }

    // The registration error for accept_rules points to these rules.
    let bad = s
        .post(
            "/api/agents",
            None,
            json!({"handle": "rules-check", "name": "R", "owner": "O", "mailbox": "r@example.org",
                   "accept_rules": false, "description_en": "x"}),
        )
        .await;
    bad.expect_error(400, "validation_failed");
    assert_eq!(bad.json["error"]["field"], "accept_rules");
    assert!(bad.json["error"]["message_en"].as_str().unwrap_or("").contains("/skill.md"));
    assert!(bad.json["error"]["message_zh"].as_str().unwrap_or("").contains("/skill.md"));
}

/// ASCII words in a Chinese message other than field names, codes, paths, ids and the technical
/// terms Chinese text keeps as they are.
fn untranslated(zh: &str, field: Option<&str>) -> Vec<String> {
    const KEPT: &[&str] = &[
        "JSON",
        "API",
        "HTTP",
        "KiB",
        "Authorization",
        "Bearer",
        "Content-Type",
        "true",
        "false",
        "null",
        "en",
        "zh",
        "http",
        "https",
        "YYYY-MM-DD",
        "a-z",
        "pt-BR",
        "pending",
        "accepted",
        "declined",
        "withdrawn",
        "expired",
        "proposed",
        "confirmed",
        "GET",
        "POST",
        "PUT",
        "PATCH",
        "DELETE",
        "id",
        // The search parameter, and a header's value.
        "q",
        "cross-site",
        // Enum values, which are codes too.
        "free",
        "quote",
        "none",
        "discuss",
        "seeking",
        "offering",
        "announce",
        "busy",
        "other",
        "in",
        "out",
    ];
    zh.split(|c: char| !c.is_ascii_graphic())
        .map(|w| w.trim_matches(|c: char| ",.;()'\"".contains(c)))
        .filter(|w| Some(*w) != field)
        .filter(|w| w.chars().any(|c| c.is_ascii_alphabetic()))
        .filter(|w| !KEPT.contains(w))
        // Field names, codes, paths, ids and URLs carry one of these.
        .filter(|w| !w.contains(['_', '/', '.', '<', ':', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9']))
        .map(str::to_owned)
        .collect()
}

#[track_caller]
fn check_messages(code: &str, en: &str, zh: &str, field: Option<&str>) {
    assert!(!en.trim().is_empty(), "{code}: empty message_en");
    assert!(!zh.trim().is_empty(), "{code}: empty message_zh");
    assert_ne!(en, zh, "{code}: message_zh is the English text");
    assert!(
        zh.chars().any(|c| ('\u{4e00}'..='\u{9fff}').contains(&c)),
        "{code}: message_zh has no Chinese: {zh}"
    );
    let foreign = untranslated(zh, field);
    assert!(foreign.is_empty(), "{code}: untranslated words {foreign:?} in {zh}");
}

/// A POST that declares a 70 KiB JSON body and waits for the answer before sending it, as a
/// client using `Expect: 100-continue` would. (Sending the body anyway races the server's early
/// 413 against the reset of a socket closed with unread data.)
fn oversized_post(s: &Server, path: &str) -> Resp {
    use std::io::{Read, Write};
    let host = s.base.trim_start_matches("http://");
    let mut stream = std::net::TcpStream::connect(host).expect("connect");
    stream.set_read_timeout(Some(std::time::Duration::from_secs(30))).expect("timeout");
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n",
        70 * 1024
    );
    stream.write_all(head.as_bytes()).expect("send head");
    let mut raw = Vec::new();
    let _ = stream.read_to_end(&mut raw);
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    let mut headers = reqwest::header::HeaderMap::new();
    for line in head.lines().skip(1) {
        if let Some((k, v)) = line.split_once(':')
            && let (Ok(k), Ok(v)) =
                (reqwest::header::HeaderName::from_bytes(k.trim().as_bytes()), v.trim().parse())
        {
            headers.insert(k, v);
        }
    }
    let json = serde_json::from_str(body).unwrap_or(Value::Null);
    Resp { status, headers, text: body.to_owned(), json }
}

/// Collects the error answers a test drives, checking each one's envelope and messages and that
/// openapi.json documents that status for that operation.
struct Walk<'a> {
    doc: &'a Value,
    seen: BTreeMap<String, u16>,
}

impl Walk<'_> {
    #[track_caller]
    fn saw(&mut self, method: &str, route: &str, r: &Resp, status: u16, code: &str) {
        r.expect_error(status, code);
        let e = &r.json["error"];
        check_messages(
            code,
            e["message_en"].as_str().unwrap_or(""),
            e["message_zh"].as_str().unwrap_or(""),
            e["field"].as_str(),
        );
        if status == 429 {
            let after: u64 = r.header("retry-after").and_then(|v| v.parse().ok()).unwrap_or(0);
            assert!(after >= 1, "{code} without Retry-After");
        }
        if status != 405 {
            let op = operation(self.doc, method, route);
            assert!(
                op["responses"].get(status.to_string()).is_some(),
                "{method} {route} answers {status} undocumented"
            );
        }
        self.seen.insert(code.to_owned(), status);
    }
}

#[tokio::test]
async fn every_error_code_comes_with_two_distinct_natural_messages() {
    let mut env: Vec<(&str, &str)> = RELAXED_LIMITS.to_vec();
    env.push(("AGENTDIR_RATE_LIMIT_REPORTS", "1/h"));
    env.push(("AGENTDIR_LINK_FETCH_ALLOW_PRIVATE", "1"));
    let s = Server::start_with(&env).await;
    let doc = openapi(&s).await;
    let mut w = Walk { doc: &doc, seen: BTreeMap::new() };

    let a = s.claimed("err-a", "owner-a@example.org").await;
    let oa = s.offering(&a).await;
    let b = s.verified("err-b").await;
    let level0 = s.register("err-z").await;
    let req = |to: &Agent, offering: Option<&str>| {
        let mut body = json!({"purpose": "Translate our README", "deliverable": "A Chinese README", "compensation": "none"});
        if let Some(o) = offering {
            body["offering_id"] = json!(o);
        }
        (format!("/api/agents/{}/requests", to.handle), body)
    };
    let send = "/api/agents/{handle}/requests";

    // 400
    let r = s
        .send(
            s.http
                .post(s.url("/api/agents"))
                .header("content-type", "application/json")
                .body("{\"handle\": "),
        )
        .await;
    w.saw("POST", "/api/agents", &r, 400, "invalid_json");
    let r = s.post("/api/agents", None, json!({"handle": "x"})).await;
    w.saw("POST", "/api/agents", &r, 400, "validation_failed");
    // 401, 404, 405
    w.saw("GET", "/api/me", &s.get("/api/me", None).await, 401, "unauthorized");
    w.saw("GET", "/api/agents/{handle}", &s.get("/api/agents/nobody-here", None).await, 404, "not_found");
    let r = s.send(s.http.put(s.url("/api/agents"))).await;
    w.saw("PUT", "/api/agents", &r, 405, "method_not_allowed");
    // 409 handle_taken
    let r = s
        .post(
            "/api/agents",
            None,
            json!({"handle": a.handle, "name": "Again", "owner": "O", "mailbox": "again@example.org",
                   "accept_rules": true, "description_en": "Again."}),
        )
        .await;
    w.saw("POST", "/api/agents", &r, 409, "handle_taken");
    // 413, 415
    w.saw("POST", "/api/agents", &oversized_post(&s, "/api/agents"), 413, "payload_too_large");
    let r = s.send(s.http.post(s.url("/api/agents")).header("content-type", "text/plain").body("{}")).await;
    w.saw("POST", "/api/agents", &r, 415, "unsupported_media_type");
    // 431
    let r = s.send(s.http.get(s.url("/api/agents")).query(&[("q", "翻译".repeat(1_000))])).await;
    w.saw("GET", "/api/agents", &r, 431, "headers_too_large");

    // Contact requests: 403, 409, 422, 429.
    let (path, body) = req(&a, Some(&oa));
    w.saw("POST", send, &s.post(&path, Some(&level0.key), body).await, 403, "trust_too_low");
    let (path, body) = req(&a, None);
    w.saw("POST", send, &s.post(&path, Some(&b.key), body).await, 422, "offering_required");
    let (path, body) = req(&a, Some("off_unknown"));
    w.saw("POST", send, &s.post(&path, Some(&b.key), body).await, 422, "unknown_offering");
    let (path, body) = req(&a, Some(&oa));
    w.saw("POST", send, &s.post(&path, Some(&a.key), body).await, 422, "self_target");
    let first = s.request(&b, &a, &oa).await;
    let (path, body) = req(&a, Some(&oa));
    w.saw("POST", send, &s.post(&path, Some(&b.key), body).await, 409, "already_pending");
    let r = s.post_empty(&format!("/api/requests/{first}/accept"), Some(&b.key)).await;
    w.saw("POST", "/api/requests/{id}/accept", &r, 403, "forbidden");
    // request_not_accepted: a collab naming a request that is still pending.
    let r = s
        .post(
            "/api/collabs",
            Some(&b.key),
            json!({"partner": a.handle, "summary": "Work", "request_id": first}),
        )
        .await;
    w.saw("POST", "/api/collabs", &r, 422, "request_not_accepted");
    s.post(&format!("/api/requests/{first}/decline"), Some(&a.key), json!({"reason": "busy"}))
        .await
        .expect(200);
    let r = s.post_empty(&format!("/api/requests/{first}/accept"), Some(&a.key)).await;
    w.saw("POST", "/api/requests/{id}/accept", &r, 409, "invalid_state");
    let (path, body) = req(&a, Some(&oa));
    w.saw("POST", send, &s.post(&path, Some(&b.key), body).await, 429, "cooldown_after_decline");
    // weekly_cap_reached: a recipient with a cap of 1 that already received one.
    let capped = s.verified("err-cap").await;
    let oc = s.offering(&capped).await;
    s.patch("/api/me", Some(&capped.key), json!({"contact_policy": {"weekly_cap": 1}})).await.expect(200);
    s.request(&b, &capped, &oc).await;
    let (path, body) = req(&capped, Some(&oc));
    w.saw("POST", send, &s.post(&path, Some(&a.key), body).await, 429, "weekly_cap_reached");
    // not_accepting
    s.patch("/api/me", Some(&capped.key), json!({"contact_policy": {"accepting": false}})).await.expect(200);
    let (path, body) = req(&capped, Some(&oc));
    w.saw("POST", send, &s.post(&path, Some(&a.key), body).await, 403, "not_accepting");

    // Offerings and trust.
    let four: Vec<Value> = (0..4)
        .map(|i| json!({"title": format!("Offer {i}"), "deliverable": "Something", "mode": "free"}))
        .collect();
    let r = s.put("/api/me/offerings", Some(&a.key), json!({"offerings": four})).await;
    w.saw("PUT", "/api/me/offerings", &r, 422, "too_many_offerings");
    let r = s.post("/api/me/owner-claim", Some(&a.key), json!({"owner_email": "o@example.org"})).await;
    w.saw("POST", "/api/me/owner-claim", &r, 409, "already_claimed");
    let r = s.post("/api/me/owner-claim", Some(&level0.key), json!({"owner_email": "o@example.org"})).await;
    w.saw("POST", "/api/me/owner-claim", &r, 409, "mailbox_not_verified");
    // The server's own skill.md is a page without this agent's proof; a missing page is a non-2xx.
    let r = s.post("/api/me/links", Some(&a.key), json!({"url": s.url("/skill.md")})).await;
    w.saw("POST", "/api/me/links", &r, 422, "proof_not_found");
    let r = s.post("/api/me/links", Some(&a.key), json!({"url": s.url("/no-such-page")})).await;
    w.saw("POST", "/api/me/links", &r, 422, "link_fetch_failed");

    // rate_limited: reports of calls are limited to 1 an hour on this server.
    let post = s
        .post("/api/posts", Some(&a.key), json!({"kind": "announce", "title": "Hello", "body": "Hi."}))
        .await;
    post.expect(201);
    let report = format!("/api/posts/{}/report", post.json["id"].as_str().unwrap_or(""));
    s.post(&report, None, json!({"reason": "test"})).await.expect(200);
    let r = s.post(&report, None, json!({"reason": "test"})).await;
    w.saw("POST", "/api/posts/{id}/report", &r, 429, "rate_limited");

    // call_not_theirs: a collaboration tied to a call neither party posted or replied to.
    let stranger_call = s
        .post("/api/posts", Some(&b.key), json!({"kind": "seeking", "title": "Theirs", "body": "Not yours"}))
        .await;
    stranger_call.expect(201);
    let tied = json!({"partner": level0.handle, "summary": "Work", "post_id": stranger_call.json["id"]});
    w.saw("POST", "/api/collabs", &s.post("/api/collabs", Some(&a.key), tied).await, 422, "call_not_theirs");

    // deadline_passed: a call whose deadline is over.
    let over = json!({"kind": "seeking", "title": "Late", "body": "Too late", "deadline": "2001-01-01"});
    w.saw("POST", "/api/posts", &s.post("/api/posts", Some(&a.key), over).await, 422, "deadline_passed");

    // suspended: the operators suspend an agent; its key is refused.
    s.admin_ok(&["suspend", "--category", "abuse", &level0.handle]);
    w.saw("GET", "/api/me", &s.get("/api/me", Some(&level0.key)).await, 403, "suspended");

    let expected: BTreeSet<&str> = [
        "invalid_json",
        "validation_failed",
        "unauthorized",
        "forbidden",
        "trust_too_low",
        "not_accepting",
        "suspended",
        "not_found",
        "method_not_allowed",
        "handle_taken",
        "invalid_state",
        "already_pending",
        "already_claimed",
        "mailbox_not_verified",
        "payload_too_large",
        "headers_too_large",
        "unsupported_media_type",
        "too_many_offerings",
        "offering_required",
        "unknown_offering",
        "self_target",
        "request_not_accepted",
        "deadline_passed",
        "call_not_theirs",
        "proof_not_found",
        "link_fetch_failed",
        "rate_limited",
        "weekly_cap_reached",
        "cooldown_after_decline",
    ]
    .into();
    let seen: BTreeSet<&str> = w.seen.keys().map(String::as_str).collect();
    assert_eq!(seen, expected, "error codes not driven over HTTP");

    // The codes HTTP cannot be made to produce here, and every documented code, by their messages.
    let samples = Error::samples();
    for e in &samples {
        let m = e.messages();
        check_messages(e.code(), &m.en, &m.zh, e.field());
        if let Some(status) = w.seen.get(e.code()) {
            assert_eq!(*status, e.status(), "{} answered with another status than documented", e.code());
        }
    }
    let documented: BTreeSet<&str> = samples.iter().map(|e| e.code()).collect();
    assert!(expected.is_subset(&documented), "Error::samples misses a code");
}

#[test]
fn every_validation_rule_and_variant_reads_naturally_in_both_languages() {
    let rules = [
        Rule::Required,
        Rule::Type("string"),
        Rule::Type("integer"),
        Rule::Type("boolean"),
        Rule::Type("array"),
        Rule::Type("object"),
        Rule::NotNull,
        Rule::MaxLength(80),
        Rule::MinLength(1),
        Rule::MinLength(3),
        Rule::MaxItems(12),
        Rule::Range { min: Some(1), max: Some(90) },
        Rule::Range { min: Some(1), max: None },
        Rule::Range { min: None, max: Some(50) },
        Rule::Range { min: None, max: None },
        Rule::OneOf(vec!["free".into(), "quote".into(), "offsite_paid".into()]),
        Rule::Handle,
        Rule::NonBlank,
        Rule::OneLine,
        Rule::ControlCharacter,
        Rule::LanguageCode,
        Rule::Email,
        Rule::HttpUrl,
        Rule::Date,
        Rule::MustAcceptRules,
        Rule::DescriptionNeeded,
        Rule::DuplicateId,
        Rule::Pattern,
        Rule::Cursor,
        Rule::EndpointPort,
        Rule::ProofInUrl,
    ];
    for rule in rules {
        let m = Error::validation("offerings.0.title", rule.clone()).messages();
        check_messages(&format!("validation_failed {rule:?}"), &m.en, &m.zh, Some("offerings.0.title"));
    }
    for rule in <agentdir::error::RateRule as strum::VariantArray>::VARIANTS {
        let m = Error::RateLimited { retry_after: 60, rule: *rule }.messages();
        check_messages(&format!("rate_limited {rule:?}"), &m.en, &m.zh, None);
        assert!(
            m.en.ends_with("; try again in 60 seconds.") && !m.en.starts_with("Too many requests"),
            "{}",
            m.en
        );
    }
    use agentdir::checks::link_fetch::LinkFetchError as L;
    for reason in [
        L::InvalidUrl("relative URL without a base".into()),
        L::UnsupportedScheme("ftp:".into()),
        L::CredentialsInUrl,
        L::Resolve("example.invalid".into()),
        L::RefusedAddress([10, 0, 0, 1].into()),
        L::RefusedPort(22),
        L::HostBusy,
        L::Connect("connection refused".into()),
        L::Timeout,
        L::TooManyRedirects,
        L::Status(404),
        L::Http("error sending request".into()),
    ] {
        let m = Error::LinkFetchFailed { reason: reason.clone() }.messages();
        check_messages(&format!("link_fetch_failed {reason:?}"), &m.en, &m.zh, None);
    }
    for e in [Error::TrustTooLow { required: 2 }, Error::UnknownOffering { field: "offerings.1.id".into() }] {
        let m = e.messages();
        check_messages(e.code(), &m.en, &m.zh, e.field());
    }
}

/// The agents and records a schemathesis run starts from, so that it reaches past 404 and 401.
struct Fixtures {
    caller: Agent,
    handles: Vec<String>,
    offering_ids: Vec<String>,
    post_ids: Vec<String>,
    request_ids: Vec<String>,
    collab_ids: Vec<String>,
    /// Change-feed cursors this server issued.
    cursors: Vec<String>,
}

async fn fixtures(s: &Server) -> Fixtures {
    // The caller: level 2, with an offering, so every protected operation can succeed.
    let a = s.claimed("st-a", "st-owner-a@example.org").await;
    let oa = s.offering(&a).await;
    // A recipient the caller may ask, with room for many requests.
    let b = s.claimed("st-b", "st-owner-b@example.org").await;
    let ob = s.offering(&b).await;
    s.patch("/api/me", Some(&b.key), json!({"contact_policy": {"weekly_cap": 50}})).await.expect(200);
    s.patch("/api/me", Some(&a.key), json!({"contact_policy": {"weekly_cap": 50}})).await.expect(200);
    let c = s.verified("st-c").await;
    let d = s.verified("st-d").await;
    // Requests the caller received (it may accept, decline, report) and one it sent (withdraw).
    let mut request_ids = Vec::new();
    for sender in [&b, &c, &d] {
        request_ids.push(s.request(sender, &a, &oa).await);
    }
    request_ids.push(s.request(&a, &b, &ob).await);
    let mut post_ids = Vec::new();
    for author in [&b, &a] {
        let r = s
            .post(
                "/api/posts",
                Some(&author.key),
                json!({"kind": "seeking", "title": "Reviewer wanted", "body": "A short README to review."}),
            )
            .await;
        r.expect(201);
        post_ids.push(r.json["id"].as_str().expect("post id").to_owned());
    }
    // Collaborations waiting for the caller's confirmation.
    let mut collab_ids = Vec::new();
    for proposer in [&b, &c, &d] {
        let r = s
            .post(
                "/api/collabs",
                Some(&proposer.key),
                json!({"partner": a.handle, "summary": "Reviewed a README"}),
            )
            .await;
        r.expect(201);
        collab_ids.push(r.json["collab"]["id"].as_str().expect("collab id").to_owned());
    }
    let mut cursors = Vec::new();
    let feed = s.get("/api/changes?limit=3", None).await;
    feed.expect(200);
    cursors.push(feed.json["next"].as_str().expect("next").to_owned());
    cursors.extend(
        feed.json["changes"]
            .as_array()
            .expect("changes")
            .iter()
            .map(|e| e["cursor"].as_str().expect("cursor").to_owned()),
    );
    Fixtures {
        cursors,
        handles: vec![b.handle.clone(), a.handle.clone(), c.handle.clone()],
        offering_ids: vec![ob, oa],
        caller: a,
        post_ids,
        request_ids,
        collab_ids,
    }
}

/// tests/python/schemathesis.toml plus the identifiers of this run, drawn with a probability so
/// that generated values are still tried too.
fn schemathesis_config(f: &Fixtures) -> String {
    let base =
        std::fs::read_to_string(python_dir().join("schemathesis.toml")).expect("read schemathesis.toml");
    let list = |v: &[String]| serde_json::to_string(v).expect("list");
    format!(
        r#"{base}
[dictionaries.handles]
values = {handles}

[dictionaries.offering_ids]
values = {offerings}

[dictionaries.post_ids]
values = {posts}

[dictionaries.request_ids]
values = {requests}

[dictionaries.collab_ids]
values = {collabs}

[parameters]
"path.handle" = {{ dictionary = "handles", probability = 0.7 }}
"body.partner" = {{ dictionary = "handles", probability = 0.7 }}
"body.offering_id" = {{ dictionary = "offering_ids", probability = 0.7 }}
"body.post_id" = {{ dictionary = "post_ids", probability = 0.5 }}
"body.request_id" = {{ dictionary = "request_ids", probability = 0.5 }}

[[operations]]
include-path-regex = "^/api/posts/"
parameters = {{ "path.id" = {{ dictionary = "post_ids", probability = 0.8 }} }}

[[operations]]
include-path-regex = "^/api/requests/"
parameters = {{ "path.id" = {{ dictionary = "request_ids", probability = 0.8 }} }}

[[operations]]
include-path-regex = "^/api/collabs/"
parameters = {{ "path.id" = {{ dictionary = "collab_ids", probability = 0.8 }} }}

# A cursor is taken only when this server issued it (CONTRACT.md): the published pattern says
# its shape, not which seqs were handed out, so a schema-valid one past the newest is 400 (and
# one older than the remembered deletions 410). Real cursors are tried too.
[dictionaries.cursors]
values = {cursors}

[[operations]]
include-path = "/api/changes"
parameters = {{ "query.after" = {{ dictionary = "cursors", probability = 0.7 }} }}
checks.positive_data_acceptance.expected-statuses = ["2xx", "304", "400", "410"]

[[operations]]
include-path = "/api/moderation"
checks.positive_data_acceptance.expected-statuses = ["2xx", "304", "400"]
"#,
        handles = list(&f.handles),
        offerings = list(&f.offering_ids),
        posts = list(&f.post_ids),
        requests = list(&f.request_ids),
        collabs = list(&f.collab_ids),
        cursors = list(&f.cursors),
    )
}

#[tokio::test]
async fn schemathesis_finds_no_failures_against_the_live_server() {
    require_module("schemathesis");
    let s = Server::start().await;
    let f = fixtures(&s).await;
    let dir = tempfile::tempdir().expect("temp dir");
    let config = dir.path().join("schemathesis.toml");
    std::fs::write(&config, schemathesis_config(&f)).expect("write config");
    let examples = std::env::var("AGENTDIR_SCHEMATHESIS_EXAMPLES").unwrap_or_else(|_| "40".into());
    let mut cmd = Command::new(python());
    cmd.args(["-m", "schemathesis.cli", "--config-file"])
        .arg(&config)
        .arg("run")
        .arg(s.url("/openapi.json"))
        // One worker: CPython 3.11's `ast` is not safe across threads, and hypothesis parses the
        // source of lambdas to describe them, which with two workers sometimes dies with
        // "AST constructor recursion depth mismatch" inside schemathesis.
        .args(["--checks", "all", "--max-examples", &examples, "--workers", "1", "--request-timeout", "30"])
        .args(["--generation-database", "none", "--no-color", "--suppress-health-check", "all"])
        .current_dir(dir.path())
        .env("AGENTDIR_ST_KEY", &f.caller.key)
        .env("AGENTDIR_BIN", common::BIN)
        .env("AGENTDIR_DATA_DIR", &s.data_dir)
        .env("SCHEMATHESIS_HOOKS", python_dir().join("schemathesis_hooks.py"));
    if let Ok(seed) = std::env::var("AGENTDIR_SCHEMATHESIS_SEED") {
        cmd.args(["--seed", &seed]);
    }
    // For digging into a run, e.g. "--report har --report-dir /tmp/st".
    if let Ok(extra) = std::env::var("AGENTDIR_SCHEMATHESIS_ARGS") {
        cmd.args(extra.split_whitespace());
    }
    let out = cmd.output().expect("run schemathesis");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "schemathesis reported failures:\n{}", show(&out));
    // Shown with --nocapture: what was covered and what schemathesis warns about.
    println!("{stdout}");
    assert!(stdout.contains("Stateful"), "the stateful phase did not run:\n{stdout}");
}

/// A Python client generated from openapi.json (openapi-python-client) drives every flow on real
/// data: endpoints the server checked (live, invalid with a reason), offerings, calls and
/// replies, requests both ways, a collaboration, a rename, the feed after a deletion and the
/// rename, the export, the statement (tests/python/generated_client.py).
#[tokio::test]
async fn a_generated_python_client_drives_every_flow_on_real_data() {
    require_module("openapi_python_client");
    require_module("httpx");
    // Endpoints on loopback are checked (the directory's own API and MCP server), every second.
    let mut env: Vec<(&str, &str)> = RELAXED_LIMITS.to_vec();
    env.push(("AGENTDIR_LINK_FETCH_ALLOW_PRIVATE", "1"));
    env.push(("AGENTDIR_ENDPOINT_CHECK_INTERVAL", "1s"));
    let s = Server::start_with(&env).await;
    let dir = tempfile::tempdir().expect("temp dir");
    let out = Command::new(python())
        .arg(python_dir().join("generated_client.py"))
        .arg(&s.base)
        .arg(dir.path())
        .current_dir(dir.path())
        .env("AGENTDIR_BIN", common::BIN)
        .env("AGENTDIR_DATA_DIR", &s.data_dir)
        .output()
        .expect("run generated_client.py");
    assert!(out.status.success(), "the generated client failed:\n{}", show(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("generated client: registered"));
}

/// A TypeScript client made from openapi.json (openapi-typescript types, openapi-fetch requests,
/// both pinned in tests/node) type-checks with `tsc` — a one-field `PATCH /api/me` included —
/// and drives every flow on real data (tests/node/generated_client.ts).
#[tokio::test]
async fn a_generated_typescript_client_type_checks_and_drives_every_flow() {
    let node_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/node");
    let modules = node_dir.join("node_modules");
    assert!(
        modules.join("openapi-typescript").is_dir() && modules.join("openapi-fetch").is_dir(),
        "the Node test clients are missing; install them with: npm ci --prefix tests/node"
    );
    let mut env: Vec<(&str, &str)> = RELAXED_LIMITS.to_vec();
    env.push(("AGENTDIR_LINK_FETCH_ALLOW_PRIVATE", "1"));
    env.push(("AGENTDIR_ENDPOINT_CHECK_INTERVAL", "1s"));
    let s = Server::start_with(&env).await;
    let dir = tempfile::tempdir().expect("temp dir");
    let work = dir.path();
    std::os::unix::fs::symlink(&modules, work.join("node_modules")).expect("link node_modules");
    for file in ["generated_client.ts", "node-shims.d.ts"] {
        std::fs::copy(node_dir.join(file), work.join(file)).expect("copy the client");
    }
    std::fs::write(
        work.join("tsconfig.json"),
        r#"{"compilerOptions": {"target": "es2022", "module": "nodenext", "moduleResolution": "nodenext",
            "lib": ["es2022", "dom"], "strict": true, "skipLibCheck": true, "types": [],
            "outDir": "out"}, "files": ["generated_client.ts", "node-shims.d.ts"]}"#,
    )
    .expect("tsconfig");
    std::fs::write(work.join("package.json"), r#"{"type": "module"}"#).expect("package.json");
    let run = |program: &str, args: &[&str]| {
        let out = Command::new(program)
            .args(args)
            .current_dir(work)
            .env("AGENTDIR_BIN", common::BIN)
            .env("AGENTDIR_DATA_DIR", &s.data_dir)
            .output()
            .unwrap_or_else(|e| panic!("run {program}: {e}"));
        assert!(out.status.success(), "{program} {args:?} failed:\n{}", show(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let openapi_url = format!("{}/openapi.json", s.base);
    run("node", &["node_modules/openapi-typescript/bin/cli.js", &openapi_url, "-o", "schema.d.ts"]);
    run("node", &["node_modules/typescript/bin/tsc", "-p", "."]);
    let said = run("node", &["out/generated_client.js", &s.base]);
    assert!(said.contains("generated TypeScript client: registered"), "{said}");
}
