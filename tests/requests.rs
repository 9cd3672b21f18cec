//! Contact requests: the sender's trust and the recipient's policy, the moves and who may make
//! them, privacy of mailboxes, expiry, and concurrent moves.

mod common;

use common::{Agent, Server};
use serde_json::{Value, json};

fn ask(offering_id: Option<&str>) -> Value {
    let mut body = json!({"purpose": "Translate our README", "deliverable": "A Chinese README", "compensation": "discuss"});
    if let Some(id) = offering_id {
        body["offering_id"] = json!(id);
    }
    body
}

async fn send(s: &Server, from: &Agent, to: &Agent, body: Value) -> common::Resp {
    s.post(&format!("/api/agents/{}/requests", to.handle), Some(&from.key), body).await
}

/// Moves a request's creation time back, as if `days` had passed (expiry cannot be waited for).
fn age_request(s: &Server, id: &str, days: i64) {
    let db = rusqlite::Connection::open(s.data_dir.join("agentdir.sqlite3")).unwrap();
    db.busy_timeout(std::time::Duration::from_secs(5)).unwrap();
    let n = db
        .execute(
            "UPDATE contact_requests SET created_at = created_at - ?2 * 86400000 WHERE id = ?1",
            rusqlite::params![id, days],
        )
        .unwrap();
    assert_eq!(n, 1);
}

/// A new agent's policy requires an offering in every request, and it lists none yet: every
/// surface says it cannot take a request until it publishes one, not that it accepts them.
#[tokio::test]
async fn an_agent_without_offerings_says_it_cannot_take_requests_yet() {
    let s = Server::start().await;
    let sender = s.verified("asker").await;
    let to = s.verified("bare").await;
    let how = |r: &common::Resp| r.json["agent"]["contact"]["how_en"].as_str().unwrap().to_owned();
    let card = s.get(&format!("/api/agents/{}", to.handle), None).await;
    assert!(how(&card).contains("lists none yet"), "{}", card.text);
    assert!(
        card.json["agent"]["contact"]["how_zh"].as_str().unwrap().contains("尚未发布任何服务"),
        "{}",
        card.text
    );
    let r = send(&s, &sender, &to, ask(None)).await;
    r.expect_error(422, "offering_required");
    assert!(r.json["error"]["message_en"].as_str().unwrap().contains("lists none yet"), "{}", r.text);
    let page = s.get(&format!("/agents/{}", to.handle), None).await;
    assert!(page.text.contains("Not accepting contact requests"), "{}", page.text);

    let offering = s.offering(&to).await;
    let card = s.get(&format!("/api/agents/{}", to.handle), None).await;
    assert!(!how(&card).contains("lists none yet") && how(&card).contains("offering_id"), "{}", card.text);
    let r = send(&s, &sender, &to, ask(None)).await;
    r.expect_error(422, "offering_required");
    assert!(r.json["error"]["message_en"].as_str().unwrap().contains("include offering_id"), "{}", r.text);
    send(&s, &sender, &to, ask(Some(&offering))).await.expect(201);
}

#[tokio::test]
async fn sender_trust_and_recipient_policy_are_enforced_in_order() {
    let s = Server::start().await;
    let newcomer = s.register("newbie").await;
    let sender = s.verified("sender").await;
    let to = s.verified("target").await;
    let offering = s.offering(&to).await;

    send(&s, &newcomer, &to, ask(Some(&offering))).await.expect_error(403, "trust_too_low");
    send(&s, &sender, &sender, ask(None)).await.expect_error(422, "self_target");
    send(&s, &sender, &to, ask(None)).await.expect_error(422, "offering_required");
    send(&s, &sender, &to, ask(Some("off_01zzzzzzzzzzzzzzzzzzzzzzzz")))
        .await
        .expect_error(422, "unknown_offering");

    s.patch("/api/me", Some(&to.key), json!({"contact_policy": {"min_level": 2}})).await.expect(200);
    let r = send(&s, &sender, &to, ask(Some(&offering))).await;
    r.expect_error(403, "trust_too_low");
    assert!(r.json["error"]["message_en"].as_str().unwrap().contains("level 2"));
    s.patch("/api/me", Some(&to.key), json!({"contact_policy": {"min_level": 1, "accepting": false}}))
        .await
        .expect(200);
    send(&s, &sender, &to, ask(Some(&offering))).await.expect_error(403, "not_accepting");
    s.patch(
        "/api/me",
        Some(&to.key),
        json!({"contact_policy": {"accepting": true, "require_offering": false}}),
    )
    .await
    .expect(200);

    // Without the offering requirement a request may leave offering_id out.
    let r = send(&s, &sender, &to, ask(None)).await;
    r.expect(201);
    assert_eq!(r.json["request"]["status"], "pending");
    assert!(r.json["request"]["id"].as_str().unwrap().starts_with("req_"));
    send(&s, &sender, &to, ask(None)).await.expect_error(409, "already_pending");

    send(&s, &sender, &to, json!({"purpose": "x"})).await.expect_error(400, "validation_failed");
    for bad in [
        json!({"purpose": "p".repeat(201), "deliverable": "d", "compensation": "none"}),
        json!({"purpose": "two\nlines", "deliverable": "d", "compensation": "none"}),
        json!({"purpose": "p", "deliverable": "d".repeat(121), "compensation": "none"}),
        json!({"purpose": "p", "deliverable": "d", "compensation": "money"}),
        json!({"purpose": "p", "deliverable": "d", "compensation": "none", "deadline": "2026-02-30"}),
        json!({"purpose": "p", "deliverable": "d", "compensation": "none", "deadline": "next week"}),
        json!({"purpose": "p", "deliverable": "d", "compensation": "none", "context": "c".repeat(501)}),
    ] {
        send(&s, &sender, &to, bad).await.expect_error(400, "validation_failed");
    }
    let late = json!({"purpose": "p", "deliverable": "d", "compensation": "none", "deadline": "1999-01-01"});
    send(&s, &sender, &to, late).await.expect_error(422, "deadline_passed");
    let nobody = Agent { handle: "no-such-agent".into(), key: sender.key.clone(), mailbox: String::new() };
    send(&s, &sender, &nobody, ask(None)).await.expect_error(404, "not_found");
    let r = s.post(&format!("/api/agents/{}/requests", to.handle), None, ask(None)).await;
    r.expect_error(401, "unauthorized");
}

#[tokio::test]
async fn mailboxes_appear_to_both_parties_only_after_accept() {
    let s = Server::start().await;
    let from = s.verified("from").await;
    let to = s.verified("to").await;
    let outsider = s.verified("outsider").await;
    let offering = s.offering(&to).await;
    let id = s.request(&from, &to, &offering).await;
    let path = format!("/api/requests/{id}");

    for a in [&from, &to] {
        let r = s.get(&path, Some(&a.key)).await;
        r.expect(200);
        assert_eq!(r.json["request"]["mailboxes"], Value::Null);
        assert!(!r.text.contains(&from.mailbox) && !r.text.contains(&to.mailbox), "mailbox before accept");
        assert_eq!(r.json["request"]["offering"]["id"], offering);
    }
    s.get(&path, Some(&outsider.key)).await.expect_error(404, "not_found");
    s.get(&path, None).await.expect_error(401, "unauthorized");
    s.get("/api/requests/req_01zzzzzzzzzzzzzzzzzzzzzzzz", Some(&from.key))
        .await
        .expect_error(404, "not_found");

    // Only the recipient accepts; the sender gets 403, an outsider 404.
    s.post_empty(&format!("{path}/accept"), Some(&from.key)).await.expect_error(403, "forbidden");
    s.post_empty(&format!("{path}/accept"), Some(&outsider.key)).await.expect_error(404, "not_found");
    let r = s.post_empty(&format!("{path}/accept"), Some(&to.key)).await;
    r.expect(200);
    assert_eq!(r.json["request"]["status"], "accepted");

    for a in [&from, &to] {
        let r = s.get(&path, Some(&a.key)).await;
        assert_eq!(r.json["request"]["mailboxes"], json!({"sender": from.mailbox, "recipient": to.mailbox}));
    }
    s.get(&path, Some(&outsider.key)).await.expect_error(404, "not_found");
    // Never in public reads.
    for p in
        [format!("/api/agents/{}", to.handle), format!("/api/agents/{}", from.handle), "/api/agents".into()]
    {
        let r = s.get(&p, None).await;
        assert!(!r.text.contains(&from.mailbox) && !r.text.contains(&to.mailbox), "mailbox leaked in {p}");
    }
    // A move on a request no longer pending is a conflict.
    s.post_empty(&format!("{path}/accept"), Some(&to.key)).await.expect_error(409, "invalid_state");
    s.post_empty(&format!("{path}/decline"), Some(&to.key)).await.expect_error(409, "invalid_state");
    s.post_empty(&format!("{path}/withdraw"), Some(&from.key)).await.expect_error(409, "invalid_state");
}

#[tokio::test]
async fn decline_withdraw_and_report_follow_the_roles() {
    let s = Server::start().await;
    let from = s.verified("from").await;
    let to = s.verified("to").await;
    let offering = s.offering(&to).await;

    // Withdraw: the sender only.
    let id = s.request(&from, &to, &offering).await;
    s.post_empty(&format!("/api/requests/{id}/withdraw"), Some(&to.key)).await.expect_error(403, "forbidden");
    let r = s.post_empty(&format!("/api/requests/{id}/withdraw"), Some(&from.key)).await;
    r.expect(200);
    assert_eq!(r.json["request"]["status"], "withdrawn");

    // Report: the recipient only; it does not change the state.
    let id = s.request(&from, &to, &offering).await;
    s.post_empty(&format!("/api/requests/{id}/report"), Some(&from.key)).await.expect_error(403, "forbidden");
    let r = s.post(&format!("/api/requests/{id}/report"), Some(&to.key), json!({"reason": "spam"})).await;
    r.expect(200);
    assert_eq!(r.json["reported"], true);
    s.post(&format!("/api/requests/{id}/report"), Some(&to.key), json!({"reason": "r".repeat(301)}))
        .await
        .expect_error(400, "validation_failed");
    let reports = s.admin_ok(&["reports"]);
    assert!(reports.contains(&id) && reports.contains("spam"), "{reports}");

    // Decline: the recipient only, with an optional reason; the sender then waits 30 days.
    s.post_empty(&format!("/api/requests/{id}/decline"), Some(&from.key))
        .await
        .expect_error(403, "forbidden");
    s.post(&format!("/api/requests/{id}/decline"), Some(&to.key), json!({"reason": "because"}))
        .await
        .expect_error(400, "validation_failed");
    let r = s.post(&format!("/api/requests/{id}/decline"), Some(&to.key), json!({"reason": "busy"})).await;
    r.expect(200);
    assert_eq!(r.json["request"]["status"], "declined");
    assert_eq!(r.json["request"]["decline_reason"], "busy");
    assert_eq!(r.json["request"]["mailboxes"], Value::Null);
    let r = send(&s, &from, &to, ask(Some(&offering))).await;
    r.expect_error(429, "cooldown_after_decline");
    let wait: u64 = r.header("retry-after").unwrap().parse().unwrap();
    assert!(wait > 29 * 86_400 && wait <= 30 * 86_400, "{wait}");

    // A decline without any body works too.
    let other = s.verified("other").await;
    let id = s.request(&other, &to, &offering).await;
    s.post_empty(&format!("/api/requests/{id}/decline"), Some(&to.key)).await.expect(200);
}

#[tokio::test]
async fn weekly_cap_counts_every_request_received_in_seven_days() {
    let s = Server::start().await;
    let to = s.verified("capped").await;
    let offering = s.offering(&to).await;
    s.patch("/api/me", Some(&to.key), json!({"contact_policy": {"weekly_cap": 2}})).await.expect(200);
    let a = s.verified("a").await;
    let b = s.verified("b").await;
    let c = s.verified("c").await;
    let first = s.request(&a, &to, &offering).await;
    // Withdrawn requests still count.
    s.post_empty(&format!("/api/requests/{first}/withdraw"), Some(&a.key)).await.expect(200);
    let second = s.request(&b, &to, &offering).await;
    let r = send(&s, &c, &to, ask(Some(&offering))).await;
    r.expect_error(429, "weekly_cap_reached");
    let wait: u64 = r.header("retry-after").unwrap().parse().unwrap();
    assert!(wait > 6 * 86_400 && wait <= 7 * 86_400, "{wait}");
    // A week later the window has moved on.
    age_request(&s, &first, 8);
    send(&s, &c, &to, ask(Some(&offering))).await.expect(201);

    // The cap lowered below what the window holds: the wait lasts until enough have left it,
    // not until the oldest has (b's came 6 days ago, c's just now: one may come in 7 days).
    age_request(&s, &second, 6);
    s.patch("/api/me", Some(&to.key), json!({"contact_policy": {"weekly_cap": 1}})).await.expect(200);
    let d = s.verified("d").await;
    let r = send(&s, &d, &to, ask(Some(&offering))).await;
    r.expect_error(429, "weekly_cap_reached");
    let wait: u64 = r.header("retry-after").unwrap().parse().unwrap();
    assert!(wait > 6 * 86_400 && wait <= 7 * 86_400, "{wait}");
}

/// One sender cannot fill a recipient's cap alone by sending and withdrawing: it takes at most
/// two of the week's requests to one recipient, and others still reach it.
#[tokio::test]
async fn one_sender_takes_at_most_two_places_of_a_recipients_week() {
    let s = Server::start().await;
    let to = s.verified("filled").await;
    let offering = s.offering(&to).await;
    let spammer = s.verified("spammer").await;
    for _ in 0..2 {
        let id = s.request(&spammer, &to, &offering).await;
        s.post_empty(&format!("/api/requests/{id}/withdraw"), Some(&spammer.key)).await.expect(200);
    }
    let r = send(&s, &spammer, &to, ask(Some(&offering))).await;
    r.expect_error(429, "rate_limited");
    let wait: u64 = r.header("retry-after").unwrap().parse().unwrap();
    assert!(wait > 6 * 86_400 && wait <= 7 * 86_400, "{wait}");
    assert_eq!(
        s.get("/api/me/requests?box=in", Some(&to.key)).await.json["total"],
        2,
        "the refused one was kept"
    );
    // Another sender still reaches the recipient; the spammer still reaches others.
    let other = s.verified("bystander").await;
    send(&s, &other, &to, ask(Some(&offering))).await.expect(201);
    let elsewhere = s.verified("elsewhere").await;
    let their_offering = s.offering(&elsewhere).await;
    send(&s, &spammer, &elsewhere, ask(Some(&their_offering))).await.expect(201);
}

/// A sender the directory suspended cannot be reached meanwhile: its pending request cannot be
/// accepted (which would show both mailboxes), only declined; once restored, it can.
#[tokio::test]
async fn a_suspended_senders_request_is_not_accepted_until_it_is_restored() {
    let s = Server::start().await;
    let to = s.verified("to-sus").await;
    let offering = s.offering(&to).await;
    let sender = s.verified("sus-sender").await;
    let other = s.verified("sus-other").await;
    let first = s.request(&sender, &to, &offering).await;
    let second = s.request(&other, &to, &offering).await;
    s.admin_ok(&["suspend", "--category", "spam", &sender.handle]);
    let r = s.post_empty(&format!("/api/requests/{first}/accept"), Some(&to.key)).await;
    r.expect_error(404, "not_found");
    let r = s.get(&format!("/api/requests/{first}"), Some(&to.key)).await;
    assert_eq!(r.json["request"]["status"], "pending", "{}", r.text);
    assert_eq!(r.json["request"]["mailboxes"], Value::Null, "{}", r.text);
    s.admin_ok(&["restore", &sender.handle]);
    s.post_empty(&format!("/api/requests/{first}/accept"), Some(&to.key)).await.expect(200);
    // Suspended again: declining still works.
    s.admin_ok(&["suspend", "--category", "spam", &other.handle]);
    s.post_empty(&format!("/api/requests/{second}/decline"), Some(&to.key)).await.expect(200);
}

/// On the moved clock of the `test-clock` feature: the fourteen days pass without waiting.
#[cfg(feature = "test-clock")]
#[tokio::test]
async fn pending_requests_expire_after_fourteen_days() {
    let s = Server::start().await;
    let from = s.verified("from").await;
    let to = s.verified("to").await;
    let offering = s.offering(&to).await;
    let id = s.request(&from, &to, &offering).await;
    let status =
        async || s.get(&format!("/api/requests/{id}"), Some(&to.key)).await.json["request"]["status"].clone();
    let day = std::time::Duration::from_secs(86_400);
    s.clock_ahead(day * 14 - std::time::Duration::from_secs(60));
    assert_eq!(status().await, "pending", "a request expired before its fourteen days");
    s.clock_ahead(day * 14 + std::time::Duration::from_secs(60));
    assert_eq!(status().await, "expired");
    s.post_empty(&format!("/api/requests/{id}/accept"), Some(&to.key))
        .await
        .expect_error(409, "invalid_state");
    let listed = s.get("/api/me/requests?status=expired", Some(&to.key)).await;
    assert_eq!(listed.json["total"], 1);
    assert_eq!(s.get("/api/me/requests?status=pending", Some(&to.key)).await.json["total"], 0);
    // An expired request no longer blocks a new one.
    send(&s, &from, &to, ask(Some(&offering))).await.expect(201);
}

#[tokio::test]
async fn own_request_lists_filter_by_box_and_status() {
    let s = Server::start().await;
    let me = s.verified("me").await;
    let other = s.verified("other").await;
    let mine = s.offering(&me).await;
    let theirs = s.offering(&other).await;
    s.request(&me, &other, &theirs).await;
    let incoming = s.request(&other, &me, &mine).await;
    s.post_empty(&format!("/api/requests/{incoming}/accept"), Some(&me.key)).await.expect(200);

    let all = s.get("/api/me/requests", Some(&me.key)).await;
    all.expect(200);
    assert_eq!(all.json["total"], 2);
    let r = s.get("/api/me/requests?box=in", Some(&me.key)).await;
    assert_eq!(r.json["total"], 1);
    assert_eq!(r.json["requests"][0]["id"], incoming);
    assert_eq!(s.get("/api/me/requests?box=out", Some(&me.key)).await.json["total"], 1);
    assert_eq!(s.get("/api/me/requests?box=in&status=accepted", Some(&me.key)).await.json["total"], 1);
    assert_eq!(s.get("/api/me/requests?box=out&status=accepted", Some(&me.key)).await.json["total"], 0);
    s.get("/api/me/requests?box=sideways", Some(&me.key)).await.expect_error(400, "validation_failed");
    s.get("/api/me/requests?status=lost", Some(&me.key)).await.expect_error(400, "validation_failed");
    s.get("/api/me/requests", None).await.expect_error(401, "unauthorized");
}

#[tokio::test]
async fn of_two_concurrent_accepts_exactly_one_wins() {
    let s = Server::start().await;
    let to = s.verified("race-to").await;
    let offering = s.offering(&to).await;
    for round in 0..5 {
        let from = s.verified(&format!("race{round}")).await;
        let id = s.request(&from, &to, &offering).await;
        let path = format!("/api/requests/{id}/accept");
        let decline = format!("/api/requests/{id}/decline");
        let (a, b, c) = tokio::join!(
            s.post_empty(&path, Some(&to.key)),
            s.post_empty(&path, Some(&to.key)),
            s.post_empty(&decline, Some(&to.key)),
        );
        let statuses = [a.status, b.status, c.status];
        assert_eq!(statuses.iter().filter(|&&x| x == 200).count(), 1, "{statuses:?}");
        assert_eq!(statuses.iter().filter(|&&x| x == 409).count(), 2, "{statuses:?}");
    }
}

#[tokio::test]
async fn reports_of_requests_share_the_report_rate_limit() {
    let mut env: Vec<(&str, &str)> =
        common::RELAXED_LIMITS.iter().copied().filter(|(k, _)| *k != "AGENTDIR_RATE_LIMIT_REPORTS").collect();
    env.push(("AGENTDIR_RATE_LIMIT_REPORTS", "2/h"));
    let s = Server::start_with(&env).await;
    let to = s.verified("reporter").await;
    let offering = s.offering(&to).await;
    let mut ids = Vec::new();
    for i in 0..3 {
        let from = s.verified(&format!("spam{i}")).await;
        ids.push(s.request(&from, &to, &offering).await);
    }
    for id in &ids[..2] {
        s.post_empty(&format!("/api/requests/{id}/report"), Some(&to.key)).await.expect(200);
    }
    let r = s.post_empty(&format!("/api/requests/{}/report", ids[2]), Some(&to.key)).await;
    r.expect_error(429, "rate_limited");
    assert!(r.header("retry-after").is_some());
    assert_eq!(s.admin_ok(&["reports"]).lines().count(), 2, "the refused report was not stored");
}
