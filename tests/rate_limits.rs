//! Rate limits of a real server: each limit set by its environment variable, answered with
//! 429, `Retry-After` and the bilingual envelope; the client IP taken from `X-Forwarded-For`
//! only when the peer is a trusted proxy; the limits that guard against abuse over hours
//! (registration, calls, contact requests) kept across a restart.

mod common;

use common::{Agent, Resp, Server, assert_limited, limits, metric_value, unique_handle};
use serde_json::{Value, json};

fn registration(handle: &str) -> Value {
    json!({
        "handle": handle, "name": format!("Agent {handle}"), "owner": "Rate Test",
        "mailbox": format!("{handle}@example.org"), "accept_rules": true,
        "description_en": "An agent that tests rate limits.",
    })
}

/// Registers a fresh handle, the request carrying `X-Forwarded-For: xff` when given.
async fn register_from(s: &Server, xff: Option<&str>) -> (String, Resp) {
    let handle = unique_handle("rl");
    let mut req = s.http.post(s.url("/api/agents")).json(&registration(&handle));
    if let Some(xff) = xff {
        req = req.header("x-forwarded-for", xff);
    }
    (handle.clone(), s.send(req).await)
}

#[tokio::test]
async fn registration_limit_holds_per_ip_and_across_a_restart() {
    let mut s = Server::start_with(&limits(&[("AGENTDIR_RATE_LIMIT_REGISTRATION", "3/h")])).await;
    for _ in 0..3 {
        register_from(&s, None).await.1.expect(201);
    }
    let (refused, r) = register_from(&s, None).await;
    assert_limited(&r, 3600);
    assert_eq!(
        s.get(&format!("/api/agents/{refused}"), None).await.status,
        404,
        "a refused registration left an agent"
    );
    assert_eq!(metric_value(&s, "agentdir_rate_limited_total{limit=\"registration\"}").await, 1.0);

    s.restart();
    assert_limited(&register_from(&s, None).await.1, 3600);
    assert_eq!(s.get("/api/stats", None).await.json["agents"], 3);
}

#[tokio::test]
async fn spoofed_forwarded_for_from_an_untrusted_peer_is_ignored() {
    let s = Server::start_with(&limits(&[("AGENTDIR_RATE_LIMIT_REGISTRATION", "3/h")])).await;
    let author = s.register("rl-author").await;
    register_from(&s, Some("198.51.100.1")).await.1.expect(201);
    register_from(&s, Some("198.51.100.2")).await.1.expect(201);
    // Each request names another address, but the peer is not a trusted proxy: all of them
    // are 127.0.0.1's.
    assert_limited(&register_from(&s, Some("198.51.100.3")).await.1, 3600);
    assert_limited(&register_from(&s, None).await.1, 3600);

    // Reports record the address the limit counted.
    let call = post_call(&s, &author).await;
    let req =
        s.http.post(s.url(&format!("/api/posts/{call}/report"))).header("x-forwarded-for", "198.51.100.9");
    s.send(req.json(&json!({"reason": "spoof check"}))).await.expect(200);
    let reports = s.admin_ok(&["reports"]);
    assert!(reports.contains("\"reporter_ip\":\"127.0.0.1\""), "{reports}");
    assert!(!reports.contains("198.51.100.9"), "{reports}");
}

#[tokio::test]
async fn a_trusted_proxy_names_the_client_by_the_rightmost_untrusted_entry() {
    let s = Server::start_with(&limits(&[
        ("AGENTDIR_RATE_LIMIT_REGISTRATION", "2/h"),
        ("AGENTDIR_TRUSTED_PROXIES", "127.0.0.1, 10.0.0.0/8"),
    ]))
    .await;
    register_from(&s, Some("203.0.113.5")).await.1.expect(201);
    register_from(&s, Some("203.0.113.5")).await.1.expect(201);
    assert_limited(&register_from(&s, Some("203.0.113.5")).await.1, 3600);
    // The client wrote its own X-Forwarded-For; the proxy appended the address it saw. Only the
    // appended entry counts.
    assert_limited(&register_from(&s, Some("192.0.2.77, 203.0.113.5")).await.1, 3600);
    // Trusted hops on the right are skipped.
    assert_limited(&register_from(&s, Some("203.0.113.5, 10.1.2.3")).await.1, 3600);
    // Another client behind the same proxy has its own budget.
    register_from(&s, Some("192.0.2.77, 203.0.113.6")).await.1.expect(201);
    register_from(&s, Some("203.0.113.6, 10.1.2.3")).await.1.expect(201);
    assert_limited(&register_from(&s, Some("203.0.113.6")).await.1, 3600);
    // A request from the proxy itself with no header counts as the proxy's.
    register_from(&s, None).await.1.expect(201);
    let author = s.register("rl-author").await;
    assert_limited(&register_from(&s, None).await.1, 3600);

    let call = post_call(&s, &author).await;
    let req =
        s.http.post(s.url(&format!("/api/posts/{call}/report"))).header("x-forwarded-for", "192.0.2.200");
    s.send(req.json(&json!({"reason": "proxied"}))).await.expect(200);
    let reports = s.admin_ok(&["reports"]);
    assert!(reports.contains("\"reporter_ip\":\"192.0.2.200\""), "{reports}");
}

#[tokio::test]
async fn an_ipv6_client_is_counted_by_its_64() {
    let s = Server::start_with(&limits(&[
        ("AGENTDIR_RATE_LIMIT_REGISTRATION", "2/h"),
        ("AGENTDIR_TRUSTED_PROXIES", "127.0.0.1"),
    ]))
    .await;
    register_from(&s, Some("2001:db8:1:2::1")).await.1.expect(201);
    register_from(&s, Some("2001:db8:1:2::2")).await.1.expect(201);
    assert_limited(&register_from(&s, Some("2001:db8:1:2:ffff::9")).await.1, 3600);
    register_from(&s, Some("2001:db8:1:3::1")).await.1.expect(201);
}

async fn post_call(s: &Server, author: &Agent) -> String {
    let r = s
        .post(
            "/api/posts",
            Some(&author.key),
            json!({"kind": "seeking", "title": "Need a reviewer", "body": "Looking for a careful reviewer."}),
        )
        .await;
    r.expect(201);
    r.json["id"].as_str().expect("call id").to_owned()
}

#[tokio::test]
async fn calls_limit_holds_per_agent_and_across_a_restart() {
    let mut s = Server::start_with(&limits(&[("AGENTDIR_RATE_LIMIT_CALLS", "2/d")])).await;
    let a = s.register("rl-calls").await;
    let b = s.register("rl-calls").await;
    post_call(&s, &a).await;
    post_call(&s, &a).await;
    let body = json!({"kind": "seeking", "title": "One too many", "body": "This one is over the limit."});
    assert_limited(&s.post("/api/posts", Some(&a.key), body.clone()).await, 86_400);
    post_call(&s, &b).await;

    s.restart();
    assert_limited(&s.post("/api/posts", Some(&a.key), body).await, 86_400);
    post_call(&s, &b).await;
    assert_eq!(s.get("/api/posts", None).await.json["total"], 4);
}

#[tokio::test]
async fn contact_requests_limit_holds_per_sender_and_across_a_restart() {
    let mut s = Server::start_with(&limits(&[("AGENTDIR_RATE_LIMIT_REQUESTS", "2/d")])).await;
    let sender = s.verified("rl-sender").await;
    let mut recipients = Vec::new();
    for _ in 0..4 {
        let r = s.verified("rl-recipient").await;
        let offering = s.offering(&r).await;
        recipients.push((r, offering));
    }
    s.request(&sender, &recipients[0].0, &recipients[0].1).await;
    s.request(&sender, &recipients[1].0, &recipients[1].1).await;
    let ask = |offering: &str| json!({"offering_id": offering, "purpose": "Translate our README", "deliverable": "A Chinese README", "compensation": "none"});
    let path = format!("/api/agents/{}/requests", recipients[2].0.handle);
    assert_limited(&s.post(&path, Some(&sender.key), ask(&recipients[2].1)).await, 86_400);

    s.restart();
    assert_limited(&s.post(&path, Some(&sender.key), ask(&recipients[2].1)).await, 86_400);
    // Another sender is not affected.
    let other = s.verified("rl-sender").await;
    s.request(&other, &recipients[3].0, &recipients[3].1).await;
}

/// Each proposal is an event in the partner's inbox: a key cannot flood it.
#[tokio::test]
async fn collaboration_proposals_limit_holds_per_proposer() {
    let s = Server::start_with(&limits(&[("AGENTDIR_RATE_LIMIT_COLLABS", "2/d")])).await;
    let (proposer, partner, other) =
        (s.register("rl-proposer").await, s.register("rl-partner").await, s.register("rl-other").await);
    let propose = |summary: &str| json!({"partner": partner.handle, "summary": summary});
    s.post("/api/collabs", Some(&proposer.key), propose("We translated a README")).await.expect(201);
    s.post("/api/collabs", Some(&proposer.key), propose("We translated a manual")).await.expect(201);
    assert_limited(&s.post("/api/collabs", Some(&proposer.key), propose("And again")).await, 86_400);
    s.post("/api/collabs", Some(&other.key), propose("We wrote a guide")).await.expect(201);
    let waiting = s.get("/api/me/collabs", Some(&partner.key)).await;
    assert_eq!(waiting.json["total"], 3, "{}", waiting.text);
}

#[tokio::test]
async fn replies_limit_holds_per_agent() {
    let s = Server::start_with(&limits(&[("AGENTDIR_RATE_LIMIT_REPLIES", "2/h")])).await;
    let author = s.register("rl-author").await;
    let chatty = s.register("rl-chatty").await;
    let calm = s.register("rl-calm").await;
    let call = post_call(&s, &author).await;
    let path = format!("/api/posts/{call}/replies");
    let reply = json!({"body": "I can help with this."});
    s.post(&path, Some(&chatty.key), reply.clone()).await.expect(201);
    s.post(&path, Some(&chatty.key), reply.clone()).await.expect(201);
    assert_limited(&s.post(&path, Some(&chatty.key), reply.clone()).await, 3600);
    s.post(&path, Some(&calm.key), reply).await.expect(201);
    assert_eq!(
        s.get(&format!("/api/posts/{call}"), None).await.json["replies"].as_array().map(Vec::len),
        Some(3)
    );
}

#[tokio::test]
async fn link_proof_limit_holds_per_agent() {
    let s = Server::start_with(&limits(&[("AGENTDIR_RATE_LIMIT_LINKS", "2/h")])).await;
    let a = s.register("rl-links").await;
    let b = s.register("rl-links").await;
    // A loopback URL is refused without a fetch, but the attempt still counts.
    let link = json!({"url": "http://127.0.0.1:9/proof"});
    s.post("/api/me/links", Some(&a.key), link.clone()).await.expect_error(422, "link_fetch_failed");
    s.post("/api/me/links", Some(&a.key), link.clone()).await.expect_error(422, "link_fetch_failed");
    assert_limited(&s.post("/api/me/links", Some(&a.key), link.clone()).await, 3600);
    s.post("/api/me/links", Some(&b.key), link).await.expect_error(422, "link_fetch_failed");
}

#[tokio::test]
async fn public_reports_limit_holds_per_client_ip() {
    let s = Server::start_with(&limits(&[("AGENTDIR_RATE_LIMIT_REPORTS", "2/h")])).await;
    let author = s.register("rl-author").await;
    let call = post_call(&s, &author).await;
    let path = format!("/api/posts/{call}/report");
    s.post(&path, None, json!({"reason": "one"})).await.expect(200);
    s.post(&path, None, json!({"reason": "two"})).await.expect(200);
    assert_limited(&s.post(&path, None, json!({"reason": "three"})).await, 3600);
    assert_eq!(s.admin_ok(&["reports"]).lines().count(), 2);
    assert_eq!(metric_value(&s, "agentdir_rate_limited_total{limit=\"reports\"}").await, 1.0);
}

#[tokio::test]
async fn a_flood_of_bad_keys_meets_429_while_known_keys_pass() {
    let s = Server::start_with(&limits(&[("AGENTDIR_RATE_LIMIT_KEY_CHECKS", "5/m")])).await;
    // Neither registering nor the first use of the issued key spends key checks.
    let good = s.register("rl-key").await;
    s.get("/api/me", Some(&good.key)).await.expect(200);

    // Wrong secrets for an existing key id do, and then meet 429.
    let (key_id, _) = good.key.trim_start_matches("cq_").split_once('_').expect("key shape");
    let wrong_secret = format!("cq_{key_id}_{}", "0".repeat(40));
    for _ in 0..5 {
        s.get("/api/me", Some(&wrong_secret)).await.expect_error(401, "unauthorized");
    }
    let r = s.get("/api/me", Some(&wrong_secret)).await;
    assert_limited(&r, 60);
    assert_limited(&s.get("/api/me", Some(&wrong_secret)).await, 60);
    // A malformed key costs no check at all.
    s.get("/api/me", Some("cq_garbage")).await.expect_error(401, "unauthorized");

    // The verified key is answered from memory: never counted, never refused.
    for _ in 0..20 {
        s.get("/api/me", Some(&good.key)).await.expect(200);
    }
    assert!(metric_value(&s, "agentdir_rate_limited_total{limit=\"key_checks\"}").await >= 2.0);
}

#[tokio::test]
async fn a_malformed_limit_is_refused_at_start() {
    let out = std::process::Command::new(common::BIN)
        .args(["serve", "--bind", "127.0.0.1:0", "--data-dir"])
        .arg(tempfile::tempdir().expect("temp").path())
        .env("AGENTDIR_RATE_LIMIT_REPLIES", "lots")
        .output()
        .expect("run agentdir serve");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("`lots` is not a rate"), "{stderr}");
}
