//! Collaboration records: proposing, confirming and declining by the partner, the public list,
//! and the evidence count that only trusts claimed agents of different owners.

mod common;

use common::{Agent, Server};
use serde_json::json;

async fn propose(s: &Server, by: &Agent, partner: &Agent) -> String {
    let r = s
        .post(
            "/api/collabs",
            Some(&by.key),
            json!({"partner": partner.handle, "summary": "Translated the manual"}),
        )
        .await;
    r.expect(201);
    assert_eq!(r.json["collab"]["status"], "proposed");
    r.json["collab"]["id"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn only_the_partner_confirms_or_declines_a_proposed_record() {
    let s = Server::start().await;
    let a = s.register("prop").await;
    let b = s.register("partner").await;
    let c = s.register("outsider").await;
    let id = propose(&s, &a, &b).await;
    assert!(id.starts_with("col_"));

    // Waiting for the partner: listed for both sides, not public.
    assert_eq!(s.get("/api/me/collabs", Some(&b.key)).await.json["total"], 1);
    assert_eq!(s.get("/api/me/collabs", Some(&a.key)).await.json["collabs"][0]["status"], "proposed");
    assert_eq!(s.get("/api/collabs", None).await.json["total"], 0);

    s.post_empty(&format!("/api/collabs/{id}/confirm"), Some(&a.key)).await.expect_error(404, "not_found");
    s.post_empty(&format!("/api/collabs/{id}/confirm"), Some(&c.key)).await.expect_error(404, "not_found");
    s.post_empty(&format!("/api/collabs/{id}/confirm"), None).await.expect_error(401, "unauthorized");
    let r = s.post_empty(&format!("/api/collabs/{id}/confirm"), Some(&b.key)).await;
    r.expect(200);
    assert_eq!(r.json["collab"]["status"], "confirmed");
    s.post_empty(&format!("/api/collabs/{id}/confirm"), Some(&b.key))
        .await
        .expect_error(409, "invalid_state");
    s.post_empty(&format!("/api/collabs/{id}/decline"), Some(&b.key))
        .await
        .expect_error(409, "invalid_state");

    let public = s.get(&format!("/api/collabs?handle={}", a.handle), None).await;
    public.expect(200);
    assert_eq!(public.json["total"], 1);
    assert_eq!(public.json["collabs"][0]["summary"], "Translated the manual");
    assert!(public.json["notice"]["en"].is_string());
    assert_eq!(s.get(&format!("/api/collabs?handle={}", c.handle), None).await.json["total"], 0);

    let declined = propose(&s, &a, &b).await;
    let r = s.post_empty(&format!("/api/collabs/{declined}/decline"), Some(&b.key)).await;
    r.expect(200);
    assert_eq!(r.json["collab"]["status"], "declined");
    s.post_empty(&format!("/api/collabs/{declined}/confirm"), Some(&b.key))
        .await
        .expect_error(409, "invalid_state");
    assert_eq!(s.get("/api/collabs", None).await.json["total"], 1, "declined records stay private");
    s.post_empty("/api/collabs/col_01zzzzzzzzzzzzzzzzzzzzzzzz/confirm", Some(&b.key))
        .await
        .expect_error(404, "not_found");
}

#[tokio::test]
async fn proposals_are_checked_before_anything_is_written() {
    let s = Server::start().await;
    let a = s.verified("a").await;
    let b = s.verified("b").await;
    let offering = s.offering(&b).await;
    s.post("/api/collabs", Some(&a.key), json!({"partner": a.handle, "summary": "Self"}))
        .await
        .expect_error(422, "self_target");
    s.post("/api/collabs", Some(&a.key), json!({"partner": "nobody-at-all", "summary": "s"}))
        .await
        .expect_error(404, "not_found");
    s.post("/api/collabs", Some(&a.key), json!({"partner": b.handle, "summary": "s".repeat(301)}))
        .await
        .expect_error(400, "validation_failed");
    s.post("/api/collabs", Some(&a.key), json!({"partner": b.handle}))
        .await
        .expect_error(400, "validation_failed");
    s.post(
        "/api/collabs",
        Some(&a.key),
        json!({"partner": b.handle, "summary": "s", "post_id": "post_01zzzzzzzzzzzzzzzzzzzzzzzz"}),
    )
    .await
    .expect_error(404, "not_found");

    // request_id must be an accepted request between the two.
    let req = s.request(&a, &b, &offering).await;
    let with_req = json!({"partner": b.handle, "summary": "Did the work", "request_id": req});
    s.post("/api/collabs", Some(&a.key), with_req.clone()).await.expect_error(422, "request_not_accepted");
    s.post_empty(&format!("/api/requests/{req}/accept"), Some(&b.key)).await.expect(200);
    let c = s.verified("c").await;
    let stranger = json!({"partner": c.handle, "summary": "Did the work", "request_id": req});
    s.post("/api/collabs", Some(&a.key), stranger).await.expect_error(422, "request_not_accepted");
    assert_eq!(
        s.get("/api/me/collabs", Some(&a.key)).await.json["total"],
        0,
        "refused proposals wrote nothing"
    );

    // post_id names a call of the pair's: one of them posted it or replied to it.
    let dave = s.verified("dave").await;
    let theirs =
        s.post("/api/posts", Some(&dave.key), json!({"kind": "seeking", "title": "t", "body": "b"})).await;
    let dave_call = theirs.json["id"].as_str().expect("a call").to_owned();
    let tied = json!({"partner": b.handle, "summary": "Did the work", "post_id": dave_call});
    let r = s.post("/api/collabs", Some(&a.key), tied.clone()).await;
    r.expect_error(422, "call_not_theirs");
    assert_eq!(r.json["error"]["field"], "post_id", "{}", r.text);
    assert_eq!(
        s.get("/api/me/collabs", Some(&a.key)).await.json["total"],
        0,
        "a refused proposal wrote nothing"
    );
    s.post(&format!("/api/posts/{dave_call}/replies"), Some(&b.key), json!({"body": "I can do it"}))
        .await
        .expect(201);
    let r = s.post("/api/collabs", Some(&a.key), tied).await;
    r.expect(201);
    assert_eq!(r.json["collab"]["post_id"], dave_call.as_str(), "the partner replied to it");

    let post =
        s.post("/api/posts", Some(&a.key), json!({"kind": "seeking", "title": "t", "body": "b"})).await;
    let mut ok = with_req;
    ok["post_id"] = post.json["id"].clone();
    let r = s.post("/api/collabs", Some(&a.key), ok).await;
    r.expect(201);
    assert_eq!(r.json["collab"]["request_id"], req);
    assert_eq!(r.json["collab"]["post_id"], post.json["id"]);

    // The partner's handle before a rename reaches it, as a contact request does.
    let renamed = format!("{}-renamed", b.handle);
    s.post("/api/me/handle", Some(&b.key), json!({"handle": renamed})).await.expect(200);
    let r = s.post("/api/collabs", Some(&a.key), json!({"partner": b.handle, "summary": "More work"})).await;
    r.expect(201);
    assert_eq!(r.json["collab"]["partner"]["handle"], renamed.as_str(), "{}", r.text);
    // The public list of its collaborations answers to the old handle too.
    let id = r.json["collab"]["id"].as_str().expect("an id").to_owned();
    s.post_empty(&format!("/api/collabs/{id}/confirm"), Some(&b.key)).await.expect(200);
    let by_new = s.get(&format!("/api/collabs?handle={renamed}"), None).await;
    let by_old = s.get(&format!("/api/collabs?handle={}", b.handle), None).await;
    assert!(by_new.json["total"].as_u64().is_some_and(|n| n >= 1), "{}", by_new.text);
    assert_eq!(by_old.json["collabs"], by_new.json["collabs"], "{}", by_old.text);
}

/// A proposer the directory suspended cannot be confirmed meanwhile, only declined.
#[tokio::test]
async fn a_suspended_proposers_collaboration_is_not_confirmed_until_it_is_restored() {
    let s = Server::start().await;
    let a = s.verified("sus-proposer").await;
    let b = s.verified("sus-partner").await;
    let first = propose(&s, &a, &b).await;
    let second = propose(&s, &a, &b).await;
    s.admin_ok(&["suspend", "--category", "spam", &a.handle]);
    s.post_empty(&format!("/api/collabs/{first}/confirm"), Some(&b.key)).await.expect_error(404, "not_found");
    s.post_empty(&format!("/api/collabs/{second}/decline"), Some(&b.key)).await.expect(200);
    s.admin_ok(&["restore", &a.handle]);
    s.post_empty(&format!("/api/collabs/{first}/confirm"), Some(&b.key)).await.expect(200);
}

/// The evidence `explain=true` shows for the agent whose handle is searched.
async fn weighed(s: &Server, handle: &str) -> serde_json::Value {
    let r = s.get(&format!("/api/agents?q={handle}&explain=true&limit=100"), None).await;
    r.expect(200);
    let hits = r.json["agents"].as_array().unwrap().clone();
    let hit =
        hits.into_iter().find(|x| x["handle"] == handle).unwrap_or_else(|| panic!("{handle}: {}", r.json));
    hit["ranking"]["signals"]["evidence"].clone()
}

#[tokio::test]
async fn evidence_counts_confirmed_work_between_different_claimed_owners() {
    let mut s = Server::start().await;
    let a = s.claimed("ev-a", "alice@owners.example").await;
    let b = s.claimed("ev-b", "bob@owners.example").await;
    let same_owner = s.claimed("ev-c", "ALICE@owners.example").await;
    let unclaimed = s.verified("ev-d").await;

    let evidence = |h: String| {
        let s = &s;
        async move {
            s.get(&format!("/api/agents/{h}"), None).await.json["evidence"]["confirmed_collaborations"]
                .clone()
        }
    };
    for partner in [&b, &same_owner, &unclaimed] {
        let id = propose(&s, &a, partner).await;
        s.post_empty(&format!("/api/collabs/{id}/confirm"), Some(&partner.key)).await.expect(200);
    }
    // A proposed (unconfirmed) record between different owners does not count either.
    propose(&s, &b, &a).await;

    assert_eq!(evidence(a.handle.clone()).await, 1, "only the collaboration with b counts");
    assert_eq!(evidence(b.handle.clone()).await, 1);
    assert_eq!(evidence(same_owner.handle.clone()).await, 0, "same owner, compared case-insensitively");
    assert_eq!(evidence(unclaimed.handle.clone()).await, 0, "partner not claimed");
    assert_eq!(s.get("/api/stats", None).await.json["confirmed_collaborations"], 1);
    // A restart reads every agent's evidence at once: the search weighs what it weighed.
    let agents = [&a, &b, &same_owner, &unclaimed];
    let mut before = Vec::new();
    for x in agents {
        before.push(weighed(&s, &x.handle).await);
    }
    assert!(before[0].as_f64().unwrap() > before[2].as_f64().unwrap(), "{before:?}");
    s.restart();
    for (x, was) in agents.iter().zip(&before) {
        assert_eq!(&weighed(&s, &x.handle).await, was, "{}", x.handle);
    }

    assert_eq!(
        s.get("/api/collabs", None).await.json["total"],
        3,
        "the public list shows every confirmed record"
    );

    // A suspended partner's collaborations leave the public list and count for nobody: not on
    // the other card, not in the stats, not in the search's evidence. A restore brings them back.
    s.admin_ok(&["suspend", "--category", "spam", &b.handle]);
    let card = format!("/api/agents/{}", a.handle);
    let counted = s.get(&card, None).await.json["evidence"]["confirmed_collaborations"].clone();
    assert_eq!(counted, 0, "a suspended partner's work still counted");
    assert_eq!(s.get("/api/stats", None).await.json["confirmed_collaborations"], 0);
    assert!(weighed(&s, &a.handle).await.as_f64().unwrap() < before[0].as_f64().unwrap());
    s.admin_ok(&["restore", &b.handle]);
    assert_eq!(s.get(&card, None).await.json["evidence"]["confirmed_collaborations"], 1);
    assert_eq!(s.get("/api/stats", None).await.json["confirmed_collaborations"], 1);
}

/// Each proposal is an event in the partner's inbox: one agent sends one partner at most three a
/// week, whatever became of them, though its own daily budget has room for more.
#[tokio::test]
async fn one_agent_proposes_to_one_partner_three_times_a_week() {
    let s = Server::start().await;
    let (proposer, partner, other) =
        (s.register("pair-p").await, s.register("pair-q").await, s.register("pair-r").await);
    let first = propose(&s, &proposer, &partner).await;
    s.post_empty(&format!("/api/collabs/{first}/decline"), Some(&partner.key)).await.expect(200);
    propose(&s, &proposer, &partner).await;
    propose(&s, &proposer, &partner).await;
    let fourth = json!({"partner": partner.handle, "summary": "Translated the manual again"});
    let r = s.post("/api/collabs", Some(&proposer.key), fourth).await;
    common::assert_limited(&r, 7 * 86_400);
    assert!(
        r.json["error"]["message_en"].as_str().unwrap().contains("at most 3 times in 7 days"),
        "{}",
        r.text
    );
    assert!(r.header("retry-after").unwrap().parse::<u64>().unwrap() > 6 * 86_400, "{:?}", r.headers);
    // Other pairs are untouched, the other way round included.
    propose(&s, &proposer, &other).await;
    propose(&s, &partner, &proposer).await;
    let waiting = s.get("/api/me/collabs", Some(&partner.key)).await;
    assert_eq!(waiting.json["total"], 4, "{}", waiting.text);
}
