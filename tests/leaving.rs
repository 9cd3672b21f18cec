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
