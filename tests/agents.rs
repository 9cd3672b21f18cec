//! Registration, the agent card, agent lists, the own profile, offerings and keys.

mod common;

use common::{Server, unique_handle};
use serde_json::{Value, json};

fn registration(handle: &str) -> Value {
    json!({
        "handle": handle, "name": "Translator", "owner": "Ada Owner",
        "mailbox": format!("{handle}@example.org"), "accept_rules": true,
        "description_en": "Translates technical documents.",
    })
}

fn with(mut base: Value, key: &str, value: Value) -> Value {
    base[key] = value;
    base
}

fn without(mut base: Value, key: &str) -> Value {
    base.as_object_mut().unwrap().remove(key);
    base
}

#[tokio::test]
async fn registration_returns_a_key_once_and_a_public_profile() {
    let s = Server::start().await;
    let handle = unique_handle("reg");
    let r = s.post("/api/agents", None, registration(&handle)).await;
    r.expect(201);
    let key = r.json["api_key"].as_str().unwrap();
    assert!(key.starts_with("cq_"), "{key}");
    // cq_ + 12-char id + _ + 40-char secret of 36 symbols: over 200 bits of secret.
    assert_eq!(key.len(), 3 + 12 + 1 + 40);
    assert_eq!(r.json["agent"]["handle"], handle);
    assert!(!r.text.contains(&format!("{handle}@example.org")), "mailbox leaked: {}", r.text);

    let me = s.get("/api/me", Some(key)).await;
    me.expect(200);
    assert_eq!(me.json["mailbox"], format!("{handle}@example.org"));
    assert_eq!(me.json["agent"]["trust"]["level"], 0);
    // The key is shown only once: nothing else ever returns it.
    assert!(!me.text.contains(key));
    assert!(!s.get(&format!("/api/agents/{handle}"), None).await.text.contains(key));
}

#[tokio::test]
async fn registration_rejects_each_bad_field_with_its_name() {
    let s = Server::start().await;
    let h = unique_handle("bad");
    let base = registration(&h);
    let long = |n: usize| Value::String("x".repeat(n));
    let cases: Vec<(Value, &str)> = vec![
        (without(base.clone(), "handle"), "handle"),
        (without(base.clone(), "name"), "name"),
        (without(base.clone(), "owner"), "owner"),
        (without(base.clone(), "mailbox"), "mailbox"),
        (without(base.clone(), "accept_rules"), "accept_rules"),
        (with(base.clone(), "handle", json!("Upper-Case")), "handle"),
        (with(base.clone(), "handle", json!("ab")), "handle"),
        (with(base.clone(), "handle", json!("-leading")), "handle"),
        (with(base.clone(), "handle", json!("a".repeat(33))), "handle"),
        (with(base.clone(), "handle", json!("has space")), "handle"),
        (with(base.clone(), "name", long(61)), "name"),
        (with(base.clone(), "owner", long(61)), "owner"),
        (with(base.clone(), "model", long(61)), "model"),
        (with(base.clone(), "tagline", long(81)), "tagline"),
        (with(base.clone(), "tagline", json!("two\nlines")), "tagline"),
        (with(base.clone(), "description_en", long(601)), "description_en"),
        (with(base.clone(), "description_zh", Value::String("中".repeat(601))), "description_zh"),
        (with(base.clone(), "capabilities", json!(vec!["c"; 13])), "capabilities"),
        (with(base.clone(), "languages", json!(vec!["en"; 9])), "languages"),
        (with(base.clone(), "languages", json!(["not a code!"])), "languages.0"),
        (with(base.clone(), "homepage", json!("ftp://example.org")), "homepage"),
        (with(base.clone(), "mailbox", json!("not-an-email")), "mailbox"),
        (with(base.clone(), "accept_rules", json!(false)), "accept_rules"),
        (with(base.clone(), "accept_rules", json!("yes")), "accept_rules"),
        (with(base.clone(), "name", json!(42)), "name"),
        (with(base.clone(), "contact_public", json!("true")), "contact_public"),
        (with(base.clone(), "tagline", json!(null)), "tagline"),
        (without(base.clone(), "description_en"), "description_en"),
    ];
    for (body, field) in cases {
        let r = s.post("/api/agents", None, body.clone()).await;
        r.expect_error(400, "validation_failed");
        assert_eq!(r.json["error"]["field"], field, "for {body}: {}", r.text);
    }
    // Nothing was written by any of them.
    assert_eq!(s.get(&format!("/api/agents/{h}"), None).await.status, 404);
    assert_eq!(s.get("/api/stats", None).await.json["agents"], 0);
}

#[tokio::test]
async fn limits_are_inclusive_and_chinese_counts_characters() {
    let s = Server::start().await;
    let h = unique_handle("max");
    let body = json!({
        "handle": h, "name": "n".repeat(60), "owner": "o".repeat(60),
        "mailbox": format!("{h}@example.org"), "accept_rules": true,
        "tagline": "t".repeat(80), "description_zh": "译".repeat(600),
        "capabilities": vec!["c"; 12], "languages": vec!["zh"; 8], "model": "m".repeat(60),
        "homepage": "https://example.org/about", "contact_public": false,
    });
    s.post("/api/agents", None, body).await.expect(201);
    // A 32-character handle is the longest allowed.
    let long = format!("a{}", "b".repeat(31));
    s.post("/api/agents", None, registration(&long)).await.expect(201);
}

#[tokio::test]
async fn taken_handles_and_malformed_bodies_are_refused() {
    let s = Server::start().await;
    let h = unique_handle("dup");
    s.post("/api/agents", None, registration(&h)).await.expect(201);
    s.post("/api/agents", None, registration(&h)).await.expect_error(409, "handle_taken");

    let raw = |body: &'static str, ct: Option<&'static str>| {
        let mut req = s.http.post(s.url("/api/agents")).body(body);
        if let Some(ct) = ct {
            req = req.header("content-type", ct);
        }
        req
    };
    s.send(raw("{not json", Some("application/json"))).await.expect_error(400, "invalid_json");
    s.send(raw("[1,2]", Some("application/json"))).await.expect_error(400, "invalid_json");
    s.send(raw("", Some("application/json"))).await.expect_error(400, "invalid_json");
    s.send(raw("{}", Some("text/plain"))).await.expect_error(415, "unsupported_media_type");
    s.send(raw("{}", None)).await.expect_error(415, "unsupported_media_type");
    let big = format!("{{\"handle\": \"{}\"}}", "x".repeat(70 * 1024));
    let r =
        s.send(s.http.post(s.url("/api/agents")).header("content-type", "application/json").body(big)).await;
    r.expect_error(413, "payload_too_large");
}

#[tokio::test]
async fn the_card_has_every_field_of_the_spec_and_never_the_mailbox() {
    let s = Server::start().await;
    let a = s.register("card").await;
    s.post("/api/posts", Some(&a.key), json!({"kind": "announce", "title": "Hello", "body": "First call"}))
        .await
        .expect(201);
    let r = s.get(&format!("/api/agents/{}", a.handle), None).await;
    r.expect(200);
    let c = &r.json;
    for k in ["notice", "agent", "evidence", "recent_posts"] {
        assert!(c.get(k).is_some(), "card lacks {k}");
    }
    assert!(c["notice"]["en"].is_string() && c["notice"]["zh"].is_string());
    let agent = &c["agent"];
    for k in [
        "handle",
        "name",
        "owner",
        "tagline",
        "description_zh",
        "description_en",
        "capabilities",
        "languages",
        "homepage",
        "model",
        "verified",
        "verified_at",
        "trust",
        "offerings",
        "contact_policy",
        "created_at",
        "updated_at",
        "last_active_at",
        "contact",
    ] {
        assert!(agent.get(k).is_some(), "agent lacks {k}");
    }
    assert!(agent.get("mailbox").is_none());
    assert!(!r.text.contains(&a.mailbox), "mailbox leaked into the card");
    assert_eq!(agent["verified_at"], Value::Null);
    for k in ["level", "mailbox_verified", "owner_claimed", "links"] {
        assert!(agent["trust"].get(k).is_some(), "trust lacks {k}");
    }
    assert_eq!(
        agent["contact_policy"],
        json!({"accepting": true, "min_level": 1, "require_offering": true, "weekly_cap": 10, "note": null})
    );
    let contact = &agent["contact"];
    assert_eq!(contact["method"], "request");
    assert_eq!(contact["email"], Value::Null);
    assert_eq!(contact["email_public"], false);
    assert!(contact["how_en"].as_str().unwrap().contains("POST /api/agents/"));
    assert!(!contact["how_zh"].as_str().unwrap().is_empty());
    for k in [
        "confirmed_collaborations",
        "confirmed_collaborations_note_en",
        "confirmed_collaborations_note_zh",
        "last_active_at",
        "joined_at",
    ] {
        assert!(c["evidence"].get(k).is_some(), "evidence lacks {k}");
    }
    let post = &c["recent_posts"][0];
    for k in [
        "id",
        "kind",
        "title",
        "body",
        "deliverable",
        "deadline",
        "constraints",
        "languages",
        "tags",
        "lang",
        "created_at",
        "reply_count",
        "status",
        "author",
    ] {
        assert!(post.get(k).is_some(), "recent post lacks {k}");
    }
    assert_eq!(post["status"], "active");
    assert_eq!(post["author"]["handle"], a.handle);
    assert!(agent["created_at"].as_str().unwrap().ends_with('Z'));

    // Making the mailbox public shows it as contact.email, and only there.
    s.patch("/api/me", Some(&a.key), json!({"contact_public": true})).await.expect(200);
    let r = s.get(&format!("/api/agents/{}", a.handle), None).await;
    assert_eq!(r.json["agent"]["contact"]["email"], a.mailbox);
    assert_eq!(r.json["agent"]["contact"]["email_public"], true);
    assert!(r.json["agent"].get("mailbox").is_none());
    // The how-to says so, instead of promising the mailbox on acceptance.
    let how = r.json["agent"]["contact"]["how_en"].as_str().unwrap_or_default();
    assert!(how.contains("mailbox is public") && !how.contains("once the request is accepted"), "{how}");
    let how_zh = r.json["agent"]["contact"]["how_zh"].as_str().unwrap_or_default();
    assert!(how_zh.contains("已公开"), "{how_zh}");
}

#[tokio::test]
async fn unknown_or_malformed_handles_are_404() {
    let s = Server::start().await;
    s.get("/api/agents/nobody-here", None).await.expect_error(404, "not_found");
    s.get("/api/agents/NOT_A_HANDLE", None).await.expect_error(404, "not_found");
    s.get("/api/agents/%E2%9C%93", None).await.expect_error(404, "not_found");
}

#[tokio::test]
async fn agent_lists_filter_and_page() {
    let s = Server::start().await;
    let plain = s.register("plain").await;
    let verified = s.verified("verif").await;
    let claimed = s.claimed("claim", "owner-a@example.org").await;
    s.patch("/api/me", Some(&verified.key), json!({"capabilities": ["Translation"], "languages": ["zh-CN"]}))
        .await
        .expect(200);

    let handles = |r: &common::Resp| -> Vec<String> {
        r.json["agents"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["handle"].as_str().unwrap().to_owned())
            .collect()
    };
    let all = s.get("/api/agents", None).await;
    all.expect(200);
    assert_eq!(all.json["total"], 3);
    assert_eq!(all.json["limit"], 20);
    assert_eq!(all.json["offset"], 0);
    assert!(all.json["notice"]["en"].is_string());
    assert!(!all.text.contains(&plain.mailbox));
    // Most recently active first: the last patch made `verified` the most recent.
    assert_eq!(handles(&all)[0], verified.handle);

    assert_eq!(handles(&s.get("/api/agents?verified=true", None).await).len(), 2);
    assert_eq!(handles(&s.get("/api/agents?verified=false", None).await), vec![plain.handle.clone()]);
    assert_eq!(handles(&s.get("/api/agents?min_level=2", None).await), vec![claimed.handle.clone()]);
    assert_eq!(handles(&s.get("/api/agents?min_level=1", None).await).len(), 2);
    assert_eq!(
        handles(&s.get("/api/agents?capability=translation", None).await),
        vec![verified.handle.clone()]
    );
    assert_eq!(handles(&s.get("/api/agents?language=ZH-cn", None).await), vec![verified.handle.clone()]);
    assert_eq!(s.get("/api/agents?new=true", None).await.json["total"], 3);

    let page1 = s.get("/api/agents?limit=2&offset=0", None).await;
    let page2 = s.get("/api/agents?limit=2&offset=2", None).await;
    assert_eq!(page1.json["total"], 3);
    let mut seen = handles(&page1);
    seen.extend(handles(&page2));
    seen.sort();
    let mut expected = vec![plain.handle, verified.handle, claimed.handle];
    expected.sort();
    assert_eq!(seen, expected);

    for bad in ["limit=101", "limit=0", "limit=abc", "offset=-1", "min_level=3", "verified=maybe", "new=1"] {
        let r = s.get(&format!("/api/agents?{bad}"), None).await;
        r.expect_error(400, "validation_failed");
    }
    // Past any integer type, a number is still told its range (as in a JSON body).
    for limit in ["101", "99999999999999999999"] {
        let r = s.get(&format!("/api/agents?limit={limit}"), None).await;
        r.expect_error(400, "validation_failed");
        assert!(r.json["error"]["message_en"].as_str().unwrap().contains("between 1 and 100"), "{}", r.text);
    }
    let r = s.get("/api/agents?offset=-99999999999999999999", None).await;
    assert!(r.json["error"]["message_en"].as_str().unwrap().contains("between 0 and"), "{}", r.text);
}

#[tokio::test]
async fn me_needs_a_valid_key() {
    let s = Server::start().await;
    let a = s.register("me").await;
    s.get("/api/me", None).await.expect_error(401, "unauthorized");
    s.get("/api/me", Some("cq_nope")).await.expect_error(401, "unauthorized");
    s.get("/api/me", Some("cq_aaaaaaaaaaaa_bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"))
        .await
        .expect_error(401, "unauthorized");
    // The secret's last character changed to another one (a fixed "x" is the key itself when it ends in x).
    let (head, last) = a.key.split_at(a.key.len() - 1);
    let wrong_secret = format!("{head}{}", if last == "x" { "y" } else { "x" });
    s.get("/api/me", Some(&wrong_secret)).await.expect_error(401, "unauthorized");
    let basic =
        s.send(s.http.get(s.url("/api/me")).header("authorization", format!("Basic {}", a.key))).await;
    basic.expect_error(401, "unauthorized");
    s.get("/api/me", Some(&a.key)).await.expect(200);
}

#[tokio::test]
async fn rotation_kills_the_old_key_at_once_even_when_cached() {
    let s = Server::start().await;
    let a = s.register("rot").await;
    // Use the key twice so it is remembered as verified.
    s.get("/api/me", Some(&a.key)).await.expect(200);
    s.get("/api/me", Some(&a.key)).await.expect(200);
    let r = s.post_empty("/api/me/rotate-key", Some(&a.key)).await;
    r.expect(200);
    let new_key = r.json["api_key"].as_str().unwrap().to_owned();
    assert!(new_key.starts_with("cq_") && new_key != a.key);
    s.get("/api/me", Some(&a.key)).await.expect_error(401, "unauthorized");
    s.get("/api/me", Some(&new_key)).await.expect(200);
    s.post_empty("/api/me/rotate-key", None).await.expect_error(401, "unauthorized");
}

async fn card(s: &Server, handle: &str) -> Value {
    s.get(&format!("/api/agents/{handle}"), None).await.json
}

#[tokio::test]
async fn profile_patch_updates_and_resets_trust_when_identity_changes() {
    let s = Server::start().await;
    let a = s.claimed("patch", "owner@example.org").await;
    assert_eq!(card(&s, &a.handle).await["agent"]["trust"]["level"], 2);

    let r = s
        .patch(
            "/api/me",
            Some(&a.key),
            json!({"tagline": "New tagline", "contact_policy": {"weekly_cap": 3, "note": "Be brief"}}),
        )
        .await;
    r.expect(200);
    let policy = &r.json["agent"]["contact_policy"];
    assert_eq!(policy["weekly_cap"], 3);
    assert_eq!(policy["note"], "Be brief");
    // Unspecified policy fields keep their values.
    assert_eq!(policy["min_level"], 1);
    assert_eq!(policy["require_offering"], true);
    assert_eq!(r.json["agent"]["tagline"], "New tagline");
    assert_eq!(card(&s, &a.handle).await["agent"]["trust"]["level"], 2, "unrelated edits keep trust");

    // A new owner resets the claim (level 1 remains: the mailbox is still verified).
    s.patch("/api/me", Some(&a.key), json!({"owner": "Someone Else"})).await.expect(200);
    let c = card(&s, &a.handle).await;
    assert_eq!(c["agent"]["trust"]["owner_claimed"], false);
    assert_eq!(c["agent"]["trust"]["level"], 1);

    // A new mailbox resets the verification.
    s.patch("/api/me", Some(&a.key), json!({"mailbox": "moved@example.org"})).await.expect(200);
    let c = card(&s, &a.handle).await;
    assert_eq!(c["agent"]["trust"]["level"], 0);
    assert_eq!(c["agent"]["verified"], false);
    assert_eq!(c["agent"]["verified_at"], Value::Null);
    assert_eq!(s.get("/api/me", Some(&a.key)).await.json["mailbox"], "moved@example.org");

    // null clears a clearable field; bad values change nothing.
    s.patch("/api/me", Some(&a.key), json!({"tagline": null})).await.expect(200);
    assert_eq!(card(&s, &a.handle).await["agent"]["tagline"], "");
    // So does it a description while the other one stays; the last one cannot go.
    s.patch("/api/me", Some(&a.key), json!({"description_zh": "帮助测试的智能体。"})).await.expect(200);
    s.patch("/api/me", Some(&a.key), json!({"description_en": null})).await.expect(200);
    let c = card(&s, &a.handle).await;
    assert_eq!(
        (c["agent"]["description_en"].as_str(), c["agent"]["description_zh"].as_str()),
        (Some(""), Some("帮助测试的智能体。"))
    );
    for (last, field) in [
        (json!({"description_zh": null}), "description_zh"),
        (json!({"description_en": null, "description_zh": null}), "description_en"),
        (json!({"description_zh": null, "tagline": "Still here"}), "description_zh"),
    ] {
        let r = s.patch("/api/me", Some(&a.key), last.clone()).await;
        r.expect_error(400, "validation_failed");
        assert_eq!(r.json["error"]["field"], field, "{last}: {}", r.text);
    }
    let c = card(&s, &a.handle).await;
    assert_eq!(c["agent"]["description_zh"], "帮助测试的智能体。", "a refused patch changes nothing");
    assert_eq!(c["agent"]["tagline"], "");
    for bad in [
        json!({"contact_policy": {"weekly_cap": 51}}),
        json!({"contact_policy": {"weekly_cap": 0}}),
        json!({"contact_policy": {"min_level": 3}}),
        json!({"contact_policy": {"note": "n".repeat(201)}}),
        json!({"name": "n".repeat(61)}),
        json!({"mailbox": "nope"}),
        json!({"handle": 5, "name": ""}),
    ] {
        s.patch("/api/me", Some(&a.key), bad).await.expect_error(400, "validation_failed");
    }
    assert_eq!(card(&s, &a.handle).await["agent"]["contact_policy"]["weekly_cap"], 3);
    s.patch("/api/me", None, json!({})).await.expect_error(401, "unauthorized");
}

#[tokio::test]
async fn offerings_are_replaced_whole_and_keep_their_ids() {
    let s = Server::start().await;
    let a = s.register("offer").await;
    let o = |title: &str| json!({"title": title, "deliverable": "Something useful", "mode": "quote"});
    let r = s.put("/api/me/offerings", Some(&a.key), json!({"offerings": [o("One"), o("Two")]})).await;
    r.expect(200);
    let ids: Vec<String> = r.json["offerings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["id"].as_str().unwrap().to_owned())
        .collect();
    assert!(ids.iter().all(|id| id.starts_with("off_")));

    // Send one back with its id, drop the other, add a new one.
    let mut kept = o("One, renamed");
    kept["id"] = json!(ids[0]);
    let r = s.put("/api/me/offerings", Some(&a.key), json!({"offerings": [kept, o("Three")]})).await;
    r.expect(200);
    let after = r.json["offerings"].as_array().unwrap();
    assert_eq!(after[0]["id"], ids[0]);
    assert_eq!(after[0]["title"], "One, renamed");
    assert_ne!(after[1]["id"], ids[1]);
    let card = s.get(&format!("/api/agents/{}", a.handle), None).await;
    assert_eq!(card.json["agent"]["offerings"].as_array().unwrap().len(), 2);

    let four = json!({"offerings": [o("a"), o("b"), o("c"), o("d")]});
    s.put("/api/me/offerings", Some(&a.key), four).await.expect_error(422, "too_many_offerings");
    let mut stranger = o("x");
    stranger["id"] = json!("off_01aaaaaaaaaaaaaaaaaaaaaaaa");
    s.put("/api/me/offerings", Some(&a.key), json!({"offerings": [stranger]}))
        .await
        .expect_error(422, "unknown_offering");
    for bad in [
        json!({"offerings": [{"title": "t".repeat(41), "deliverable": "d", "mode": "free"}]}),
        json!({"offerings": [{"title": "t", "deliverable": "d".repeat(121), "mode": "free"}]}),
        json!({"offerings": [{"title": "t", "deliverable": "d", "mode": "paid"}]}),
        json!({"offerings": [{"title": "t", "deliverable": "d", "mode": "free", "turnaround_days": 91}]}),
        json!({"offerings": [{"title": "t", "deliverable": "d", "mode": "free", "tags": ["a", "b", "c", "d", "e", "f"]}]}),
        json!({"offerings": [{"title": "t", "deliverable": "d", "mode": "free", "for_whom": "f".repeat(81)}]}),
        json!({"offerings": [{"deliverable": "d", "mode": "free"}]}),
        json!({}),
    ] {
        s.put("/api/me/offerings", Some(&a.key), bad).await.expect_error(400, "validation_failed");
    }
    // None of the refused lists changed anything.
    let card = s.get(&format!("/api/agents/{}", a.handle), None).await;
    assert_eq!(card.json["agent"]["offerings"][0]["id"], ids[0]);
    // The menu as the card shows it (what it leaves unstated as null) goes back as it is.
    let mut shown = card.json["agent"]["offerings"].clone();
    assert!(shown[0]["for_whom"].is_null() && shown[0]["not_doing"].is_null(), "{}", card.text);
    shown[0]["turnaround_days"] = json!(5);
    let r = s.put("/api/me/offerings", Some(&a.key), json!({"offerings": shown})).await;
    r.expect(200);
    assert_eq!(r.json["offerings"][0]["id"], ids[0]);
    assert_eq!(r.json["offerings"][0]["turnaround_days"], 5);
    // A null where none is taken says how to mend it.
    let r = s
        .put(
            "/api/me/offerings",
            Some(&a.key),
            json!({"offerings": [{"title": null, "deliverable": "d", "mode": "free"}]}),
        )
        .await;
    r.expect_error(400, "validation_failed");
    assert_eq!(r.json["error"]["field"], "offerings.0.title", "{}", r.text);
    assert!(r.json["error"]["message_en"].as_str().unwrap().contains("cannot be null"), "{}", r.text);
    // An empty list clears the menu.
    s.put("/api/me/offerings", Some(&a.key), json!({"offerings": []})).await.expect(200);
}

#[tokio::test]
async fn stats_and_the_index_are_public_with_a_notice() {
    let s = Server::start().await;
    let a = s.verified("stat").await;
    let r = s.get("/api/stats", None).await;
    r.expect(200);
    for k in
        ["agents", "agents_verified", "agents_owner_claimed", "posts", "replies", "confirmed_collaborations"]
    {
        assert!(r.json[k].is_u64(), "stats lacks {k}");
    }
    assert_eq!(r.json["agents"], 1);
    assert_eq!(r.json["agents_verified"], 1);
    assert!(r.json["notice"]["zh"].is_string());
    s.post("/api/posts", Some(&a.key), json!({"kind": "seeking", "title": "t", "body": "b"}))
        .await
        .expect(201);
    assert_eq!(s.get("/api/stats", None).await.json["posts"], 1);

    let index = s.get("/api", None).await;
    index.expect(200);
    let endpoints = index.json["endpoints"].as_array().unwrap();
    assert!(endpoints.len() >= 31);
    assert!(endpoints.iter().any(|e| e["method"] == "POST"
        && e["path"] == "/api/agents/{handle}/requests"
        && e["auth"] == "key"));
    assert!(index.json["notice"]["en"].is_string());
}
