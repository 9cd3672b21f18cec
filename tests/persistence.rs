//! Restarting the server on the same data dir keeps everything: agents and keys, offerings,
//! calls and replies, requests in their states, collaborations, and search.

mod common;

use common::Server;
use serde_json::json;

#[tokio::test]
async fn everything_survives_a_restart() {
    let mut s = Server::start().await;
    let a = s.claimed("keep-a", "a@owners.example").await;
    let b = s.claimed("keep-b", "b@owners.example").await;
    let offering = s.offering(&b).await;
    s.patch(
        "/api/me",
        Some(&a.key),
        json!({"description_zh": "我们提供中文翻译和本地化服务", "contact_policy": {"weekly_cap": 7}}),
    )
    .await
    .expect(200);
    let call = s
        .post(
            "/api/posts",
            Some(&a.key),
            json!({"kind": "seeking", "title": "Persistent call", "body": "Survives restarts"}),
        )
        .await;
    let call_id = call.json["id"].as_str().unwrap().to_owned();
    s.post(&format!("/api/posts/{call_id}/replies"), Some(&b.key), json!({"body": "Still here"}))
        .await
        .expect(201);
    let req = s.request(&a, &b, &offering).await;
    s.post_empty(&format!("/api/requests/{req}/accept"), Some(&b.key)).await.expect(200);
    let collab = s
        .post(
            "/api/collabs",
            Some(&a.key),
            json!({"partner": b.handle, "summary": "Done", "request_id": req}),
        )
        .await;
    let collab_id = collab.json["collab"]["id"].as_str().unwrap().to_owned();
    s.post_empty(&format!("/api/collabs/{collab_id}/confirm"), Some(&b.key)).await.expect(200);

    let card_before = s.get(&format!("/api/agents/{}", a.handle), None).await.json;
    let stats_before = s.get("/api/stats", None).await.json;

    s.restart();

    // Keys still work (verified afresh: the in-memory cache is gone).
    s.get("/api/me", Some(&a.key)).await.expect(200);
    let card_after = s.get(&format!("/api/agents/{}", a.handle), None).await.json;
    assert_eq!(card_before, card_after);
    assert_eq!(card_after["agent"]["trust"]["level"], 2);
    assert_eq!(card_after["evidence"]["confirmed_collaborations"], 1);
    assert_eq!(stats_before, s.get("/api/stats", None).await.json);
    let detail = s.get(&format!("/api/posts/{call_id}"), None).await;
    assert_eq!(detail.json["replies"][0]["body"], "Still here");
    let r = s.get(&format!("/api/requests/{req}"), Some(&a.key)).await;
    assert_eq!(r.json["request"]["status"], "accepted");
    assert_eq!(r.json["request"]["mailboxes"]["recipient"], b.mailbox);
    assert_eq!(s.get("/api/collabs", None).await.json["collabs"][0]["id"], collab_id);
    // Search still finds what was indexed before the restart.
    assert_eq!(s.get("/api/agents?q=翻译", None).await.json["agents"][0]["handle"], a.handle);
    assert_eq!(s.get("/api/posts?q=persistent", None).await.json["posts"][0]["id"], call_id);
    // Writes still work, and state written before the restart still constrains them.
    let a_offering = s.offering(&a).await;
    s.request(&b, &a, &a_offering).await;
    let again =
        json!({"purpose": "p", "deliverable": "d", "compensation": "none", "offering_id": a_offering});
    s.post(&format!("/api/agents/{}/requests", a.handle), Some(&b.key), again)
        .await
        .expect_error(409, "already_pending");
}
