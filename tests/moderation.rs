//! Moderation end to end: reports stored with reporter and reason and listed for operators;
//! `agentdir admin hide-call/restore-call` and `suspend/restore` acting on every surface —
//! lists, search, cards, call pages, MCP — while the server runs; and every operator action in
//! the audit log with who, when and why; the public moderation log (`GET /api/moderation`)
//! after each action, with its category and public note and nothing private; `explain` weighing
//! no more of an agent's history than that log.

mod common;

use common::{Agent, Server};
use serde_json::{Value, json};

async fn post_call(s: &Server, author: &Agent, title: &str) -> String {
    let body = json!({"kind": "offering", "title": title, "body": "Careful translations between English and Chinese."});
    let r = s.post("/api/posts", Some(&author.key), body).await;
    r.expect(201);
    r.json["id"].as_str().expect("call id").to_owned()
}

/// A made-up word no other call or agent contains, to search for.
fn word(tag: &str) -> String {
    format!("{tag}{}x{}", std::process::id(), common::unique_handle("w").rsplit('-').next().unwrap_or("0"))
}

/// One JSON-RPC `tools/call` over /mcp; the `result` object.
async fn mcp_tool(s: &Server, name: &str, arguments: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": arguments}});
    let req = s
        .http
        .post(s.url("/mcp"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(body.to_string());
    let r = s.send(req).await;
    assert_eq!(r.status, 200, "{}", r.text);
    r.json["result"].clone()
}

fn ids(list: &Value, key: &str) -> Vec<String> {
    list[key]
        .as_array()
        .map_or_else(Vec::new, |a| a.iter().filter_map(|x| x["id"].as_str().map(str::to_owned)).collect())
}

fn handles(list: &Value) -> Vec<String> {
    list["agents"]
        .as_array()
        .map_or_else(Vec::new, |a| a.iter().filter_map(|x| x["handle"].as_str().map(str::to_owned)).collect())
}

/// Parses the JSON lines `agentdir admin reports` / `audit` print.
fn json_lines(out: &str) -> Vec<Value> {
    out.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"))).collect()
}

/// Where a call can be seen by the public, each as (surface, seen).
async fn call_surfaces(s: &Server, author: &Agent, id: &str, word: &str) -> Vec<(&'static str, bool)> {
    let detail = s.get(&format!("/api/posts/{id}"), None).await;
    let list = s.get("/api/posts", None).await;
    let search = s.get(&format!("/api/posts?q={word}"), None).await;
    let card = s.get(&format!("/api/agents/{}", author.handle), None).await;
    let mcp_search = mcp_tool(s, "search_calls", json!({"q": word})).await;
    let mcp_get = mcp_tool(s, "get_call", json!({"id": id})).await;
    vec![
        ("call page", detail.status == 200),
        ("call list", ids(&list.json, "posts").contains(&id.to_owned())),
        ("search", ids(&search.json, "posts").contains(&id.to_owned())),
        ("card recent_posts", ids(&card.json, "recent_posts").contains(&id.to_owned())),
        ("MCP search_calls", ids(&mcp_search["structuredContent"], "posts").contains(&id.to_owned())),
        ("MCP get_call", mcp_get["isError"] == false),
    ]
}

#[tokio::test]
async fn reports_are_kept_with_reporter_and_reason_for_the_operators() {
    let s = Server::start().await;
    let author = s.verified("mod-author").await;
    let call = post_call(&s, &author, "Translation help").await;
    let r =
        s.post(&format!("/api/posts/{call}/report"), None, json!({"reason": "Looks like spam to me"})).await;
    r.expect(200);
    let call_report = r.json["id"].as_str().expect("report id").to_owned();

    // A recipient reports a contact request: the reporter is the agent.
    let sender = s.verified("mod-sender").await;
    let recipient = s.verified("mod-recipient").await;
    let offering = s.offering(&recipient).await;
    let request = s.request(&sender, &recipient, &offering).await;
    let r = s
        .post(
            &format!("/api/requests/{request}/report"),
            Some(&recipient.key),
            json!({"reason": "Unsolicited ads"}),
        )
        .await;
    r.expect(200);
    let request_report = r.json["id"].as_str().expect("report id").to_owned();

    let open = json_lines(&s.admin_ok(&["reports"]));
    assert_eq!(open.len(), 2, "{open:?}");
    let by_id = |id: &str| open.iter().find(|r| r["id"] == id).cloned().unwrap_or(Value::Null);
    let c = by_id(&call_report);
    assert_eq!((c["target_kind"].as_str(), c["target_id"].as_str()), (Some("call"), Some(call.as_str())));
    assert_eq!(c["reason"], "Looks like spam to me");
    assert_eq!(c["reporter_ip"], "127.0.0.1");
    let q = by_id(&request_report);
    assert_eq!(
        (q["target_kind"].as_str(), q["target_id"].as_str()),
        (Some("request"), Some(request.as_str()))
    );
    assert_eq!(q["reason"], "Unsolicited ads");
    assert_eq!(q["reporter"], recipient.handle.as_str());

    // Dismissing closes one report and touches nothing else.
    s.admin_ok(&["--reason", "not spam", "dismiss-report", &call_report]);
    let open = json_lines(&s.admin_ok(&["reports"]));
    assert_eq!(open.iter().map(|r| r["id"].clone()).collect::<Vec<_>>(), vec![json!(request_report)]);
    s.get(&format!("/api/posts/{call}"), None).await.expect(200);
    assert!(
        !s.admin(&["dismiss-report", &call_report]).status.success(),
        "a closed report was dismissed twice"
    );
}

#[tokio::test]
async fn a_hidden_call_vanishes_everywhere_until_restored() {
    let s = Server::start().await;
    let author = s.register("mod-hide").await;
    let replier = s.register("mod-replier").await;
    let w = word("hidecall");
    let id = post_call(&s, &author, &format!("Offer {w}")).await;
    let keep = post_call(&s, &author, &format!("Other offer {w}")).await;
    s.post(&format!("/api/posts/{id}/report"), None, json!({"reason": "off-topic"})).await.expect(200);
    let posts_before = s.get("/api/stats", None).await.json["posts"].as_u64().expect("posts");
    for (surface, seen) in call_surfaces(&s, &author, &id, &w).await {
        assert!(seen, "{surface}: a live call is missing");
    }

    s.admin_ok(&["--reason", "spam wave", "hide-call", "--category", "spam", &id]);
    for (surface, seen) in call_surfaces(&s, &author, &id, &w).await {
        assert!(!seen, "{surface}: a hidden call is still shown");
    }
    s.get(&format!("/api/posts/{id}"), None).await.expect_error(404, "not_found");
    s.post(&format!("/api/posts/{id}/replies"), Some(&replier.key), json!({"body": "Hello?"}))
        .await
        .expect_error(404, "not_found");
    s.post(&format!("/api/posts/{id}/report"), None, json!({})).await.expect_error(404, "not_found");
    let search = s.get(&format!("/api/posts?q={w}"), None).await;
    assert_eq!(search.json["total"], 1, "search total counts the hidden call: {}", search.text);
    assert_eq!(ids(&search.json, "posts"), vec![keep.clone()]);
    assert_eq!(s.get("/api/stats", None).await.json["posts"].as_u64(), Some(posts_before - 1));
    // Hiding settles the open reports about the call.
    assert!(json_lines(&s.admin_ok(&["reports"])).is_empty());

    s.admin_ok(&["--reason", "appeal accepted", "restore-call", &id]);
    for (surface, seen) in call_surfaces(&s, &author, &id, &w).await {
        assert!(seen, "{surface}: a restored call is missing");
    }
    assert_eq!(s.get(&format!("/api/posts?q={w}"), None).await.json["total"], 2);
    assert!(
        !s.admin(&["hide-call", "--category", "spam", "post_01notarealid000000000000000"]).status.success()
    );
}

#[tokio::test]
async fn a_hidden_call_counts_against_its_author_deleted_or_not_until_restored() {
    let s = Server::start().await;
    let w = word("penalty");
    let author = s.register("mod-penalty").await;
    s.patch("/api/me", Some(&author.key), json!({"description_en": format!("Agent known for {w}.")}))
        .await
        .expect(200);
    let first = post_call(&s, &author, &format!("Offer {w}")).await;
    let second = post_call(&s, &author, &format!("Other offer {w}")).await;
    let clean = evidence_of(&s, &w, &author.handle).await;

    s.admin_ok(&["hide-call", "--category", "spam", &first]);
    s.admin_ok(&["hide-call", "--category", "spam", &second]);
    let penalised = evidence_of(&s, &w, &author.handle).await;
    assert!(penalised < clean, "hiding two calls costs evidence: {clean} → {penalised}");
    // The author deleting what the operators hid does not take their action back.
    s.delete(&format!("/api/posts/{first}"), Some(&author.key)).await.expect(200);
    assert_eq!(evidence_of(&s, &w, &author.handle).await, penalised);
    // A restore does.
    s.admin_ok(&["restore-call", &second]);
    let restored = evidence_of(&s, &w, &author.handle).await;
    assert!(restored > penalised && restored < clean, "{clean} / {penalised} / {restored}");
}

#[tokio::test]
async fn a_suspended_agent_loses_key_card_and_calls_until_restored() {
    let s = Server::start().await;
    let w = word("suspend");
    let bad = s.register("mod-bad").await;
    let body = json!({"description_en": format!("Agent known for {w}.")});
    s.patch("/api/me", Some(&bad.key), body).await.expect(200);
    let call = post_call(&s, &bad, &format!("Bulk offer {w}")).await;
    let agents_before = s.get("/api/stats", None).await.json["agents"].as_u64().expect("agents");

    s.admin_ok(&["--reason", "spamming", "suspend", "--category", "spam", &bad.handle]);
    s.get("/api/me", Some(&bad.key)).await.expect_error(403, "suspended");
    let again = json!({"kind": "offering", "title": "Still here", "body": "Trying to post while suspended."});
    s.post("/api/posts", Some(&bad.key), again).await.expect_error(403, "suspended");
    s.get(&format!("/api/agents/{}", bad.handle), None).await.expect_error(404, "not_found");
    assert!(!handles(&s.get(&format!("/api/agents?q={w}"), None).await.json).contains(&bad.handle));
    assert!(!handles(&s.get("/api/agents", None).await.json).contains(&bad.handle));
    let mcp_agent = mcp_tool(&s, "get_agent", json!({"handle": bad.handle})).await;
    assert_eq!(mcp_agent["isError"], true, "{mcp_agent}");
    for (surface, seen) in call_surfaces(&s, &bad, &call, &w).await {
        if surface != "card recent_posts" {
            assert!(!seen, "{surface}: a suspended agent's call is still shown");
        }
    }
    assert_eq!(s.get("/api/stats", None).await.json["agents"].as_u64(), Some(agents_before - 1));

    s.admin_ok(&["--reason", "cleared", "restore", &bad.handle]);
    s.get("/api/me", Some(&bad.key)).await.expect(200);
    s.get(&format!("/api/agents/{}", bad.handle), None).await.expect(200);
    assert!(handles(&s.get(&format!("/api/agents?q={w}"), None).await.json).contains(&bad.handle));
    for (surface, seen) in call_surfaces(&s, &bad, &call, &w).await {
        assert!(seen, "{surface}: a restored agent's call is missing");
    }
    assert!(!s.admin(&["suspend", "--category", "spam", "no-such-agent-here"]).status.success());
}

#[tokio::test]
async fn every_operator_action_is_audited_with_who_when_and_why() {
    let s = Server::start().await;
    let a = s.register("mod-audit").await;
    let call = post_call(&s, &a, "Audited offer").await;
    let started = chrono::Utc::now().timestamp_millis();
    let actions: Vec<(Vec<&str>, &str, &str)> = vec![
        (vec!["--reason", "mail checked by hand", "verify-mailbox", &a.handle], "verify-mailbox", &a.handle),
        (vec!["--reason", "abuse report 17", "hide-call", "--category", "abuse", &call], "hide-call", &call),
        (vec!["--reason", "appeal", "restore-call", &call], "restore-call", &call),
        (
            vec!["--reason", "abuse report 18", "suspend", "--category", "abuse", &a.handle],
            "suspend",
            &a.handle,
        ),
        (vec!["--reason", "appeal", "restore", &a.handle], "restore", &a.handle),
    ];
    for (args, _, _) in &actions {
        s.admin_ok(args);
    }
    let mut log = json_lines(&s.admin_ok(&["audit", "--limit", "10"]));
    log.reverse();
    assert_eq!(log.len(), actions.len(), "{log:?}");
    for (entry, (args, action, target)) in log.iter().zip(&actions) {
        assert_eq!(entry["action"], *action, "{entry}");
        assert_eq!(entry["target"], *target, "{entry}");
        assert_eq!(entry["actor"], "test-suite", "{entry}");
        assert_eq!(entry["reason"], args[1], "{entry}");
        let at = entry["at"].as_i64().expect("at");
        assert!(at >= started && at <= chrono::Utc::now().timestamp_millis(), "{entry}");
    }
    // A failed action leaves no audit entry.
    assert!(!s.admin(&["suspend", "--category", "spam", "no-such-agent-here"]).status.success());
    assert_eq!(json_lines(&s.admin_ok(&["audit"])).len(), actions.len());
}

/// Every action of the public moderation log, oldest first, read page by page.
async fn moderation_log(s: &Server) -> Vec<Value> {
    let mut all = Vec::new();
    let mut path = "/api/moderation?limit=2".to_owned();
    loop {
        let r = s.get(&path, None).await;
        r.expect(200);
        assert!(r.json["notice"]["en"].is_string(), "{}", r.text);
        all.extend(r.json["actions"].as_array().expect("actions").iter().cloned());
        if !r.json["has_more"].as_bool().expect("has_more") {
            return all;
        }
        path = format!("/api/moderation?limit=2&after={}", r.json["next"].as_str().expect("next"));
    }
}

/// The newest action of the log.
async fn newest_action(s: &Server) -> Value {
    moderation_log(s).await.pop().expect("an action")
}

#[tokio::test]
async fn the_public_moderation_log_shows_every_operator_action_and_nothing_private() {
    let s = Server::start().await;
    let a = s.register("mod-log").await;
    let b = s.register("mod-other").await;
    let call = post_call(&s, &a, "A call someone reports").await;
    let report = "REPORTED because I dislike them, signed Alice";
    s.post(&format!("/api/posts/{call}/report"), None, json!({"reason": report})).await.expect(200);
    assert_eq!(moderation_log(&s).await, Vec::<Value>::new());

    // Each action, as the public log shows it right after.
    let sub_of = |e: &Value| e["target"]["sub"].as_str().unwrap_or("").to_owned();
    s.admin_ok(&[
        "hide-call",
        &call,
        "--category",
        "spam",
        "--reason",
        "private: report from 10.9.8.7",
        "--public-note",
        "Links to a phishing page.",
    ]);
    let e = newest_action(&s).await;
    assert_eq!(e["action"], "call_hidden", "{e}");
    assert_eq!(e["target"]["kind"], "call");
    assert_eq!(e["target"]["post_id"], call.as_str());
    assert_eq!(e["target"]["handle"], a.handle.as_str());
    assert_eq!(e["category"], "spam");
    assert_eq!(e["public_note"], "Links to a phishing page.");
    assert!(e["at"].is_string() && e["cursor"].is_string(), "{e}");
    let sub = sub_of(&e);
    assert!(sub.starts_with("agt_"), "{e}");
    // The author is told, with the same category and note.
    let told = s.get("/api/me/events", Some(&a.key)).await;
    let hidden = told.json["events"].as_array().unwrap().iter().find(|e| e["kind"] == "call_hidden").cloned();
    let hidden = hidden.expect("call_hidden in the author's inbox");
    assert_eq!(hidden["detail"]["category"], "spam");
    assert_eq!(hidden["detail"]["public_note"], "Links to a phishing page.");

    s.admin_ok(&["restore-call", &call]);
    let e = newest_action(&s).await;
    assert_eq!((e["action"].as_str(), e["category"].as_str()), (Some("call_restored"), Some("other")));
    assert_eq!(e["public_note"], Value::Null);
    s.admin_ok(&["suspend", &a.handle, "--category", "impersonation", "--public-note", "Poses as a bank."]);
    let e = newest_action(&s).await;
    assert_eq!(
        (e["action"].as_str(), e["category"].as_str()),
        (Some("agent_suspended"), Some("impersonation"))
    );
    assert_eq!((e["target"]["kind"].as_str(), sub_of(&e)), (Some("agent"), sub.clone()));
    s.admin_ok(&["restore", &a.handle, "--public-note", "Appeal accepted."]);
    assert_eq!(newest_action(&s).await["action"], "agent_restored");
    let renamed = format!("{}-re", a.handle);
    s.admin_ok(&["rename-agent", &a.handle, &renamed, "--category", "impersonation"]);
    let e = newest_action(&s).await;
    assert_eq!(e["action"], "agent_renamed");
    assert_eq!(e["target"]["handle"], a.handle.as_str(), "the handle at the time");
    assert_eq!(e["target"]["new_handle"], renamed.as_str());
    assert_eq!(sub_of(&e), sub, "the sub stays across the rename");
    s.admin_ok(&["verify-mailbox", &b.handle]);
    assert_eq!(newest_action(&s).await["action"], "mailbox_verified");
    s.admin_ok(&["claim-owner", &b.handle, "secret-owner@owners.example"]);
    assert_eq!(newest_action(&s).await["action"], "owner_claimed");
    s.admin_ok(&["unclaim-owner", &b.handle]);
    assert_eq!(newest_action(&s).await["action"], "owner_unclaimed");
    s.admin_ok(&["unverify-mailbox", &b.handle]);
    assert_eq!(newest_action(&s).await["action"], "mailbox_unverified");
    s.admin_ok(&["delete-agent", &b.handle, "--category", "spam"]);
    let e = newest_action(&s).await;
    assert_eq!(
        (e["action"].as_str(), e["target"]["handle"].as_str()),
        (Some("agent_deleted"), Some(b.handle.as_str()))
    );

    // Hide, suspend and delete need a category; a public note is one short line; a refused
    // command records nothing.
    let before = moderation_log(&s).await.len();
    assert_eq!(before, 10);
    assert!(!s.admin(&["hide-call", &call]).status.success());
    assert!(!s.admin(&["suspend", &renamed]).status.success());
    assert!(!s.admin(&["delete-agent", &renamed]).status.success());
    assert!(!s.admin(&["suspend", &renamed, "--category", "rude"]).status.success());
    let long = "x".repeat(501);
    assert!(!s.admin(&["suspend", &renamed, "--category", "spam", "--public-note", &long]).status.success());
    let two_lines = s.admin(&["restore", &renamed, "--public-note", "two\nlines"]);
    assert!(!two_lines.status.success());
    let said = String::from_utf8_lossy(&two_lines.stderr);
    assert!(said.contains("single line"), "{said}");
    assert!(!s.admin(&["claim-owner", &renamed, "not an email"]).status.success());
    assert_eq!(moderation_log(&s).await.len(), before);
    s.get("/api/me", Some(&a.key)).await.expect(200);
    // An action that finds the state already so changes and records nothing: the public log
    // holds what changed, and each suspension in it weighs on the agent's evidence.
    let audited = s.admin_ok(&["audit", "--limit", "1000"]).lines().count();
    for already in [
        vec!["restore", renamed.as_str()],
        vec!["restore-call", call.as_str()],
        vec!["unverify-mailbox", renamed.as_str()],
        vec!["unclaim-owner", renamed.as_str()],
    ] {
        let said = s.admin_ok(&already);
        assert!(said.contains("nothing recorded"), "{already:?}: {said}");
    }
    s.admin_ok(&["suspend", &renamed, "--category", "spam"]);
    assert!(s.admin_ok(&["suspend", &renamed, "--category", "spam"]).contains("nothing recorded"));
    s.admin_ok(&["restore", &renamed]);
    assert_eq!(moderation_log(&s).await.len(), before + 2, "one suspension, one restore");
    assert_eq!(s.admin_ok(&["audit", "--limit", "1000"]).lines().count(), audited + 2);
    s.get("/api/me", Some(&a.key)).await.expect(200);
    let before = before + 2;

    // Nothing private: no reporter, no report text, no private reason, no operator, no owner
    // email, no mailbox, no client address.
    let text = serde_json::to_string(&moderation_log(&s).await).unwrap();
    for secret in
        [report, "private", "10.9.8.7", "127.0.0.1", "test-suite", "secret-owner", &a.mailbox, &b.mailbox]
    {
        assert!(!text.contains(secret), "{secret:?} in the public log: {text}");
    }

    // Paging and bad input.
    let r = s.get("/api/moderation?limit=3", None).await;
    assert_eq!(r.json["actions"].as_array().unwrap().len(), 3);
    let next = r.json["next"].as_str().unwrap().to_owned();
    assert_eq!(r.json["actions"][2]["cursor"], next.as_str());
    let rest = s.get(&format!("/api/moderation?after={next}&limit=1000"), None).await;
    assert_eq!(rest.json["actions"].as_array().unwrap().len(), before - 3);
    assert_eq!(rest.json["has_more"], false);
    // The newest cursor is taken; one past it was never issued (as the feed's).
    let newest = rest.json["next"].as_str().expect("next").to_owned();
    s.get(&format!("/api/moderation?after={newest}"), None).await.expect(200);
    let ahead = format!("{newest}0");
    for bad in
        ["after=A", "after=1_2", "limit=0", "limit=1001", &format!("after={ahead}"), "after=zzzzzzzzzzzz"]
    {
        let r = s.get(&format!("/api/moderation?{bad}"), None).await;
        r.expect_error(400, "validation_failed");
        assert!(
            r.text.contains(if bad.starts_with("after") { "after" } else { "limit" }),
            "{bad}: {}",
            r.text
        );
    }
}

#[tokio::test]
async fn earlier_operator_actions_of_the_audit_log_appear_in_the_public_log() {
    let mut s = Server::start().await;
    let a = s.register("mod-early").await;
    let call = post_call(&s, &a, "An early call").await;
    s.admin_ok(&["hide-call", &call, "--category", "spam", "--reason", "private reason"]);
    s.admin_ok(&["suspend", &a.handle, "--category", "abuse"]);
    let renamed = format!("{}-later", a.handle);
    s.admin_ok(&["rename-agent", &a.handle, &renamed]);
    let sub = newest_action(&s).await["target"]["sub"].clone();
    // As the database stood before the log: the audit log only.
    s.stop();
    {
        let db = rusqlite::Connection::open(s.data_dir.join("agentdir.sqlite3")).unwrap();
        db.execute_batch("DROP TABLE moderation_log; DELETE FROM schema_migrations WHERE version = 14;")
            .unwrap();
    }
    s.restart();
    let log = moderation_log(&s).await;
    let actions: Vec<&str> = log.iter().map(|e| e["action"].as_str().unwrap()).collect();
    assert_eq!(actions, ["call_hidden", "agent_suspended", "agent_renamed"], "{log:?}");
    for e in &log {
        assert_eq!(e["category"], "other", "{e}");
        assert_eq!(e["public_note"], Value::Null, "{e}");
        assert_eq!(e["target"]["sub"], sub, "{e}");
    }
    assert_eq!(log[0]["target"]["post_id"], call.as_str());
    assert_eq!(log[1]["target"]["handle"], a.handle.as_str());
    assert_eq!(log[2]["target"]["new_handle"], renamed.as_str());
    assert!(!serde_json::to_string(&log).unwrap().contains("private reason"));
}

/// The evidence `explain=true` shows for `handle` in a search for `q`.
async fn evidence_of(s: &Server, q: &str, handle: &str) -> f64 {
    let r = s.get(&format!("/api/agents?q={q}&explain=true&limit=100"), None).await;
    r.expect(200);
    let agents = r.json["agents"].as_array().unwrap().clone();
    let hit =
        agents.into_iter().find(|x| x["handle"] == handle).unwrap_or_else(|| panic!("{handle} not found"));
    hit["ranking"]["signals"]["evidence"].as_f64().expect("evidence")
}

#[tokio::test]
async fn explain_weighs_what_the_public_log_shows_of_an_agent_and_no_more() {
    let mut s = Server::start().await;
    let w = word("explained");
    let a = s.register("mod-explain").await;
    s.patch("/api/me", Some(&a.key), json!({"description_en": format!("Keeps {w} records.")}))
        .await
        .expect(200);
    let clean = evidence_of(&s, &w, &a.handle).await;

    // A private record of the audit log alone weighs nothing.
    {
        let db = rusqlite::Connection::open(s.data_dir.join("agentdir.sqlite3")).unwrap();
        db.execute(
            "INSERT INTO audit_log (action, target, actor, reason, at) VALUES ('suspend', ?1, 'x', NULL, 0)",
            [&a.handle],
        )
        .unwrap();
    }
    s.patch("/api/me", Some(&a.key), json!({"tagline": "Touched"})).await.expect(200);
    assert_eq!(evidence_of(&s, &w, &a.handle).await, clean);

    // A suspension the public log shows weighs, and keeps weighing after a rename.
    s.admin_ok(&["suspend", &a.handle, "--category", "spam"]);
    s.admin_ok(&["restore", &a.handle]);
    let penalised = evidence_of(&s, &w, &a.handle).await;
    assert!(penalised < clean, "{penalised} !< {clean}");
    let renamed = format!("{}-b", a.handle);
    s.post("/api/me/handle", Some(&a.key), json!({"handle": renamed})).await.expect(200);
    assert_eq!(evidence_of(&s, &w, &renamed).await, penalised);

    // A hidden call weighs too; and a restart, which reads every agent's evidence at once,
    // weighs the same.
    let call = s.seeking(&a, "A call the operator hides").await;
    s.admin_ok(&["hide-call", "--category", "spam", &call]);
    let hidden = evidence_of(&s, &w, &renamed).await;
    assert!(hidden < penalised, "{hidden} !< {penalised}");
    s.restart();
    assert_eq!(evidence_of(&s, &w, &renamed).await, hidden);
}
