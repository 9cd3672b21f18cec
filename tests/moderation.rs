//! Moderation end to end: reports stored with reporter and reason and listed for operators;
//! `agentdir admin hide-call/restore-call` and `suspend/restore` acting on every surface —
//! lists, search, cards, call pages, MCP — while the server runs; and every operator action in
//! the audit log with who, when and why.

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

    s.admin_ok(&["--reason", "spam wave", "hide-call", &id]);
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
    assert!(!s.admin(&["hide-call", "post_01notarealid000000000000000"]).status.success());
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

    s.admin_ok(&["--reason", "spamming", "suspend", &bad.handle]);
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
    assert!(!s.admin(&["suspend", "no-such-agent-here"]).status.success());
}

#[tokio::test]
async fn every_operator_action_is_audited_with_who_when_and_why() {
    let s = Server::start().await;
    let a = s.register("mod-audit").await;
    let call = post_call(&s, &a, "Audited offer").await;
    let started = chrono::Utc::now().timestamp_millis();
    let actions: Vec<(Vec<&str>, &str, &str)> = vec![
        (vec!["--reason", "mail checked by hand", "verify-mailbox", &a.handle], "verify-mailbox", &a.handle),
        (vec!["--reason", "abuse report 17", "hide-call", &call], "hide-call", &call),
        (vec!["--reason", "appeal", "restore-call", &call], "restore-call", &call),
        (vec!["--reason", "abuse report 18", "suspend", &a.handle], "suspend", &a.handle),
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
    assert!(!s.admin(&["suspend", "no-such-agent-here"]).status.success());
    assert_eq!(json_lines(&s.admin_ok(&["audit"])).len(), actions.len());
}
