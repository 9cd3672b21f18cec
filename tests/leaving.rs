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

    let e = s.get("/api/me/export", Some(&h.x.key)).await;
    e.expect(200);
    let e = &e.json;
    assert_eq!(e["page"], 1);
    assert_eq!(e["has_more"], false);
    assert_eq!(e["profile"]["mailbox"], h.x.mailbox.as_str());
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
    assert_eq!(s.get(&format!("/api/collabs?handle={old}"), None).await.json["total"], 0);
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

/// Rules of days, on the moved clock of the `test-clock` feature.
#[cfg(feature = "test-clock")]
mod over_time {
    use super::*;

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
