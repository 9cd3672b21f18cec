//! Operating a real server: health and readiness, Prometheus metrics, request ids, security
//! headers, the hardening layers (body and header limits, timeouts, load shedding), graceful
//! shutdown, online backups, and logs that never hold an API key or a mailbox.

mod common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::{RELAXED_LIMITS, Resp, Server, unique_handle};
use serde_json::{Value, json};

fn env_with(extra: &[(&'static str, &'static str)]) -> Vec<(&'static str, &'static str)> {
    let mut env = RELAXED_LIMITS.to_vec();
    env.extend_from_slice(extra);
    env
}

/// A web page on 127.0.0.1 that answers each of at most `connections` requests `delay` after
/// it arrived, with `body`. The receiver gets one message per request as it arrives.
fn slow_page(delay: Duration, body: String, connections: usize) -> (String, mpsc::Receiver<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind the page server");
    let url = format!("http://{}/proof", listener.local_addr().expect("addr"));
    let (arrived, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming().take(connections) {
            let Ok(mut stream) = stream else { continue };
            let arrived = arrived.clone();
            let body = body.clone();
            std::thread::spawn(move || {
                let mut seen = Vec::new();
                let mut buf = [0u8; 1024];
                while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => seen.extend_from_slice(&buf[..n]),
                    }
                }
                let _ = arrived.send(());
                std::thread::sleep(delay);
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                    body.len()
                );
                let _ = stream.write_all(head.as_bytes());
                let _ = stream.write_all(body.as_bytes());
            });
        }
    });
    (url, rx)
}

/// Opens a raw connection to the server, with a read timeout so a test never hangs.
fn raw_connection(s: &Server) -> TcpStream {
    let stream = TcpStream::connect(s.addr()).expect("connect");
    stream.set_read_timeout(Some(Duration::from_secs(10))).expect("read timeout");
    stream
}

/// Reads until the server closes the connection (or the read timeout).
fn read_all(stream: &mut TcpStream) -> String {
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) => panic!(
                "the server neither answered nor closed: {e}; read so far: {}",
                String::from_utf8_lossy(&out)
            ),
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The JSON body of a raw HTTP/1.1 answer.
fn raw_json(answer: &str) -> Value {
    let body = answer.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    serde_json::from_str(body).unwrap_or(Value::Null)
}

async fn metrics_text(s: &Server) -> String {
    let r = s.get("/metrics", None).await;
    r.expect(200);
    assert!(r.header("content-type").unwrap_or("").starts_with("text/plain"), "{:?}", r.headers);
    r.text
}

#[tokio::test]
async fn health_and_readiness_answer() {
    let s = Server::start().await;
    let h = s.get("/healthz", None).await;
    h.expect(200);
    assert_eq!(h.json["status"], "ok");
    let r = s.get("/readyz", None).await;
    r.expect(200);
    assert_eq!(r.json["status"], "ready");
    assert_eq!(r.json["database"], "ok");
    assert_eq!(r.json["search_index"], "ok");
    assert!(r.json["index_lag"].is_u64(), "{}", r.text);
    s.post_empty("/healthz", None).await.expect_error(405, "method_not_allowed");
    // Operator endpoints are not part of the public API documents.
    let api = s.get("/api", None).await.text;
    assert!(!api.contains("/healthz") && !api.contains("/metrics"), "{api}");
}

#[tokio::test]
async fn metrics_count_requests_by_route_template_and_report_index_and_pool() {
    let s = Server::start().await;
    let missing = unique_handle("nobody-here");
    s.get(&format!("/api/agents/{missing}"), None).await.expect(404);
    s.get(&format!("/api/agents/{missing}"), None).await.expect(404);
    s.get("/api/stats", None).await.expect(200);
    s.get("/no/such/path", None).await.expect(404);
    let text = metrics_text(&s).await;

    let series = |prefix: &str| text.lines().find(|l| l.starts_with(prefix)).map(str::to_owned);
    let count =
        series("agentdir_http_requests_total{route=\"/api/agents/{handle}\",method=\"GET\",status=\"404\"}")
            .unwrap_or_else(|| panic!("no templated series in:\n{text}"));
    assert!(count.ends_with(" 2"), "{count}");
    assert!(!text.contains(&missing), "a concrete path leaked into the labels");
    assert!(!text.contains("/no/such/path"), "an unknown path became a label");
    assert!(
        series("agentdir_http_requests_total{route=\"unmatched\",method=\"GET\",status=\"404\"}").is_some(),
        "{text}"
    );
    assert!(series("agentdir_http_request_duration_seconds_bucket{route=\"/api/stats\"").is_some(), "{text}");
    for name in [
        "agentdir_search_index_lag ",
        "agentdir_search_index_applied_seq ",
        "agentdir_db_pool_connections{state=\"idle\"} ",
        "agentdir_db_pool_connections{state=\"in_use\"} ",
        "agentdir_db_pool_size ",
    ] {
        assert!(series(name).is_some(), "no {name} in:\n{text}");
    }
    // The request for the metrics themselves is being answered.
    let in_flight = series("agentdir_http_requests_in_flight ")
        .unwrap_or_else(|| panic!("no in-flight gauge in:\n{text}"));
    assert!(in_flight.ends_with(" 1"), "{in_flight}");
    // A write moves the applied position of the index: the applier follows the writer on its
    // own thread, so soon rather than at once.
    s.register("metrics").await;
    let applied = |t: &str| -> f64 {
        t.lines()
            .find_map(|l| l.strip_prefix("agentdir_search_index_applied_seq "))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(-1.0)
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let after = metrics_text(&s).await;
        if applied(&after) > applied(&text) {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "applied seq did not move:\n{after}");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn every_response_carries_security_headers_and_a_request_id() {
    let s = Server::start().await;
    let a = s.register("headers").await;
    let mcp = mcp_tools_list(&s);
    let answers: Vec<(&str, Resp)> = vec![
        ("stats", s.get("/api/stats", None).await),
        ("skill", s.get("/skill.md", None).await),
        ("openapi", s.get("/openapi.json", None).await),
        ("404", s.get("/api/nothing", None).await),
        ("401", s.get("/api/me", Some("cq_bad")).await),
        ("me", s.get("/api/me", Some(&a.key)).await),
        ("mcp", s.send(mcp).await),
        ("healthz", s.get("/healthz", None).await),
        ("metrics", s.get("/metrics", None).await),
        ("413", s.send(s.http.post(s.url("/api/agents")).body(vec![b' '; 70_000])).await),
    ];
    let mut ids = std::collections::HashSet::new();
    for (what, r) in &answers {
        assert_eq!(r.header("x-content-type-options"), Some("nosniff"), "{what}");
        assert_eq!(r.header("referrer-policy"), Some("no-referrer"), "{what}");
        let csp = r.header("content-security-policy").unwrap_or_else(|| panic!("no CSP on {what}"));
        assert!(
            csp.contains("default-src 'none'") && csp.contains("frame-ancestors 'none'"),
            "{what}: {csp}"
        );
        let id = r.header("x-request-id").unwrap_or_else(|| panic!("no X-Request-Id on {what}"));
        assert!(ids.insert(id.to_owned()), "request id {id} repeated");
    }
    assert_eq!(answers[5].1.header("cache-control"), Some("no-store"), "a keyed answer may be cached");

    let echoed = s.send(s.http.get(s.url("/api/stats")).header("x-request-id", "trace-42.a_b")).await;
    assert_eq!(echoed.header("x-request-id"), Some("trace-42.a_b"));
    let replaced = s.send(s.http.get(s.url("/api/stats")).header("x-request-id", "bad id; with=junk")).await;
    let new_id = replaced.header("x-request-id").expect("an id");
    assert!(!new_id.contains(' ') && !new_id.is_empty(), "{new_id}");
}

#[tokio::test]
async fn oversized_bodies_get_the_413_envelope_on_every_route() {
    let s = Server::start().await;
    let a = s.register("big").await;
    let big = vec![b'x'; 64 * 1024 + 1];
    for (method, path, key) in [
        ("POST", "/api/agents", None),
        ("POST", "/api/me/verify", Some(a.key.as_str())),
        ("POST", "/api/me/rotate-key", Some(a.key.as_str())),
        ("POST", "/mcp", None),
        ("PUT", "/no/such/route", None),
        ("GET", "/api/stats", None),
    ] {
        let mut req = s
            .http
            .request(method.parse().expect("method"), s.url(path))
            .header("content-type", "application/json")
            .body(big.clone());
        if let Some(k) = key {
            req = req.bearer_auth(k);
        }
        let r = s.send(req).await;
        assert_eq!(r.status, 413, "{method} {path}: {}", r.text);
        expect_refusal(&r, path, 413, "payload_too_large");
    }
    // The key was not rotated by the refused request.
    s.get("/api/me", Some(&a.key)).await.expect(200);

    // Exactly 64 KiB is allowed through to validation.
    let head = "{\"handle\": \"";
    let pad = "x".repeat(64 * 1024 - head.len() - 2);
    let exact = format!("{head}{pad}\"}}");
    assert_eq!(exact.len(), 64 * 1024);
    let r = s
        .send(s.http.post(s.url("/api/agents")).header("content-type", "application/json").body(exact))
        .await;
    assert_eq!(r.status, 400, "{}", r.text);

    // A chunked body declares no length; it is cut off when it passes the limit.
    let mut stream = raw_connection(&s);
    let mut request = format!(
        "POST /api/me/verify HTTP/1.1\r\nhost: {}\r\nauthorization: Bearer {}\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n",
        s.addr(),
        a.key
    )
    .into_bytes();
    for _ in 0..20 {
        request.extend_from_slice(format!("{:x}\r\n", 4096).as_bytes());
        request.extend_from_slice(&[b'y'; 4096]);
        request.extend_from_slice(b"\r\n");
    }
    request.extend_from_slice(b"0\r\n\r\n");
    // The server may answer and close before all of it is written.
    let _ = stream.write_all(&request);
    let answer = read_all(&mut stream);
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert_eq!(raw_json(&answer)["error"]["code"], "payload_too_large", "{answer}");
}

/// No route undoes a body's coding: a coded body (or a plain one labelled coded) is 415, on
/// REST and MCP alike, rather than read as broken JSON or taken for what it is not.
#[tokio::test]
async fn coded_bodies_are_refused_on_every_route() {
    let s = Server::start().await;
    let body = r#"{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}"#;
    for path in ["/api/agents", "/mcp"] {
        for coding in ["gzip", "br"] {
            let req = s
                .http
                .post(s.url(path))
                .header("content-type", "application/json")
                .header("accept", "application/json, text/event-stream")
                .header("content-encoding", coding)
                .body(body);
            expect_refusal(&s.send(req).await, path, 415, "unsupported_media_type");
        }
    }
    // Identity is no coding.
    let plain = s
        .http
        .post(s.url("/api/agents"))
        .header("content-type", "application/json")
        .header("content-encoding", "identity")
        .body("{}");
    s.send(plain).await.expect_error(400, "validation_failed");
}

#[tokio::test]
async fn oversized_heads_are_refused_with_an_envelope() {
    let s = Server::start().await;
    // A q of 2,000 Chinese characters is 18,000 bytes once percent-encoded: over the 16 KiB rule.
    let long_need = "帮我翻译合同".repeat(334);
    let r = s.send(s.http.get(s.url("/api/agents")).query(&[("q", long_need.as_str())])).await;
    r.expect_error(431, "headers_too_large");
    assert!(r.json["error"]["message_en"].as_str().unwrap().contains("16 KiB"), "{}", r.text);
    // One of 1,500 is within it.
    let within = "帮我翻译合同".repeat(250);
    s.send(s.http.get(s.url("/api/agents")).query(&[("q", within.as_str())])).await.expect(200);

    let r = s.send(s.http.get(s.url("/api/stats")).header("x-filler", "a".repeat(20_000))).await;
    r.expect_error(431, "headers_too_large");
    let mut many = s.http.get(s.url("/api/stats"));
    for i in 0..80 {
        many = many.header(format!("x-h{i}"), "1");
    }
    s.send(many).await.expect_error(431, "headers_too_large");

    // Past what the parser buffers (64 KiB), the parser answers on its own and closes.
    let mut stream = raw_connection(&s);
    let request = format!(
        "GET /api/stats HTTP/1.1\r\nhost: {}\r\nx-filler: {}\r\nconnection: close\r\n\r\n",
        s.addr(),
        "a".repeat(70_000)
    );
    let _ = stream.write_all(request.as_bytes());
    let answer = read_all(&mut stream);
    assert!(answer.starts_with("HTTP/1.1 431"), "{answer}");
    s.get("/api/stats", None).await.expect(200);
}

#[tokio::test]
async fn a_slow_body_is_stopped_by_the_request_timeout() {
    let s = Server::start_with(&env_with(&[("AGENTDIR_REQUEST_TIMEOUT", "1")])).await;
    let mut stream = raw_connection(&s);
    let head = format!(
        "POST /api/agents HTTP/1.1\r\nhost: {}\r\ncontent-type: application/json\r\ncontent-length: 200\r\n\r\n{{\"handle\"",
        s.addr()
    );
    stream.write_all(head.as_bytes()).expect("write");
    let answer = read_all(&mut stream);
    assert!(answer.starts_with("HTTP/1.1 504"), "{answer}");
    let body = raw_json(&answer);
    assert_eq!(body["error"]["code"], "timeout", "{answer}");
    assert!(!body["error"]["message_zh"].as_str().unwrap_or("").is_empty(), "{answer}");
    assert!(metrics_text(&s).await.contains("agentdir_http_request_timeouts_total 1"));
}

#[tokio::test]
async fn slow_or_idle_connections_are_closed_by_the_header_timeout() {
    let s = Server::start_with(&env_with(&[("AGENTDIR_HEADER_TIMEOUT", "1")])).await;
    // Headers that never end.
    let mut slow = raw_connection(&s);
    slow.write_all(format!("GET /api/stats HTTP/1.1\r\nhost: {}\r\nx-slow: ", s.addr()).as_bytes())
        .expect("write");
    let answer = read_all(&mut slow);
    assert!(!answer.contains("200 OK"), "{answer}");

    // A keep-alive connection left idle after its answer.
    let mut idle = raw_connection(&s);
    idle.write_all(format!("GET /healthz HTTP/1.1\r\nhost: {}\r\n\r\n", s.addr()).as_bytes()).expect("write");
    let answer = read_all(&mut idle);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    s.get("/api/stats", None).await.expect(200);
}

/// A server answering one request at once (the others wait up to `queue_wait` seconds), whose
/// one slot a link proof holds for `hold` while its page is slow to answer; and that request.
async fn one_slot_taken(
    queue_wait: &'static str,
    hold: Duration,
) -> (Server, tokio::task::JoinHandle<reqwest::Result<reqwest::Response>>) {
    let s = Server::start_with(&env_with(&[
        ("AGENTDIR_MAX_IN_FLIGHT", "1"),
        ("AGENTDIR_QUEUE_WAIT", queue_wait),
        ("AGENTDIR_LINK_FETCH_ALLOW_PRIVATE", "1"),
    ]))
    .await;
    let a = s.register("busy").await;
    s.get("/api/me", Some(&a.key)).await.expect(200);
    let (url, arrived) = slow_page(hold, format!("agentdir-proof:{}", a.handle), 1);
    let slow = {
        let req = s.http.post(s.url("/api/me/links")).bearer_auth(&a.key).json(&json!({"url": url}));
        tokio::spawn(req.send())
    };
    tokio::task::spawn_blocking(move || arrived.recv_timeout(Duration::from_secs(10)))
        .await
        .expect("join")
        .expect("the link proof never reached the page");
    (s, slow)
}

#[tokio::test]
async fn overload_is_shed_with_503_and_retry_after_while_probes_answer() {
    let (s, slow) = one_slot_taken("0.3", Duration::from_secs(3)).await;

    let r = s.get("/api/stats", None).await;
    r.expect_error(503, "overloaded");
    let retry: u64 = r.header("retry-after").expect("Retry-After").parse().expect("seconds");
    assert!(retry >= 1);
    let mcp = mcp_tools_list(&s);
    expect_refusal(&s.send(mcp).await, "/mcp", 503, "overloaded");
    s.get("/healthz", None).await.expect(200);
    s.get("/readyz", None).await.expect(200);
    assert!(metrics_text(&s).await.contains("agentdir_http_requests_shed_total 2"));

    let done = slow.await.expect("join").expect("the slow request failed");
    assert_eq!(done.status().as_u16(), 200);
    s.get("/api/stats", None).await.expect(200);
}

#[tokio::test]
async fn requests_past_the_in_flight_limit_wait_their_turn() {
    let (s, slow) = one_slot_taken("20", Duration::from_secs(2)).await;
    // The only slot is taken: these wait for it instead of failing, and all get their answer.
    let started = Instant::now();
    let mut waiting = tokio::task::JoinSet::new();
    for _ in 0..8 {
        let req = s.http.get(s.url("/api/stats"));
        waiting.spawn(async move { req.send().await.map(|r| r.status().as_u16()) });
    }
    let statuses: Vec<u16> = waiting.join_all().await.into_iter().map(|r| r.expect("answer")).collect();
    assert_eq!(statuses, vec![200; 8]);
    assert!(started.elapsed() >= Duration::from_millis(500), "they did not wait for the slow request");
    assert_eq!(slow.await.expect("join").expect("the slow request failed").status().as_u16(), 200);
    let metrics = metrics_text(&s).await;
    let shed = metrics.lines().find(|l| l.starts_with("agentdir_http_requests_shed_total "));
    assert!(shed.is_none_or(|l| l.ends_with(" 0")), "{shed:?}");
}

#[tokio::test]
async fn sigterm_finishes_in_flight_requests_then_exits() {
    let mut s = Server::start_with(&env_with(&[("AGENTDIR_LINK_FETCH_ALLOW_PRIVATE", "1")])).await;
    let a = s.register("drain").await;
    let (url, arrived) = slow_page(Duration::from_secs(3), format!("agentdir-proof:{}", a.handle), 1);
    let slow = {
        let req = s.http.post(s.url("/api/me/links")).bearer_auth(&a.key).json(&json!({"url": url.clone()}));
        tokio::spawn(req.send())
    };
    tokio::task::spawn_blocking(move || arrived.recv_timeout(Duration::from_secs(10)))
        .await
        .expect("join")
        .expect("the link proof never reached the page");
    s.terminate();

    // New connections are refused while the slow request is still being answered.
    let addr = s.addr();
    let refused = tokio::task::spawn_blocking(move || {
        let deadline = Instant::now() + Duration::from_secs(2);
        while Instant::now() < deadline {
            if TcpStream::connect(&addr).is_err() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    })
    .await
    .expect("join");
    assert!(refused, "the listener still accepts after SIGTERM");
    assert!(!slow.is_finished(), "the slow request ended before the test could observe the drain");

    let done = slow.await.expect("join").expect("the in-flight request was cut off");
    assert_eq!(done.status().as_u16(), 200);
    let body: Value = done.json().await.expect("json");
    assert_eq!(body["links"][0]["url"], url, "{body}");
    let status =
        tokio::task::spawn_blocking(move || s.wait_exit(Duration::from_secs(15)).map(|st| st.success()))
            .await
            .expect("join");
    assert_eq!(status, Some(true), "the server did not exit cleanly after draining");
}

#[tokio::test]
async fn backup_under_writes_restores_into_a_working_server() {
    let s = Server::start().await;
    let author = s.register("backup").await;
    let word = format!("zq{}", std::process::id());
    let first = s
        .post(
            "/api/posts",
            Some(&author.key),
            json!({"kind": "seeking", "title": format!("Backup probe {word}"), "body": "Present in every backup."}),
        )
        .await;
    first.expect(201);
    let first_id = first.json["id"].as_str().expect("id").to_owned();

    // Keep writing before, while and after the backup runs: the writer never pauses, so the
    // backup overlaps its writes.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (acks, acked) = tokio::sync::watch::channel(0u64);
    let writer = {
        let (http, url, key, stop) = (s.http.clone(), s.url("/api/posts"), author.key.clone(), stop.clone());
        tokio::spawn(async move {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let n = *acks.borrow();
                let body = json!({"kind": "offering", "title": format!("Filler {n}"), "body": "Written during the backup."});
                let r = http.post(&url).bearer_auth(&key).json(&body).send().await.expect("write");
                assert_eq!(r.status().as_u16(), 201, "a write failed while the backup ran");
                acks.send_modify(|n| *n += 1);
            }
        })
    };
    let acked_at_least = |n: u64, what: &'static str| {
        let mut acked = acked.clone();
        async move {
            let reached = tokio::time::timeout(Duration::from_secs(30), acked.wait_for(|&a| a >= n)).await;
            assert!(matches!(reached, Ok(Ok(_))), "{what}");
        }
    };
    acked_at_least(20, "the writes did not start").await;
    let before = s.get("/api/stats", None).await.json["posts"].as_u64().expect("posts");
    let held_cursor =
        s.get("/api/changes?limit=1", None).await.json["next"].as_str().expect("next").to_owned();
    let backup_dir = tempfile::tempdir().expect("temp");
    let dest = backup_dir.path().join("agentdir.sqlite3");
    let out = {
        let (bin, data, dest) = (common::BIN, s.data_dir.clone(), dest.clone());
        tokio::task::spawn_blocking(move || {
            std::process::Command::new(bin)
                .args(["admin", "--data-dir"])
                .arg(data)
                .args(["--actor", "test-suite", "backup"])
                .arg(dest)
                .output()
                .expect("run agentdir admin backup")
        })
        .await
        .expect("join")
    };
    assert!(out.status.success(), "backup failed: {}", String::from_utf8_lossy(&out.stderr));
    // Not on a terminal: plain progress lines, from the start to the whole copy.
    let progress = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_progress_lines(&progress, "agentdir backup: ");
    let at_end = s.get("/api/stats", None).await.json["posts"].as_u64().expect("posts");
    // Writes acknowledged after the backup ended are not in it: it is a copy of one moment.
    let acked_at_end = *acked.borrow();
    acked_at_least(acked_at_end + 20, "the writes stopped after the backup").await;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    writer.await.expect("writer");
    let after = s.get("/api/stats", None).await.json["posts"].as_u64().expect("posts");

    let mut names: Vec<String> = std::fs::read_dir(backup_dir.path())
        .expect("list")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        vec!["agentdir.sqlite3".to_owned(), "agentdir.sqlite3.signing-keys.json".to_owned()],
        "the backup is not one self-contained database file and the signing keys"
    );

    // Restored as the runbook says: the keys go back into the data dir as signing-keys.json.
    std::fs::rename(
        backup_dir.path().join("agentdir.sqlite3.signing-keys.json"),
        backup_dir.path().join("signing-keys.json"),
    )
    .expect("restore the signing keys");
    let jwks = s.get("/.well-known/jwks.json", None).await.json;
    // The same backup, restored a second time elsewhere (kept before the first restore runs).
    let again_dir = tempfile::tempdir().expect("temp");
    for name in ["agentdir.sqlite3", "signing-keys.json"] {
        std::fs::copy(backup_dir.path().join(name), again_dir.path().join(name)).expect("copy the backup");
    }
    // By words, so the probe's word finds the probe alone: by meaning, a filler whose number the
    // word contains ("Filler 16" for `zq16163`) can be near it once its vector is read.
    let restored =
        Server::start_in(backup_dir.path(), &[RELAXED_LIMITS, &[("AGENTDIR_SEARCH_MODE", "words")]].concat())
            .await;
    assert_eq!(
        restored.get("/.well-known/jwks.json", None).await.json,
        jwks,
        "the restored directory signs with its keys"
    );
    restored.get(&format!("/api/agents/{}", author.handle), None).await.expect(200);
    restored.get(&format!("/api/posts/{first_id}"), None).await.expect(200);
    let found = restored.get(&format!("/api/posts?q={word}"), None).await;
    found.expect(200);
    assert_eq!(found.json["total"], 1, "{}", found.text);
    let posts = restored.get("/api/stats", None).await.json["posts"].as_u64().expect("posts");
    assert!(posts >= before, "the backup holds {posts} calls, {before} were acknowledged before it began");
    assert!(posts <= at_end, "the backup holds {posts} calls, {at_end} were acknowledged when it ended");
    assert!(posts < after, "the backup holds {posts} calls: writes made after it ended ({after}) leaked in");
    assert_eq!(restored.get("/api/posts?limit=1", None).await.json["total"].as_u64(), Some(posts));
    // The key still works against the restored directory.
    restored.get("/api/me", Some(&author.key)).await.expect(200);
    // Its change feed is another: a reader's cursor of the original is told to read again, for
    // the restored directory lacks what was written after the copy and writes under its seqs.
    restored
        .get(&format!("/api/changes?after={held_cursor}"), None)
        .await
        .expect_error(410, "cursor_expired");
    // Restored twice, the copies are two feeds: what one wrote is not taken for the other's.
    restored
        .post(
            "/api/agents",
            None,
            json!({"handle": common::unique_handle("after-restore"), "name": "N",
        "owner": "O", "mailbox": "n@example.org", "accept_rules": true, "description_en": "Written after."}),
        )
        .await
        .expect(201);
    let restored_cursor =
        restored.get("/api/changes?limit=1000", None).await.json["next"].as_str().expect("next").to_owned();
    let again =
        Server::start_in(again_dir.path(), &[RELAXED_LIMITS, &[("AGENTDIR_SEARCH_MODE", "words")]].concat())
            .await;
    again
        .get(&format!("/api/changes?after={restored_cursor}"), None)
        .await
        .expect_error(410, "cursor_expired");
    // A restart over its own data dir keeps its feed.
    let mut restored = restored;
    restored.restart();
    restored.get(&format!("/api/changes?after={restored_cursor}"), None).await.expect(200);
}

#[tokio::test]
async fn logs_never_hold_an_api_key_or_a_mailbox() {
    for format in ["text", "json"] {
        let mut env = env_with(&[("RUST_LOG", "trace")]);
        if format == "json" {
            env.push(("AGENTDIR_LOG_FORMAT", "json"));
        }
        let (mut s, log) = Server::start_logged(&env).await;
        let a = s.register("logs").await;
        let probe = format!("log-probe-{format}");
        s.send(s.http.get(s.url("/api/me")).bearer_auth(&a.key).header("x-request-id", &probe))
            .await
            .expect(200);
        let new_mailbox = format!("moved-{}@example.net", a.handle);
        s.patch("/api/me", Some(&a.key), json!({"mailbox": new_mailbox})).await.expect(200);
        s.post_empty("/api/me/verify", Some(&a.key)).await.expect(200);
        let rotated = s.post_empty("/api/me/rotate-key", Some(&a.key)).await;
        rotated.expect(200);
        let new_key = rotated.json["api_key"].as_str().expect("new key").to_owned();
        s.get("/api/me", Some(&new_key)).await.expect(200);
        s.get("/api/me", Some(&a.key)).await.expect_error(401, "unauthorized");
        s.stop();

        let text = std::fs::read_to_string(&log).expect("read the server log");
        assert!(text.contains(&probe), "the {format} log lacks the request id; is anything logged?\n{text}");
        assert!(text.contains("/api/me"), "the {format} log lacks request paths");
        assert!(!text.contains('\x1b'), "the {format} log written to a file holds terminal escape codes");
        let secret = |k: &str| k.rsplit('_').next().unwrap_or_default().to_owned();
        for (what, needle) in [
            ("the key", a.key.clone()),
            ("the key's secret", secret(&a.key)),
            ("the rotated key's secret", secret(&new_key)),
            ("the registered mailbox", a.mailbox.clone()),
            ("the new mailbox", new_mailbox.clone()),
        ] {
            assert!(!text.contains(&needle), "{what} is in the {format} log");
        }
    }
}

/// A write that waits out SQLite's busy timeout behind another writer is load, not a fault:
/// 503 with Retry-After and the envelope, and nothing written.
#[tokio::test]
async fn a_write_stuck_behind_the_database_lock_is_overloaded_not_an_error() {
    let s = Server::start().await;
    let a = s.register("busy").await;
    let db = rusqlite::Connection::open(s.data_dir.join("agentdir.sqlite3")).unwrap();
    db.execute_batch("BEGIN IMMEDIATE").unwrap();
    let r = s
        .post("/api/posts", Some(&a.key), serde_json::json!({"kind": "announce", "title": "t", "body": "b"}))
        .await;
    db.execute_batch("ROLLBACK").unwrap();
    r.expect_error(503, "overloaded");
    assert!(r.header("retry-after").is_some());
    assert_eq!(s.get("/api/posts", None).await.json["total"], 0);
    // Once the lock is gone, the same write goes through.
    let again = s
        .post("/api/posts", Some(&a.key), serde_json::json!({"kind": "announce", "title": "t", "body": "b"}))
        .await;
    again.expect(201);
}

/// The server's refusal of a request: the REST envelope, or on `/mcp` JSON-RPC's error with the
/// envelope as `data` (as the MCP endpoint tells its own refusals).
#[track_caller]
fn expect_refusal(r: &Resp, path: &str, status: u16, code: &str) {
    if path != "/mcp" {
        r.expect_error(status, code);
        return;
    }
    assert_eq!(r.status, status, "{path}: {}", r.text);
    assert_eq!(r.json["jsonrpc"], "2.0", "{}", r.text);
    assert_eq!(r.json["id"], Value::Null, "{}", r.text);
    assert_eq!(r.json["error"]["data"]["error"]["code"], code, "{}", r.text);
    let expected = if status >= 500 { -32603 } else { -32600 };
    assert_eq!(r.json["error"]["code"], expected, "{}", r.text);
}

/// A stateless MCP `tools/list` over plain HTTP, as a client that needs no handshake sends it.
fn mcp_tools_list(s: &Server) -> reqwest::RequestBuilder {
    s.http
        .post(s.url("/mcp"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}).to_string())
}

#[tokio::test]
async fn metrics_can_be_served_on_a_listener_of_their_own() {
    // A free port for the metrics listener (the server prints only its main address).
    let port = TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port();
    let bind = format!("127.0.0.1:{port}");
    let mut env = env_with(&[]);
    env.push(("AGENTDIR_METRICS_BIND", &bind));
    let s = Server::start_with(&env).await;
    s.get("/api/stats", None).await.expect(200);
    s.get("/metrics", None).await.expect_error(404, "not_found");
    s.get("/readyz", None).await.expect(200);
    let own = s.http.get(format!("http://{bind}/metrics")).send().await.expect("scrape the metrics listener");
    assert_eq!(own.status(), 200);
    let text = own.text().await.expect("metrics text");
    assert!(text.contains("agentdir_http_requests_total{route=\"/api/stats\""), "{text}");
    // The metrics listener serves nothing else.
    let other = s.send(s.http.get(format!("http://{bind}/api/stats"))).await;
    other.expect_error(404, "not_found");
}

#[tokio::test]
async fn admin_reindex_reports_its_progress_in_plain_lines() {
    let mut s = Server::start().await;
    let a = s.register("reindex").await;
    for i in 0..3 {
        s.seeking(&a, &format!("Reindex probe {i}")).await;
    }
    // With the server stopped, the command rebuilds the index itself.
    s.stop();
    let out = s.admin(&["reindex"]);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    assert_progress_lines(&stderr, "agentdir reindex: ");
    assert!(stderr.contains(" 4 of 4 documents (100%)"), "one agent and three calls: {stderr}");
    s.restart();
    assert_eq!(s.get("/api/posts?q=probe", None).await.json["total"], 3);
}

/// The database, its `-wal` and `-shm` and `admin backup` copies hold mailboxes and key hashes:
/// mode 0660 with the data dir's group (the mail pipe's user is in it), whatever the umask (this
/// test runs with the usual 022, under which SQLite alone makes them 0644). Files an older
/// version left readable by all are tightened at start, and the server says so.
#[tokio::test]
async fn database_files_and_backups_are_private_to_the_data_dirs_group() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let temp = tempfile::tempdir().expect("temp dir");
    let data = temp.path().join("data");
    std::fs::create_dir(&data).unwrap();
    // As root, the data dir gets a group of its own that the files must take; otherwise the
    // process's group is the data dir's too and only the modes are checked.
    let _ = std::os::unix::fs::chown(&data, None, Some(4242));
    let group = std::fs::metadata(&data).unwrap().gid();
    let files = ["agentdir.sqlite3", "agentdir.sqlite3-wal", "agentdir.sqlite3-shm"].map(|f| data.join(f));
    let mode_and_group = |path: &std::path::Path| {
        let meta = std::fs::metadata(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        (meta.permissions().mode() & 0o7777, meta.gid())
    };

    let mut s = Server::start_in(&data, RELAXED_LIMITS).await;
    s.register("private").await;
    for file in &files {
        assert_eq!(mode_and_group(file), (0o660, group), "{}", file.display());
    }
    let backups = tempfile::tempdir().expect("temp dir");
    let copy = backups.path().join("copy.sqlite3");
    s.admin_ok(&["backup", copy.to_str().unwrap()]);
    assert_eq!(mode_and_group(&copy), (0o660, group), "the backup copy");

    // Files left readable by all (and of another group), the -wal and -shm of a killed server
    // included: the next start tightens them and logs each change.
    s.kill();
    for file in &files {
        std::fs::set_permissions(file, std::fs::Permissions::from_mode(0o644)).unwrap();
        let _ = std::os::unix::fs::chown(file, None, Some(0));
    }
    let log = temp.path().join("server.log");
    s.restart_logged(&log);
    s.get("/api/stats", None).await.expect(200);
    let logged = std::fs::read_to_string(&log).unwrap();
    for file in &files {
        assert_eq!(mode_and_group(file), (0o660, group), "{}", file.display());
        let name = file.to_str().unwrap();
        assert!(
            logged.lines().any(|l| l.contains("database file permissions changed") && l.contains(name)),
            "no log of {name}'s change: {logged}"
        );
    }
}

/// Progress written to a pipe: plain lines (no terminal codes) for `task`, from 0 % to 100 %,
/// counting up.
#[track_caller]
fn assert_progress_lines(stderr: &str, task: &str) {
    assert!(!stderr.contains('\x1b'), "terminal codes in the progress written to a pipe: {stderr:?}");
    let percents: Vec<u32> = stderr
        .lines()
        .filter(|line| line.starts_with(task))
        .map(|line| {
            let (_, rest) = line.rsplit_once(" (").unwrap_or_else(|| panic!("no percentage in {line:?}"));
            rest.split('%').next().and_then(|p| p.parse().ok()).unwrap_or_else(|| panic!("{line:?}"))
        })
        .collect();
    assert!(percents.first() == Some(&0) && percents.last() == Some(&100), "{task}progress: {stderr}");
    assert!(percents.windows(2).all(|w| w[0] < w[1]), "{task}progress goes backwards: {stderr}");
}

/// `admin` and `inbound-mail` work beside a server's data dir: pointed at one without a
/// database (a misspelt path), they say so and create nothing. `backup` does not copy an empty
/// new database, and the mail server keeps a message to try again (75) rather than bouncing it.
#[test]
fn commands_beside_the_server_need_its_database() {
    let dir = tempfile::tempdir().expect("temp dir");
    let missing = dir.path().join("no-such-data-dir");
    for args in [vec!["audit"], vec!["backup", dir.path().join("copy.sqlite3").to_str().expect("utf-8")]] {
        let out = std::process::Command::new(common::BIN)
            .args(["admin", "--data-dir"])
            .arg(&missing)
            .args(&args)
            .output()
            .expect("run agentdir admin");
        assert!(!out.status.success(), "{args:?}");
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(said.contains("no database at") && said.contains("--data-dir"), "{args:?}: {said}");
    }
    let mut mail = std::process::Command::new(common::BIN)
        .args(["inbound-mail", "--data-dir"])
        .arg(&missing)
        .env("AGENTDIR_MAIL_AUTHSERV_ID", "mx.test")
        .stdin(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run agentdir inbound-mail");
    mail.stdin
        .take()
        .expect("stdin")
        .write_all(b"Authentication-Results: mx.test; dkim=pass header.d=example.org\r\nFrom: a@example.org\r\nSubject: agentdir verify aaaaaaaaaaaaaaaaaaaaaaaa\r\n\r\n")
        .expect("write the message");
    let out = mail.wait_with_output().expect("wait");
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(75), "{said}");
    assert!(said.contains("no database at"), "{said}");
    assert!(!missing.exists(), "nothing was created");
    assert!(!dir.path().join("copy.sqlite3").exists(), "no empty backup");
}

/// `backup` onto the live database itself is refused: the copy would be renamed over the file
/// the server has open.
#[tokio::test]
async fn a_backup_onto_the_live_database_is_refused() {
    let s = Server::start().await;
    let a = s.register("live-file").await;
    let live = s.data_dir.join("agentdir.sqlite3");
    let also_live = s.data_dir.join(".").join("agentdir.sqlite3");
    for dest in [&live, &also_live] {
        let out = s.admin(&["backup", dest.to_str().expect("utf-8")]);
        assert!(!out.status.success(), "{}", dest.display());
        assert!(String::from_utf8_lossy(&out.stderr).contains("is the live database"));
    }
    s.get(&format!("/api/agents/{}", a.handle), None).await.expect(200);
}

/// Settings that name the site (its base URL, the mail domain and authserv-id, the reserved
/// handles) are checked before anything starts: a bad one is a clear error, never a server
/// that publishes `verify@bad domain` or a skill.md with a query string in every link.
#[test]
fn settings_that_name_the_site_are_checked_at_start() {
    for (name, value, said) in [
        ("AGENTDIR_BASE_URL", "notaurl", "is not a base URL"),
        ("AGENTDIR_BASE_URL", "ftp://agents.example.org", "is not a base URL"),
        ("AGENTDIR_BASE_URL", "https://agents.example.org/sub/?q=1#f", "no user, query or fragment"),
        ("AGENTDIR_MAIL_DOMAIN", "bad domain", "is not a domain name"),
        ("AGENTDIR_MAIL_DOMAIN", "", "is not a domain name"),
        ("AGENTDIR_MAIL_AUTHSERV_ID", "a;b", "is not an authserv-id"),
        ("AGENTDIR_RESERVED_HANDLES", "ok-one,Bad Handle!", "is not a handle"),
    ] {
        let dir = tempfile::tempdir().expect("temp");
        let out = std::process::Command::new(common::BIN)
            .args(["serve", "--bind", "127.0.0.1:0", "--data-dir"])
            .arg(dir.path())
            .env(name, value)
            .output()
            .expect("run agentdir serve");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{name}={value}: {stderr}");
        assert!(stderr.contains(said), "{name}={value}: {stderr}");
        assert!(!stderr.contains("listening"), "{name}={value}: {stderr}");
    }
}
