//! Leaving and renaming through the real server: the export of everything held about an agent,
//! renames with their redirects and held handles, deletion with its undo by key recovery and its
//! final erasure, each over an agent with a full history (calls, replies, requests in every
//! state, confirmed collaborations with partners of distinct owners).

mod common;

use common::{Agent, Server};
use serde_json::{Value, json};

/// An agent `x` with a history touching three partners, each claimed by a different owner.
struct History {
    x: Agent,
    p1: Agent,
    p2: Agent,
    p3: Agent,
    x_call: String,
    p1_call: String,
    /// x ↔ p1 and p2 ↔ x, confirmed.
    confirmed: Vec<String>,
    /// x → p3, still proposed.
    proposed: String,
    /// p1 → x and x → p2.
    pending_in: String,
    pending_out: String,
    accepted: String,
    declined: String,
    withdrawn: String,
}

async fn propose(s: &Server, by: &Agent, partner: &Agent, summary: &str) -> String {
    let r =
        s.post("/api/collabs", Some(&by.key), json!({"partner": partner.handle, "summary": summary})).await;
    r.expect(201);
    r.json["collab"]["id"].as_str().unwrap().to_owned()
}

async fn history(s: &Server) -> History {
    let x = s.claimed("leaver", "owner-x@example.org").await;
    let p1 = s.claimed("partner", "owner-1@example.org").await;
    let p2 = s.claimed("partner", "owner-2@example.org").await;
    let p3 = s.claimed("partner", "owner-3@example.org").await;
    let offer_x = s.offering(&x).await;
    let offer_1 = s.offering(&p1).await;
    let offer_2 = s.offering(&p2).await;
    let offer_3 = s.offering(&p3).await;
    let x_call = s.seeking(&x, "Leaver seeks a translator").await;
    let p1_call = s.seeking(&p1, "Partner seeks a reviewer").await;
    s.post(&format!("/api/posts/{x_call}/replies"), Some(&p1.key), json!({"body": "I can translate it."}))
        .await
        .expect(201);
    s.post(&format!("/api/posts/{p1_call}/replies"), Some(&x.key), json!({"body": "Leaver can review it."}))
        .await
        .expect(201);

    let pending_in = s.request(&p1, &x, &offer_x).await;
    let pending_out = s.request(&x, &p2, &offer_2).await;
    let accepted = s.request(&x, &p1, &offer_1).await;
    s.post_empty(&format!("/api/requests/{accepted}/accept"), Some(&p1.key)).await.expect(200);
    let declined = s.request(&p2, &x, &offer_x).await;
    s.post_empty(&format!("/api/requests/{declined}/decline"), Some(&x.key)).await.expect(200);
    let withdrawn = s.request(&x, &p3, &offer_3).await;
    s.post_empty(&format!("/api/requests/{withdrawn}/withdraw"), Some(&x.key)).await.expect(200);

    let c1 = propose(s, &x, &p1, "Leaver and partner one translated a manual").await;
    s.post_empty(&format!("/api/collabs/{c1}/confirm"), Some(&p1.key)).await.expect(200);
    let c2 = propose(s, &p2, &x, "Partner two and the leaver reviewed a paper").await;
    s.post_empty(&format!("/api/collabs/{c2}/confirm"), Some(&x.key)).await.expect(200);
    let proposed = propose(s, &x, &p3, "Leaver proposes to partner three").await;
    History {
        x,
        p1,
        p2,
        p3,
        x_call,
        p1_call,
        confirmed: vec![c1, c2],
        proposed,
        pending_in,
        pending_out,
        accepted,
        declined,
        withdrawn,
    }
}

fn ids(list: &Value) -> Vec<String> {
    let mut ids: Vec<String> =
        list.as_array().unwrap().iter().map(|v| v["id"].as_str().unwrap().to_owned()).collect();
    ids.sort();
    ids
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

#[tokio::test]
async fn the_export_holds_everything_about_the_agent_with_its_private_parts() {
    let s = Server::start().await;
    let h = history(&s).await;
    s.get("/api/me/export", None).await.expect_error(401, "unauthorized");
    s.get("/api/me/export?page=0", Some(&h.x.key)).await.expect_error(400, "validation_failed");
    // A report x files of a request it received is x's; one of a call is filed without a key,
    // and is nobody's.
    let report = format!("/api/requests/{}/report", h.pending_in);
    s.post(&report, Some(&h.x.key), json!({"reason": "Off topic"})).await.expect(200);
    let report = format!("/api/posts/{}/report", h.p1_call);
    s.post(&report, None, json!({"reason": "Anonymous"})).await.expect(200);

    let e = s.get("/api/me/export", Some(&h.x.key)).await;
    e.expect(200);
    let e = &e.json;
    assert_eq!(e["page"], 1);
    assert_eq!(e["has_more"], false);
    assert_eq!(e["profile"]["mailbox"], h.x.mailbox.as_str());
    // The stable id statements and the moderation log name the agent by, as `GET /api/me` shows it.
    let sub = e["profile"]["sub"].as_str().expect("sub");
    assert!(sub.starts_with("agt_"), "{sub}");
    assert_eq!(s.get("/api/me", Some(&h.x.key)).await.json["sub"], sub);
    assert_eq!(e["profile"]["owner_email"], "owner-x@example.org");
    assert_eq!(e["profile"]["agent"]["handle"], h.x.handle.as_str());
    assert_eq!(e["profile"]["agent"]["offerings"].as_array().unwrap().len(), 1);
    assert_eq!(ids(&e["calls"]), vec![h.x_call.clone()]);
    assert_eq!(e["replies"].as_array().unwrap().len(), 1);
    assert_eq!(e["replies"][0]["post_id"], h.p1_call.as_str());
    assert_eq!(
        ids(&e["requests"]),
        sorted(vec![
            h.pending_in.clone(),
            h.pending_out.clone(),
            h.accepted.clone(),
            h.declined.clone(),
            h.withdrawn.clone()
        ])
    );
    let mut collabs = h.confirmed.clone();
    collabs.push(h.proposed.clone());
    assert_eq!(ids(&e["collaborations"]), sorted(collabs));
    assert_eq!(e["totals"]["requests"], 5);
    assert_eq!(e["totals"]["reports"], 1);
    let filed = &e["reports"][0];
    assert_eq!(filed["target_kind"], "request");
    assert_eq!(filed["target_id"], h.pending_in.as_str());
    assert_eq!(filed["reason"], "Off topic");
    assert_eq!(filed["resolved_at"], Value::Null);

    // Past the last page: the profile again, empty lists.
    let next = s.get("/api/me/export?page=2", Some(&h.x.key)).await;
    next.expect(200);
    assert_eq!(next.json["profile"]["mailbox"], h.x.mailbox.as_str());
    assert_eq!(next.json["calls"].as_array().unwrap().len(), 0);
    assert_eq!(next.json["totals"]["calls"], 1);

    // Someone else's export holds nothing of x's private parts.
    let other = s.get("/api/me/export", Some(&h.p3.key)).await;
    assert!(!other.text.contains(&h.x.mailbox), "p3's export shows x's mailbox");
}

/// A client that shows redirects instead of following them.
fn no_redirects() -> reqwest::Client {
    reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap()
}

async fn status_and_location(s: &Server, path: &str) -> (u16, Option<String>) {
    let r = no_redirects().get(s.url(path)).send().await.unwrap();
    let location = r.headers().get("location").map(|v| v.to_str().unwrap().to_owned());
    (r.status().as_u16(), location)
}

async fn rename(s: &Server, a: &Agent, to: &str) -> common::Resp {
    s.post("/api/me/handle", Some(&a.key), json!({"handle": to})).await
}

/// The MCP tool `get_agent` for `handle`, through the rmcp client.
async fn mcp_get_agent(s: &Server, handle: &str) -> rmcp::model::CallToolResult {
    use rmcp::ServiceExt;
    use rmcp::model::{CallToolRequestParams, ClientConfig};
    let transport = rmcp::transport::StreamableHttpClientTransport::from_uri(format!("{}/mcp", s.base));
    let client = ClientConfig::default().serve(transport).await.expect("MCP client connects");
    let args = json!({"handle": handle}).as_object().unwrap().clone();
    let result = client
        .call_tool(CallToolRequestParams::new("get_agent").with_arguments(args))
        .await
        .expect("get_agent answers");
    let _ = client.cancel().await;
    result
}

#[tokio::test]
async fn a_rename_keeps_everything_and_the_old_handle_redirects() {
    let s = Server::start().await;
    let h = history(&s).await;
    let old = h.x.handle.clone();
    let new = common::unique_handle("renamed");
    let copy = tempfile::tempdir().unwrap();
    let copy = copy.path().join("mirror.json");
    assert_eq!(common::mirror::run(&s.base, &copy), common::mirror::lists(&s).await);

    // Refused renames change nothing.
    rename(&s, &h.x, "admin").await.expect_error(409, "handle_reserved");
    rename(&s, &h.x, &h.p1.handle).await.expect_error(409, "handle_taken");
    rename(&s, &h.x, &old).await.expect_error(409, "handle_taken");
    rename(&s, &h.x, "Not A Handle").await.expect_error(400, "validation_failed");
    s.post("/api/me/handle", None, json!({"handle": new})).await.expect_error(401, "unauthorized");
    s.get(&format!("/api/agents/{old}"), None).await.expect(200);

    let r = rename(&s, &h.x, &new).await;
    r.expect(200);
    assert_eq!(r.json["previous_handle"], old.as_str());
    assert_eq!(r.json["profile"]["agent"]["handle"], new.as_str());
    assert_eq!(r.json["profile"]["mailbox"], h.x.mailbox.as_str());

    // The old handle answers 301 to the new card; the card keeps its evidence.
    assert_eq!(
        status_and_location(&s, &format!("/api/agents/{old}")).await,
        (301, Some(format!("/api/agents/{new}")))
    );
    // Neither the API's 301 nor the page's may be kept without asking again: the handle may lead
    // elsewhere later (another agent's, or this agent's own again).
    for path in
        [format!("/api/agents/{old}"), format!("/agents/{old}"), format!("/api/agents/{old}/statement")]
    {
        let r = no_redirects().get(s.url(&path)).send().await.unwrap();
        assert_eq!(r.status().as_u16(), 301, "{path}");
        let cache = r.headers().get("cache-control").map(|v| v.to_str().unwrap().to_owned());
        assert_eq!(cache.as_deref(), Some("no-cache"), "{path}");
    }
    let card = s.get(&format!("/api/agents/{new}"), None).await;
    card.expect(200);
    assert_eq!(card.json["evidence"]["confirmed_collaborations"], 2);
    assert_eq!(card.json["recent_posts"][0]["id"], h.x_call.as_str());
    // The key still works; the profile says the new handle.
    assert_eq!(s.get("/api/me", Some(&h.x.key)).await.json["agent"]["handle"], new.as_str());

    // Every public read shows the new handle at once.
    let call = s.get(&format!("/api/posts/{}", h.x_call), None).await;
    assert_eq!(call.json["post"]["author"]["handle"], new.as_str());
    let replied = s.get(&format!("/api/posts/{}", h.p1_call), None).await;
    assert_eq!(replied.json["replies"][0]["author"]["handle"], new.as_str());
    assert_eq!(s.get(&format!("/api/collabs?handle={new}"), None).await.json["total"], 2);
    // The previous handle, held for the agent, lists the same collaborations (as its card 301s).
    assert_eq!(s.get(&format!("/api/collabs?handle={old}"), None).await.json["total"], 2);
    let found = s.get(&format!("/api/agents?q={new}"), None).await;
    assert_eq!(found.json["agents"][0]["handle"], new.as_str());
    // (Its name still holds the old handle, so a text search may find it, under the new one.)
    let by_old = s.get(&format!("/api/agents?q={old}"), None).await;
    assert!(by_old.json["agents"].as_array().unwrap().iter().all(|a| a["handle"] != old.as_str()));
    // The partners' records name the new handle.
    let theirs = s.get(&format!("/api/requests/{}", h.accepted), Some(&h.p1.key)).await;
    assert_eq!(theirs.json["request"]["sender"]["handle"], new.as_str());

    // The feed: delete for the old handle, upsert for the new; the mirror follows.
    let feed = s.get("/api/changes?limit=1000", None).await;
    let entry = |id: &str| {
        feed.json["changes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["kind"] == "agent" && c["id"] == id)
            .cloned()
    };
    assert_eq!(entry(&old).expect("old handle in the feed")["op"], "delete");
    assert_eq!(entry(&new).expect("new handle in the feed")["op"], "upsert");
    assert_eq!(common::mirror::run(&s.base, &copy), common::mirror::lists(&s).await);

    // MCP get_agent follows the rename and says so.
    let followed = mcp_get_agent(&s, &old).await;
    let body = followed.structured_content.clone().expect("structured content");
    assert_eq!(body["agent"]["handle"], new.as_str());
    assert_eq!(body["moved_from"], old.as_str());
    let shown: String = followed.content.iter().filter_map(|c| c.as_text().map(|t| t.text.clone())).collect();
    assert!(shown.contains(&format!("{old} is now {new}")), "{shown}");

    // Nobody can take the old handle; a second rename within 30 days is refused.
    s.post("/api/agents", None, registration(&old)).await.expect_error(409, "handle_taken");
    rename(&s, &h.p1, &old).await.expect_error(409, "handle_taken");
    let again = rename(&s, &h.x, &common::unique_handle("again")).await;
    again.expect_error(429, "rate_limited");
    let wait: u64 = again.header("retry-after").expect("Retry-After").parse().unwrap();
    assert!(wait > 29 * 86_400 && wait <= 30 * 86_400, "Retry-After {wait}");

    // The export lists the held handle; a restart keeps it all.
    let export = s.get("/api/me/export", Some(&h.x.key)).await;
    assert_eq!(export.json["held_handles"][0]["handle"], old.as_str());
    let mut s = s;
    s.restart();
    assert_eq!(status_and_location(&s, &format!("/api/agents/{old}")).await.0, 301);
    s.post("/api/agents", None, registration(&old)).await.expect_error(409, "handle_taken");
}

fn registration(handle: &str) -> Value {
    json!({
        "handle": handle, "name": "Newcomer", "owner": "Someone Else",
        "mailbox": format!("{handle}@example.net"), "accept_rules": true,
        "description_en": "Wants a handle that was taken.",
    })
}

/// Recovers `a`'s key through its mailbox; returns the new key.
async fn recover(s: &Server, a: &Agent) -> String {
    use common::mail::{deliver, dkim_pass, message};
    let started = s.post_empty(&format!("/api/agents/{}/recover", a.handle), None).await;
    started.expect(200);
    let token = started.json["recovery_token"].as_str().unwrap().to_owned();
    let subject = started.json["subject"].as_str().unwrap();
    let (code, err) = deliver(s, &message(&a.mailbox, subject, &dkim_pass(&a.mailbox)));
    assert_eq!(code, 0, "{err}");
    let done = s.post("/api/recover", None, json!({"recovery_token": token})).await;
    done.expect(200);
    done.json["api_key"].as_str().unwrap().to_owned()
}

fn evidence(card: &common::Resp) -> u64 {
    card.json["evidence"]["confirmed_collaborations"].as_u64().unwrap()
}

/// What public reads show of `h` right after x's deletion (and again after its erasure).
async fn nothing_public_of_x(s: &Server, h: &History) {
    s.get(&format!("/api/agents/{}", h.x.handle), None).await.expect_error(404, "not_found");
    assert_eq!(status_and_location(s, &format!("/api/agents/{}", h.x.handle)).await.0, 404);
    s.get(&format!("/api/posts/{}", h.x_call), None).await.expect_error(404, "not_found");
    let theirs = s.get(&format!("/api/posts/{}", h.p1_call), None).await;
    assert_eq!(theirs.json["replies"].as_array().unwrap().len(), 0, "x's reply is still shown");
    assert_eq!(theirs.json["post"]["reply_count"], 0);
    assert_eq!(s.get(&format!("/api/collabs?handle={}", h.p1.handle), None).await.json["total"], 0);
    assert_eq!(s.get(&format!("/api/collabs?handle={}", h.x.handle), None).await.json["total"], 0);
    for p in [&h.p1, &h.p2] {
        assert_eq!(evidence(&s.get(&format!("/api/agents/{}", p.handle), None).await), 0, "{}", p.handle);
    }
    let found = s.get("/api/agents?q=leaver", None).await;
    assert!(!found.text.contains(&h.x.handle), "search still finds x: {}", found.text);
    assert_eq!(s.get("/api/posts?q=translator", None).await.json["total"], 0);
    let mcp = mcp_get_agent(s, &h.x.handle).await;
    assert_eq!(mcp.is_error, Some(true));
    // The partners' own records stay, showing x as `deleted`, without its texts or mailbox.
    let accepted = s.get(&format!("/api/requests/{}", h.accepted), Some(&h.p1.key)).await;
    accepted.expect(200);
    assert_eq!(accepted.json["request"]["sender"]["handle"], "deleted");
    assert_eq!(accepted.json["request"]["purpose"], "");
    assert!(accepted.json["request"]["mailboxes"].is_null(), "{}", accepted.text);
    assert!(!accepted.text.contains(&h.x.mailbox));
    let mine = s.get("/api/me/collabs", Some(&h.p1.key)).await;
    assert_eq!(mine.json["collabs"][0]["proposer"]["handle"], "deleted");
    assert_eq!(mine.json["collabs"][0]["summary"], "");
    assert_eq!(mine.json["collabs"][0]["status"], "confirmed");
}

#[tokio::test]
async fn a_deletion_hides_everything_at_once_and_a_recovery_undoes_it() {
    let mut s = common::mail::server().await;
    let h = history(&s).await;
    let copy = tempfile::tempdir().unwrap();
    let copy = copy.path().join("mirror.json");
    let before = common::mirror::lists(&s).await;
    assert_eq!(common::mirror::run(&s.base, &copy), before);
    let stats = s.get("/api/stats", None).await.json;
    assert_eq!(evidence(&s.get(&format!("/api/agents/{}", h.p1.handle), None).await), 1);

    s.delete("/api/me", None).await.expect_error(401, "unauthorized");
    let r = s.delete("/api/me", Some(&h.x.key)).await;
    r.expect(200);
    let removed = &r.json["removed"];
    assert_eq!(
        removed,
        &json!({"calls": 1, "replies": 1, "offerings": 1, "link_proofs": 0, "collaborations": 2,
                "requests_withdrawn": 1, "requests_declined": 1, "proposals_declined": 1})
    );
    assert_eq!(r.json["handle"], h.x.handle.as_str());
    assert!(r.json["how_zh"].as_str().unwrap().contains("/recover"));
    // Its key is dead.
    s.get("/api/me", Some(&h.x.key)).await.expect_error(401, "unauthorized");
    s.delete("/api/me", Some(&h.x.key)).await.expect_error(401, "unauthorized");

    nothing_public_of_x(&s, &h).await;
    // Pending requests were closed (received: declined; sent: withdrawn); the proposal to p3
    // declined.
    let status = |r: common::Resp| r.json["request"]["status"].as_str().unwrap().to_owned();
    assert_eq!(status(s.get(&format!("/api/requests/{}", h.pending_in), Some(&h.p1.key)).await), "declined");
    assert_eq!(
        status(s.get(&format!("/api/requests/{}", h.pending_out), Some(&h.p2.key)).await),
        "withdrawn"
    );
    assert_eq!(status(s.get(&format!("/api/requests/{}", h.declined), Some(&h.p2.key)).await), "declined");
    assert_eq!(status(s.get(&format!("/api/requests/{}", h.withdrawn), Some(&h.p3.key)).await), "withdrawn");
    let p3 = s.get("/api/me/collabs", Some(&h.p3.key)).await;
    assert_eq!(p3.json["collabs"][0]["id"], h.proposed.as_str());
    assert_eq!(p3.json["collabs"][0]["status"], "declined");
    // Every count adjusts.
    let after = s.get("/api/stats", None).await.json;
    for (field, less) in [("agents", 1), ("posts", 1), ("replies", 2), ("confirmed_collaborations", 2)] {
        assert_eq!(after[field].as_u64().unwrap() + less, stats[field].as_u64().unwrap(), "{field}");
    }
    // The feed says delete for the agent, its call and its collaborations; the mirror follows.
    let feed = s.get("/api/changes?limit=1000", None).await;
    for (kind, id) in [
        ("agent", &h.x.handle),
        ("call", &h.x_call),
        ("collab", &h.confirmed[0]),
        ("collab", &h.confirmed[1]),
    ] {
        let entry = feed.json["changes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["kind"] == kind && c["id"] == id.as_str());
        assert_eq!(entry.expect("in the feed")["op"], "delete", "{kind} {id}");
    }
    assert_eq!(common::mirror::run(&s.base, &copy), common::mirror::lists(&s).await);
    // The handle is held.
    s.post("/api/agents", None, registration(&h.x.handle)).await.expect_error(409, "handle_taken");

    // A restart keeps it so.
    s.restart();
    nothing_public_of_x(&s, &h).await;

    // A key recovery through the mailbox undoes the deletion.
    let key = recover(&s, &h.x).await;
    let card = s.get(&format!("/api/agents/{}", h.x.handle), None).await;
    card.expect(200);
    assert_eq!(evidence(&card), 2);
    assert_eq!(evidence(&s.get(&format!("/api/agents/{}", h.p1.handle), None).await), 1);
    s.get(&format!("/api/posts/{}", h.x_call), None).await.expect(200);
    assert_eq!(s.get(&format!("/api/posts/{}", h.p1_call), None).await.json["post"]["reply_count"], 1);
    assert_eq!(s.get("/api/me", Some(&key)).await.json["mailbox"], h.x.mailbox.as_str());
    let accepted = s.get(&format!("/api/requests/{}", h.accepted), Some(&h.p1.key)).await;
    assert_eq!(accepted.json["request"]["sender"]["handle"], h.x.handle.as_str());
    assert_eq!(accepted.json["request"]["mailboxes"]["sender"], h.x.mailbox.as_str());
    let restored = s.get("/api/stats", None).await.json;
    assert_eq!(restored, stats);
    let lists = common::mirror::lists(&s).await;
    assert_eq!(lists.keys().collect::<Vec<_>>(), before.keys().collect::<Vec<_>>());
    assert_eq!(common::mirror::run(&s.base, &copy), lists);
    let audit = s.admin_ok(&["audit"]);
    for action in ["\"delete\"", "delete-undone", "recovery-completed"] {
        assert!(audit.contains(action), "{action} not in the audit log:\n{audit}");
    }
}

#[tokio::test]
async fn an_operator_deletes_and_renames_with_a_reason() {
    let s = Server::start().await;
    let a = s.register("operated").await;
    let b = s.register("operated").await;
    let new = common::unique_handle("moved");
    let out = s.admin(&["rename-agent", &a.handle, "admin", "--reason", "asked to"]);
    assert!(!out.status.success(), "a reserved handle was given");
    s.admin_ok(&["rename-agent", &a.handle, &new, "--reason", "trademark"]);
    assert_eq!(status_and_location(&s, &format!("/api/agents/{}", a.handle)).await.0, 301);
    // An operator is not bound by the once-in-30-days rule, and does not spend the agent's.
    let again = common::unique_handle("again");
    s.admin_ok(&["rename-agent", &new, &again, "--reason", "typo"]);
    let own = common::unique_handle("own");
    let r = s.post("/api/me/handle", Some(&a.key), json!({"handle": own})).await;
    assert_eq!(r.status, 200, "the agent's own first rename after an operator's: {}", r.text);
    let refused =
        s.post("/api/me/handle", Some(&a.key), json!({"handle": common::unique_handle("second")})).await;
    refused.expect_error(429, "rate_limited");
    s.admin_ok(&["rename-agent", &own, &common::unique_handle("third"), "--reason", "typo"]);
    let still =
        s.post("/api/me/handle", Some(&a.key), json!({"handle": common::unique_handle("fourth")})).await;
    still.expect_error(429, "rate_limited");

    s.admin_ok(&["suspend", "--category", "abuse", &b.handle, "--reason", "spam"]);
    let deleted: Value = serde_json::from_str(&s.admin_ok(&[
        "delete-agent",
        "--category",
        "other",
        &b.handle,
        "--reason",
        "spam",
    ]))
    .unwrap();
    assert!(deleted["handle_held_until"].is_null(), "a suspended agent's handle is held for good");
    let audit = s.admin_ok(&["audit"]);
    for needle in ["rename-agent", "trademark", "delete-agent", "spam"] {
        assert!(audit.contains(needle), "{needle} not in the audit log");
    }
    s.post("/api/agents", None, registration(&b.handle)).await.expect_error(409, "handle_taken");

    // An operator's deletion undone by the agent's own key recovery: the public log says the
    // agent is back, instead of going on saying it was deleted.
    let c = s.register("operated").await;
    s.admin_ok(&["delete-agent", "--category", "spam", &c.handle, "--public-note", "Spam agent removed"]);
    let key = recover(&s, &c).await;
    s.get(&format!("/api/agents/{}", c.handle), None).await.expect(200);
    // The agent back reads why it was gone.
    let inbox = s.get("/api/me/events?limit=100", Some(&key)).await;
    let deleted: Vec<&Value> =
        inbox.json["events"].as_array().unwrap().iter().filter(|e| e["kind"] == "deleted").collect();
    assert_eq!(deleted.len(), 1, "{}", inbox.text);
    assert_eq!(deleted[0]["detail"]["category"], "spam", "{}", inbox.text);
    assert_eq!(deleted[0]["detail"]["public_note"], "Spam agent removed", "{}", inbox.text);
    let log = s.get("/api/moderation?limit=100", None).await;
    let about_c: Vec<&Value> = log.json["actions"]
        .as_array()
        .expect("actions")
        .iter()
        .filter(|e| e["target"]["handle"] == c.handle.as_str())
        .collect();
    let actions: Vec<&str> = about_c.iter().map(|e| e["action"].as_str().unwrap()).collect();
    assert_eq!(actions, ["agent_deleted", "agent_restored"], "{}", log.text);
    assert!(about_c[1]["public_note"].as_str().unwrap().contains("key recovery"), "{}", log.text);
}

/// Rules of days, on the moved clock of the `test-clock` feature.
#[cfg(feature = "test-clock")]
mod over_time {
    use super::*;

    #[tokio::test]
    async fn after_seven_days_the_erasure_is_final_and_keeps_only_what_others_need() {
        let mut s = common::mail::server().await;
        let h = history(&s).await;
        // A request nobody answers expires (the last state a request can be in).
        let card = s.get(&format!("/api/agents/{}", h.x.handle), None).await;
        let offer_x = card.json["agent"]["offerings"][0]["id"].as_str().unwrap().to_owned();
        let expiring = s.request(&h.p3, &h.x, &offer_x).await;
        s.clock_ahead_days(15.0);
        let path = format!("/api/requests/{expiring}");
        assert_eq!(s.get(&path, Some(&h.p3.key)).await.json["request"]["status"], "expired");
        let copy = tempfile::tempdir().unwrap();
        let copy = copy.path().join("mirror.json");
        common::mirror::run(&s.base, &copy);
        // The vector of its profile (and the hash of its text) is kept until the erasure.
        let db = rusqlite::Connection::open(s.data_dir.join("agentdir.sqlite3")).unwrap();
        let x_id: i64 =
            db.query_row("SELECT id FROM agents WHERE handle = ?1", [&h.x.handle], |r| r.get(0)).unwrap();
        let vectors = || -> i64 {
            db.query_row("SELECT COUNT(*) FROM agent_vectors WHERE agent_id = ?1", [x_id], |r| r.get(0))
                .unwrap()
        };
        assert_eq!(vectors(), 1, "the model computed no vector for x: the check below would prove nothing");
        s.delete("/api/me", Some(&h.x.key)).await.expect(200);
        assert_eq!(vectors(), 1, "a deletion that can be undone keeps the vector");
        let theirs = s.get(&path, Some(&h.p3.key)).await;
        assert_eq!(theirs.json["request"]["status"], "expired", "{}", theirs.text);
        assert_eq!(theirs.json["request"]["recipient"]["handle"], "deleted");

        // Past the undo time, the server's upkeep erases it at start (polled: the test waits
        // for that pass, not for time to pass).
        s.clock_ahead_days(15.0 + 7.5);
        let erased = (0..600).any(|_| {
            std::thread::sleep(std::time::Duration::from_millis(50));
            s.admin_ok(&["audit"]).contains("\"erase\"")
        });
        assert!(erased, "the server did not erase the deleted agent");
        // Kept as a husk for the others' records, without the vector of its profile.
        let husk: i64 = db
            .query_row("SELECT COUNT(*) FROM agents WHERE id = ?1 AND erased_at IS NOT NULL", [x_id], |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(husk, 1);
        assert_eq!(vectors(), 0, "the erased agent's vector is still stored");
        drop(db);
        nothing_public_of_x(&s, &h).await;
        assert_eq!(common::mirror::run(&s.base, &copy), common::mirror::lists(&s).await);
        // Too late to recover; the handle is still held.
        s.post_empty(&format!("/api/agents/{}/recover", h.x.handle), None)
            .await
            .expect_error(404, "not_found");
        s.post("/api/agents", None, registration(&h.x.handle)).await.expect_error(409, "handle_taken");
        // The partners keep their records.
        assert_eq!(s.get("/api/me/requests", Some(&h.p1.key)).await.json["total"], 2);
        assert_eq!(s.get(&path, Some(&h.p3.key)).await.json["request"]["recipient"]["handle"], "deleted");
        let erased_call = s.get(&format!("/api/posts/{}", h.x_call), None).await;
        erased_call.expect_error(404, "not_found");

        // Nothing of x's own texts or mailbox is left in the database file (secure_delete).
        s.stop();
        let db = std::fs::read(s.data_dir.join("agentdir.sqlite3")).unwrap();
        let contains = |needle: &str| db.windows(needle.len()).any(|w| w == needle.as_bytes());
        for text in [
            h.x.mailbox.as_str(),
            "Leaver seeks a translator",
            "Leaver can review it.",
            "Leaver and partner one translated a manual",
            "owner-x@example.org",
        ] {
            assert!(!contains(text), "{text:?} is still in the database file");
        }
        // What others wrote stays for them.
        assert!(contains("Partner two and the leaver reviewed a paper"));

        // 180 days after the deletion the handle can be registered again.
        s.clock_ahead_days(15.0 + 181.0);
        s.post("/api/agents", None, registration(&h.x.handle)).await.expect(201);
    }

    /// The operator's `erase-deleted` on an agent kept as a husk (a request refers to it) that
    /// changed its mailbox just before its deletion: neither mailbox (the one the change
    /// replaced was remembered, as it could recover the agent) nor its profile's vector stays.
    #[tokio::test]
    async fn an_erasure_leaves_neither_mailbox_nor_the_vector() {
        let mut s = common::mail::server().await;
        let x = s.verified("erased").await;
        let p = s.verified("partner").await;
        let offering = s.offering(&p).await;
        s.request(&x, &p, &offering).await;
        let new_mailbox = format!("{}-new@example.org", x.handle);
        s.patch("/api/me", Some(&x.key), json!({"mailbox": new_mailbox})).await.expect(200);
        let export = s.get("/api/me/export", Some(&x.key)).await;
        assert_eq!(export.json["previous_mailbox"]["mailbox"], x.mailbox.as_str(), "{}", export.text);
        s.delete("/api/me", Some(&x.key)).await.expect(200);
        let path = s.data_dir.join("agentdir.sqlite3");
        let id: i64 = rusqlite::Connection::open(&path)
            .unwrap()
            .query_row("SELECT id FROM agents WHERE handle = ?1", [&x.handle], |r| r.get(0))
            .unwrap();
        let stored = |sql: &str| -> i64 {
            rusqlite::Connection::open(&path).unwrap().query_row(sql, [id], |r| r.get(0)).unwrap()
        };
        let vectors = "SELECT COUNT(*) FROM agent_vectors WHERE agent_id = ?1";
        let remembered = "SELECT COUNT(*) FROM agents WHERE id = ?1 AND previous_mailbox IS NOT NULL";
        assert_eq!(stored(vectors), 1, "the model computed no vector: the check below would prove nothing");
        assert_eq!(stored(remembered), 1);

        // The operator's command alone, past the undo time (no server upkeep runs meanwhile).
        s.stop();
        s.clock_ahead(std::time::Duration::from_secs(8 * 86_400));
        let erased: Value = serde_json::from_str(&s.admin_ok(&["erase-deleted"])).unwrap();
        assert_eq!(erased["agents"], 1);
        let husk = "SELECT COUNT(*) FROM agents WHERE id = ?1 AND erased_at IS NOT NULL";
        assert_eq!(stored(husk), 1, "x is not kept as a husk: this test would not see its row");
        assert_eq!(stored(vectors), 0, "the erased agent's vector is still stored");
        assert_eq!(stored(remembered), 0, "the erased agent's previous mailbox is still stored");
        let db = std::fs::read(&path).unwrap();
        for mailbox in [&x.mailbox, &new_mailbox] {
            assert!(!db.windows(mailbox.len()).any(|w| w == mailbox.as_bytes()), "{mailbox} is in the file");
        }
    }

    /// An agent that deleted itself and was then suspended (an impersonator leaving as the
    /// operator acts) keeps its handle out of reach for good, as one suspended first does; a
    /// restore gives the hold its 180 days back.
    #[tokio::test]
    async fn a_suspension_after_the_deletion_holds_the_handle_for_good() {
        let mut s = common::mail::server().await;
        let (x, y) = (s.register("imposter").await, s.register("regretted").await);
        for a in [&x, &y] {
            s.delete("/api/me", Some(&a.key)).await.expect(200);
            s.admin_ok(&[
                "suspend",
                "--category",
                "impersonation",
                &a.handle,
                "--reason",
                "posed as another",
            ]);
        }
        s.admin_ok(&["restore", "--category", "other", &y.handle, "--reason", "a mistake"]);
        // Erased once the undo time is over (the command, so the start-up's upkeep cannot race
        // the registrations below), then past the 180 days of a hold.
        s.clock_ahead_days(8.0);
        s.admin_ok(&["erase-deleted"]);
        s.clock_ahead_days(8.0 + 181.0);
        s.post("/api/agents", None, registration(&x.handle)).await.expect_error(409, "handle_taken");
        s.post("/api/agents", None, registration(&y.handle)).await.expect(201);
    }

    #[tokio::test]
    async fn the_undo_ends_after_seven_days_even_before_the_erasure() {
        let mut s = common::mail::server().await;
        let x = s.register("late").await;
        s.delete("/api/me", Some(&x.key)).await.expect(200);
        s.clock_ahead_days(6.9);
        let key = recover(&s, &x).await;
        s.get(&format!("/api/agents/{}", x.handle), None).await.expect(200);
        let again = s.delete("/api/me", Some(&key)).await;
        again.expect(200);
        let erased: Value = serde_json::from_str(&s.admin_ok(&["erase-deleted"])).unwrap();
        assert_eq!(erased["agents"], 0, "erased within the undo time");
        s.clock_ahead_days(6.9 + 7.1);
        s.post_empty(&format!("/api/agents/{}/recover", x.handle), None).await.expect_error(404, "not_found");
    }

    #[tokio::test]
    async fn only_the_latest_old_handle_is_held_and_only_for_180_days() {
        let mut s = Server::start().await;
        let x = s.register("mover").await;
        let first = x.handle.clone();
        let second = common::unique_handle("second");
        let third = common::unique_handle("third");
        rename(&s, &x, &second).await.expect(200);

        s.clock_ahead_days(31.0);
        rename(&s, &x, &third).await.expect(200);
        // Only the most recent old handle is held: the first is free again.
        assert_eq!(status_and_location(&s, &format!("/api/agents/{first}")).await.0, 404);
        assert_eq!(
            status_and_location(&s, &format!("/api/agents/{second}")).await,
            (301, Some(format!("/api/agents/{third}")))
        );
        s.post("/api/agents", None, registration(&first)).await.expect(201);
        s.post("/api/agents", None, registration(&second)).await.expect_error(409, "handle_taken");

        // 180 days after the rename, the old handle is released.
        s.clock_ahead_days(31.0 + 181.0);
        assert_eq!(status_and_location(&s, &format!("/api/agents/{second}")).await.0, 404);
        s.post("/api/agents", None, registration(&second)).await.expect(201);
        assert_eq!(
            s.get(&format!("/api/agents/{third}"), None).await.json["agent"]["handle"],
            third.as_str()
        );
    }
}

/// A read replica over a copy of the primary's database taken after a rename and a deletion
/// (made with `agentdir admin backup`; the replica test runs Litestream for a followed copy):
/// it shows the same redirect, the same absences and the same feed, from its own index.
#[tokio::test]
async fn a_replica_shows_renames_and_deletions_as_the_primary_does() {
    let s = Server::start().await;
    let mover = s.register("replicated").await;
    let leaver = s.register("replicated").await;
    let call = s.seeking(&leaver, "Replicated call that will go").await;
    let new = common::unique_handle("replicated-new");
    rename(&s, &mover, &new).await.expect(200);
    s.delete("/api/me", Some(&leaver.key)).await.expect(200);

    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("agentdir.sqlite3");
    s.admin_ok(&["backup", copy.to_str().unwrap()]);
    // Beside it, the position file Litestream writes once a restore is done.
    std::fs::write(dir.path().join("agentdir.sqlite3-txid"), "0000000000000001").unwrap();
    let env: Vec<(&str, &str)> = common::RELAXED_LIMITS
        .iter()
        .copied()
        .chain([("AGENTDIR_ROLE", "replica"), ("AGENTDIR_PRIMARY_URL", s.base.as_str())])
        .collect();
    let replica = Server::start_in(dir.path(), &env).await;

    assert_eq!(
        status_and_location(&replica, &format!("/api/agents/{}", mover.handle)).await,
        (301, Some(format!("/api/agents/{new}")))
    );
    assert_eq!(replica.get(&format!("/api/agents/{new}"), None).await.json["agent"]["handle"], new.as_str());
    assert_eq!(
        mcp_get_agent(&replica, &mover.handle).await.structured_content.unwrap()["moved_from"],
        mover.handle.as_str()
    );
    replica.get(&format!("/api/agents/{}", leaver.handle), None).await.expect_error(404, "not_found");
    replica.get(&format!("/api/posts/{call}"), None).await.expect_error(404, "not_found");
    assert_eq!(replica.get("/api/posts?q=replicated", None).await.json["total"], 0);
    let found = replica.get("/api/agents?q=replicated", None).await;
    assert!(!found.text.contains(&format!("\"handle\":\"{}\"", leaver.handle)), "{}", found.text);
    // The same entries; their cursors name the copy's own feed (a backup draws a new epoch).
    let feed = |r: common::Resp| {
        let mut changes = r.json["changes"].as_array().unwrap().clone();
        for c in &mut changes {
            c.as_object_mut().unwrap().remove("cursor");
        }
        changes
    };
    assert_eq!(
        feed(replica.get("/api/changes?limit=1000", None).await),
        feed(s.get("/api/changes?limit=1000", None).await)
    );
    assert_eq!(replica.get("/api/stats", None).await.json, s.get("/api/stats", None).await.json);
}
