//! What a replica forwards, and where to: only routes that write or need a key, only to its
//! primary (whatever the request line holds), and a client's position only when the primary
//! issued it. A replica here reads a static copy of the primary's file (made with
//! `agentdir admin backup`): nothing here needs Litestream to move the copy on, and a copy that
//! never moves makes every "would the replica have waited or forwarded?" visible.

mod common;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use common::{RELAXED_LIMITS, Server};
use serde_json::json;

/// A listener on loopback that counts every connection it gets and answers each like a server
/// that would love to be trusted: a huge position and a body.
struct Recorder {
    port: u16,
    seen: Arc<AtomicUsize>,
}

impl Recorder {
    fn start() -> Recorder {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the recorder");
        let port = listener.local_addr().expect("addr").port();
        let seen = Arc::new(AtomicUsize::new(0));
        let counter = seen.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                counter.fetch_add(1, Ordering::SeqCst);
                let _ = stream.set_read_timeout(Some(Duration::from_millis(200)));
                let _ = stream.read(&mut [0u8; 4096]);
                let _ = stream.write_all(
                    b"HTTP/1.1 200 OK\r\nX-Agentdir-Seq: 18446744073709551615\r\nContent-Length: 6\r\nConnection: close\r\n\r\nsecret",
                );
            }
        });
        Recorder { port, seen }
    }

    fn seen(&self) -> usize {
        self.seen.load(Ordering::SeqCst)
    }
}

/// A replica over a copy of `primary`'s file as it is now.
async fn replica_of(primary: &Server, dir: &Path, extra: &[(&str, &str)]) -> Server {
    std::fs::create_dir_all(dir).expect("replica dir");
    let copy = dir.join("agentdir.sqlite3");
    primary.admin_ok(&["backup", copy.to_str().expect("utf-8 path")]);
    // Beside it, the position file Litestream writes once a restore is done: a replica opens
    // its copy only then.
    std::fs::write(dir.join("agentdir.sqlite3-txid"), "0000000000000001").expect("position file");
    let mut env: Vec<(&str, &str)> = RELAXED_LIMITS.to_vec();
    env.push(("AGENTDIR_ROLE", "replica"));
    env.push(("AGENTDIR_PRIMARY_URL", &primary.base));
    env.extend_from_slice(extra);
    Server::start_in(dir, &env).await
}

/// Sends `request` (a raw HTTP/1.1 request head, and body) to `addr` and returns the answer's
/// status line and whole text.
async fn raw(addr: &str, request: String) -> String {
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    tokio::io::AsyncWriteExt::write_all(&mut stream, request.as_bytes()).await.expect("send");
    let mut answer = Vec::new();
    let read = tokio::io::AsyncReadExt::read_to_end(&mut stream, &mut answer);
    let _ = tokio::time::timeout(Duration::from_secs(20), read).await;
    String::from_utf8_lossy(&answer).into_owned()
}

fn status_of(answer: &str) -> u16 {
    answer.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0)
}

async fn metric(s: &Server, name: &str) -> f64 {
    let text = s.get("/metrics", None).await.text;
    text.lines()
        .filter(|l| l.starts_with(name))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

#[tokio::test]
async fn a_replica_sends_nothing_to_any_host_but_its_primary() {
    let recorder = Recorder::start();
    let primary = Server::start().await;
    let alice = primary.register("alice").await;
    let dir = tempfile::tempdir().expect("temp dir");
    // The recorder is also the proxy the replica's environment names: the primary is reached
    // directly all the same.
    let proxy = format!("http://127.0.0.1:{}", recorder.port);
    let extra = [
        ("AGENTDIR_REPLICA_WAIT", "1"),
        ("HTTP_PROXY", proxy.as_str()),
        ("HTTPS_PROXY", proxy.as_str()),
        ("ALL_PROXY", proxy.as_str()),
    ];
    let replica = replica_of(&primary, dir.path(), &extra).await;
    let addr = replica.addr();
    let target = format!("127.0.0.1:{}", recorder.port);
    let key = &alice.key;
    let body = r#"{"title":"x"}"#;
    for (method, path) in [
        ("POST", format!("//{target}/latest/meta-data")),
        ("POST", format!("//user:pw@{target}/")),
        ("POST", format!("///{target}/")),
        ("POST", format!("/\\{target}/")),
        ("GET", format!("//{target}/api/me")),
        ("POST", format!("http://{target}/api/posts")),
        ("GET", format!("http://{target}/api/me")),
        ("PATCH", format!("//{target}/api/me")),
    ] {
        let answer = raw(
            &addr,
            format!(
                "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {key}\r\nX-Agentdir-Seq: 99999999999\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            ),
        )
        .await;
        let status = status_of(&answer);
        assert!((200..500).contains(&status), "{method} {path}: {answer}");
        assert!(!answer.contains("secret"), "{method} {path} reached the recorder: {answer}");
    }
    // An absolute-form request line names a real route: it went to the primary, by its path.
    let absolute = raw(
        &addr,
        format!("GET http://{target}/api/me HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {key}\r\nConnection: close\r\n\r\n"),
    )
    .await;
    assert_eq!(status_of(&absolute), 200, "{absolute}");
    assert!(absolute.to_ascii_lowercase().contains("x-agentdir-served-by: primary"), "{absolute}");
    assert!(absolute.contains(&alice.handle));
    // A path a URL would resolve (`/api/agents/../requests` is `/api/requests`) is not sent on:
    // the primary would answer another path than the client asked for.
    for path in ["/api/agents/%2e%2e/requests", "/api/agents/../requests", "/api/posts/.%2E/replies"] {
        let answer = raw(
            &addr,
            format!(
                "POST {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {key}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            ),
        )
        .await;
        assert_eq!(status_of(&answer), 404, "{path}: {answer}");
        assert!(!answer.to_ascii_lowercase().contains("x-agentdir-served-by: primary"), "{path}: {answer}");
    }
    assert_eq!(recorder.seen(), 0, "a request left for a host that is not the primary");
    // The replica still believes nothing but its primary: not stuck, not behind.
    let ready = replica.get("/readyz", None).await;
    ready.expect(200);
    assert_eq!(recorder.seen(), 0);
}

#[tokio::test]
async fn made_up_positions_are_absent_and_real_ones_are_honoured() {
    let primary = Server::start().await;
    let bob = primary.register("bob").await;
    let dir = tempfile::tempdir().expect("temp dir");
    // Two in-flight slots and a queue wait shorter than the position wait: a read that waited
    // for a position while holding a slot would push the plain read below into 503.
    let replica = replica_of(
        &primary,
        dir.path(),
        &[("AGENTDIR_MAX_IN_FLIGHT", "2"), ("AGENTDIR_QUEUE_WAIT", "1"), ("AGENTDIR_REPLICA_WAIT", "3")],
    )
    .await;
    let card = format!("/api/agents/{}", bob.handle);
    let forwarded_before = metric(&replica, "agentdir_replica_forwarded_total").await;

    // 64 reads with a position the primary never issued: answered from the copy, none forwarded.
    let mut forged = tokio::task::JoinSet::new();
    for _ in 0..64 {
        let req = replica.http.get(replica.url(&card)).header("x-agentdir-seq", "99999999999");
        forged.spawn(async move {
            let r = req.send().await.expect("forged read");
            (r.status().as_u16(), r.headers().get("x-agentdir-served-by").is_some())
        });
    }
    let answers = forged.join_all().await;
    assert!(answers.iter().all(|(status, _)| *status == 200), "{answers:?}");
    assert!(answers.iter().all(|(_, by_primary)| !by_primary), "a forged position was forwarded");
    assert_eq!(metric(&replica, "agentdir_replica_forwarded_total").await, forwarded_before);
    assert!(metric(&replica, "agentdir_replica_unissued_positions_total").await >= 64.0);

    // A client writes straight to the primary (as through a load balancer) and reads from the
    // replica with the position it got: the copy never gets there, so after the wait the read
    // goes to the primary and shows the write.
    let r = primary.patch("/api/me", Some(&bob.key), json!({"tagline": "Fresh from the primary"})).await;
    r.expect(200);
    let position = r.header("x-agentdir-seq").expect("a write position").to_owned();
    let mut waiting = tokio::task::JoinSet::new();
    for _ in 0..6 {
        let req = replica.http.get(replica.url(&card)).header("x-agentdir-seq", &position);
        waiting.spawn(async move {
            let r = req.send().await.expect("read with a real position");
            let by_primary = r.headers().get("x-agentdir-served-by").is_some();
            (r.status().as_u16(), by_primary, r.text().await.unwrap_or_default())
        });
    }
    // While all six wait, a plain read takes a slot at once: the waiting hold none.
    let mut seen = 0.0;
    for _ in 0..400 {
        seen = metric(&replica, "agentdir_replica_reads_waiting").await;
        if seen >= 6.0 {
            break;
        }
        tokio::task::yield_now().await;
    }
    assert_eq!(seen, 6.0, "the six reads never waited together");
    replica.get(&card, None).await.expect(200);
    for (status, by_primary, body) in waiting.join_all().await {
        assert_eq!(status, 200, "{body}");
        assert!(by_primary, "a real position not reached must be answered by the primary");
        assert!(body.contains("Fresh from the primary"), "{body}");
    }
    // What no read route of the copy answers is answered here at once, position or not: a path
    // no route serves, a method a route does not take, the replica's own health.
    for (method, path, status) in [
        (reqwest::Method::GET, "/nothing-here", 404),
        (reqwest::Method::DELETE, "/api/stats", 405),
        (reqwest::Method::GET, "/readyz", 200),
    ] {
        let started = std::time::Instant::now();
        let r = replica
            .http
            .request(method.clone(), replica.url(path))
            .header("x-agentdir-seq", &position)
            .send()
            .await
            .expect("answer");
        assert_eq!(r.status().as_u16(), status, "{method} {path}");
        assert!(r.headers().get("x-agentdir-served-by").is_none(), "{method} {path} went to the primary");
        assert!(
            started.elapsed() < std::time::Duration::from_secs(2),
            "{method} {path} waited for the position"
        );
        if path == "/readyz" {
            let ready: serde_json::Value = r.json().await.expect("json");
            assert!(ready.get("replica").is_some(), "the replica's own readiness: {ready}");
        }
    }
}

#[tokio::test]
async fn keyed_routes_are_answered_by_the_primary_and_public_reads_by_the_replica() {
    let primary = Server::start().await;
    let carol = primary.register("carol").await;
    let dir = tempfile::tempdir().expect("temp dir");
    let replica = replica_of(&primary, dir.path(), &[("AGENTDIR_REPLICA_WAIT", "1")]).await;

    // The key is rotated through the replica; the copy never learns it. The old key is dead on
    // the replica all the same, and the new one works there.
    let rotated = replica.post_empty("/api/me/rotate-key", Some(&carol.key)).await;
    rotated.expect(200);
    let new_key = rotated.json["api_key"].as_str().expect("new key").to_owned();
    let old = replica.get("/api/me", Some(&carol.key)).await;
    old.expect_error(401, "unauthorized");
    assert_eq!(old.header("x-agentdir-served-by"), Some("primary"));
    let own = replica.get("/api/me/requests", Some(&new_key)).await;
    own.expect(200);
    assert_eq!(own.header("x-agentdir-served-by"), Some("primary"));

    // What only the primary holds (the signing keys) is answered by the primary.
    for path in ["/.well-known/jwks.json".to_owned(), format!("/api/agents/{}/statement", carol.handle)] {
        let r = replica.get(&path, None).await;
        r.expect(200);
        assert_eq!(r.header("x-agentdir-served-by"), Some("primary"), "{path}");
    }

    // MCP on the replica hands on the primary's statement too.
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "get_agent", "arguments": {"handle": carol.handle, "with_statement": true}}});
    let mcp = replica
        .send(
            replica
                .http
                .post(replica.url("/mcp"))
                .header("accept", "application/json, text/event-stream")
                .header("mcp-protocol-version", "2025-06-18")
                .json(&call),
        )
        .await;
    mcp.expect(200);
    let statement = &mcp.json["result"]["structuredContent"]["statement"];
    assert!(statement["signature"].is_string(), "{}", mcp.text);
    assert_eq!(mcp.json["result"]["isError"], false, "{}", mcp.text);

    // A public read stays on the replica whatever it carries.
    for auth in ["Bearer junk", &format!("Bearer {}", carol.key), &format!("Bearer {new_key}")] {
        let r = replica
            .send(
                replica
                    .http
                    .get(replica.url(&format!("/api/agents/{}", carol.handle)))
                    .header("authorization", auth),
            )
            .await;
        r.expect(200);
        assert_eq!(r.header("x-agentdir-served-by"), None, "{auth}");
    }
    // So does a path no route serves.
    let unknown = replica.post("/api/nothing-here", Some(&new_key), json!({})).await;
    unknown.expect_error(404, "not_found");
    assert_eq!(unknown.header("x-agentdir-served-by"), None);
}

/// A write the primary applied is answered with the primary's answer even when waiting for the
/// copy would outlast the request's time: `X-Agentdir-Caught-Up: false`, never the replica's own
/// 504, which would tell the client to send the write again.
#[tokio::test]
async fn a_forwarded_write_is_answered_within_the_request_time() {
    let primary = Server::start().await;
    let dave = primary.register("dave").await;
    let dir = tempfile::tempdir().expect("temp dir");
    // No Litestream: the copy never reaches the write. The wait for it is longer than the
    // request may take.
    let replica = replica_of(
        &primary,
        dir.path(),
        &[("AGENTDIR_REQUEST_TIMEOUT", "3"), ("AGENTDIR_REPLICA_WAIT", "10")],
    )
    .await;
    let started = std::time::Instant::now();
    let r = replica
        .post("/api/posts", Some(&dave.key), json!({"kind": "seeking", "title": "Once only", "body": "b"}))
        .await;
    r.expect(201);
    assert_eq!(r.header("x-agentdir-caught-up"), Some("false"), "{}", r.text);
    assert!(r.header("x-agentdir-seq").is_some());
    assert!(started.elapsed() < std::time::Duration::from_secs(3), "answered in {:?}", started.elapsed());
    let posts = primary.get(&format!("/api/posts?author={}", dave.handle), None).await;
    assert_eq!(posts.json["total"], 1, "{}", posts.text);
}

/// With its primary out of reach, a replica says so for what it would forward (not "busy"),
/// and goes on answering public reads from its copy.
#[tokio::test]
async fn a_replica_without_its_primary_says_so_and_still_reads() {
    let mut primary = Server::start().await;
    let dana = primary.register("dana").await;
    let dir = tempfile::tempdir().expect("temp dir");
    let replica = replica_of(&primary, dir.path(), &[]).await;
    primary.stop();

    let body = json!({"handle": common::unique_handle("late"), "name": "Late", "owner": "O",
        "mailbox": "late@example.org", "accept_rules": true, "description_en": "Too late."});
    let answers = [
        replica.post("/api/agents", None, body).await,
        replica.get("/api/me", Some(&dana.key)).await,
        replica.get(&format!("/api/agents/{}/statement", dana.handle), None).await,
    ];
    for r in &answers {
        r.expect_error(503, "primary_unavailable");
        assert_eq!(r.header("retry-after"), Some("5"), "{}", r.text);
    }
    replica.get(&format!("/api/agents/{}", dana.handle), None).await.expect(200);
}
