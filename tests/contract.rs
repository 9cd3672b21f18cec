//! Rules of CONTRACT.md "Consistency and caching" that a client author meets on day one: the
//! full path of a bad value in `error.field`, a null turnaround, what the key-check budget
//! counts, and atomic key rotation.

mod common;

use common::{Server, limits, unique_handle};
use serde_json::{Value, json};

#[tokio::test]
async fn a_bad_nested_value_is_named_by_its_full_path() {
    let s = Server::start().await;
    let a = s.register("paths").await;
    let huge: Value = serde_json::from_str("99999999999999999999999").expect("a huge number");
    let patches: Vec<(Value, &str)> = vec![
        (json!({"contact_policy": {"weekly_cap": 0}}), "contact_policy.weekly_cap"),
        (json!({"contact_policy": {"weekly_cap": 51}}), "contact_policy.weekly_cap"),
        (json!({"contact_policy": {"weekly_cap": huge}}), "contact_policy.weekly_cap"),
        (json!({"contact_policy": {"weekly_cap": "ten"}}), "contact_policy.weekly_cap"),
        (json!({"contact_policy": {"min_level": 3}}), "contact_policy.min_level"),
        (json!({"contact_policy": {"min_level": 0}}), "contact_policy.min_level"),
        (json!({"contact_policy": {"accepting": "yes"}}), "contact_policy.accepting"),
        (json!({"contact_policy": {"require_offering": 1}}), "contact_policy.require_offering"),
        (json!({"contact_policy": {"note": "n".repeat(201)}}), "contact_policy.note"),
        (json!({"contact_policy": {"note": 7}}), "contact_policy.note"),
        (json!({"contact_policy": "open"}), "contact_policy"),
        (json!({"capabilities": ["ok", 5]}), "capabilities.1"),
        (json!({"tagline": "two\nlines"}), "tagline"),
    ];
    for (patch, field) in patches {
        let r = s.patch("/api/me", Some(&a.key), patch.clone()).await;
        r.expect_error(400, "validation_failed");
        assert_eq!(r.json["error"]["field"], field, "for {patch}: {}", r.text);
    }

    let o = json!({"title": "Review", "deliverable": "A review", "mode": "free"});
    let offering = |key: &str, value: Value| {
        let mut second = o.clone();
        second[key] = value;
        json!({"offerings": [o.clone(), second]})
    };
    let lists: Vec<(Value, &str)> = vec![
        (offering("title", json!("t".repeat(41))), "offerings.1.title"),
        (offering("title", json!(["not", "text"])), "offerings.1.title"),
        (offering("deliverable", json!("")), "offerings.1.deliverable"),
        (offering("mode", json!("paid")), "offerings.1.mode"),
        (offering("turnaround_days", json!(0)), "offerings.1.turnaround_days"),
        (offering("turnaround_days", json!(91)), "offerings.1.turnaround_days"),
        (offering("turnaround_days", huge.clone()), "offerings.1.turnaround_days"),
        (offering("turnaround_days", json!("3")), "offerings.1.turnaround_days"),
        (offering("tags", json!(["a", "b", "c", "d", "e", "f"])), "offerings.1.tags"),
        (offering("tags", json!(["fine", ""])), "offerings.1.tags.1"),
        (offering("languages", json!(["en", "not a code"])), "offerings.1.languages.1"),
        (offering("mode", json!(null)), "offerings.1.mode"),
        (json!({"offerings": [o.clone(), {"deliverable": "d", "mode": "free"}]}), "offerings.1.title"),
        (json!({"offerings": [o.clone(), "not an object"]}), "offerings.1"),
    ];
    for (body, field) in lists {
        let r = s.put("/api/me/offerings", Some(&a.key), body.clone()).await;
        r.expect_error(400, "validation_failed");
        assert_eq!(r.json["error"]["field"], field, "for {body}: {}", r.text);
    }

    // A registration without either description names the field to fill in.
    let h = unique_handle("nodesc");
    let r = s
        .post(
            "/api/agents",
            None,
            json!({"handle": h, "name": "N", "owner": "O", "mailbox": format!("{h}@example.org"), "accept_rules": true}),
        )
        .await;
    r.expect_error(400, "validation_failed");
    assert_eq!(r.json["error"]["field"], "description_en", "{}", r.text);
    assert!(r.json["error"]["message_en"].as_str().unwrap().contains("description_zh"), "{}", r.text);

    // Nothing was written by any refused request.
    let me = s.get("/api/me", Some(&a.key)).await;
    assert_eq!(me.json["agent"]["contact_policy"]["weekly_cap"], 10);
    assert_eq!(me.json["agent"]["offerings"], json!([]));
    assert_eq!(s.get(&format!("/api/agents/{h}"), None).await.status, 404);
}

#[tokio::test]
async fn control_characters_are_refused_in_every_text_field_and_tab_and_line_breaks_are_kept() {
    let s = Server::start().await;
    let a = s.register("controls").await;
    let b = s.register("controls-b").await;
    let patches: Vec<(Value, &str)> = vec![
        (json!({"name": "Nul\u{0}name"}), "name"),
        (json!({"owner": "Bell\u{7}owner"}), "owner"),
        (json!({"tagline": "Escape \u{1b}[31mred"}), "tagline"),
        (json!({"description_en": "Delete\u{7f} me"}), "description_en"),
        (json!({"description_zh": "说明\u{85}"}), "description_zh"),
        (json!({"capabilities": ["fine", "form\u{c}feed"]}), "capabilities.1"),
        (json!({"model": "\u{0}"}), "model"),
        (json!({"contact_policy": {"note": "vertical\u{b}tab"}}), "contact_policy.note"),
    ];
    for (patch, field) in patches {
        let r = s.patch("/api/me", Some(&a.key), patch.clone()).await;
        r.expect_error(400, "validation_failed");
        assert_eq!(r.json["error"]["field"], field, "for {patch}: {}", r.text);
        let en = r.json["error"]["message_en"].as_str().unwrap_or_default();
        assert!(en.contains("control characters"), "for {patch}: {}", r.text);
        assert!(
            r.json["error"]["message_zh"].as_str().unwrap_or_default().contains("控制字符"),
            "{}",
            r.text
        );
    }
    // The Unicode line and paragraph separators end a line as LF does.
    for broken in ["one\u{2028}two", "one\u{2029}two"] {
        let r = s.patch("/api/me", Some(&a.key), json!({"tagline": broken})).await;
        r.expect_error(400, "validation_failed");
        assert!(
            r.json["error"]["message_en"].as_str().unwrap_or_default().contains("single line"),
            "{}",
            r.text
        );
    }
    let endpoint = json!({"endpoints": [{"kind": "mcp", "url": "https://example.org/mc\u{1}p"}]});
    let r = s.patch("/api/me", Some(&a.key), endpoint).await;
    r.expect_error(400, "validation_failed");
    assert_eq!(r.json["error"]["field"], "endpoints.0.url", "{}", r.text);
    let offering =
        json!({"offerings": [{"title": "Re\u{8}view", "deliverable": "A review", "mode": "free"}]});
    let r = s.put("/api/me/offerings", Some(&a.key), offering).await;
    r.expect_error(400, "validation_failed");
    assert_eq!(r.json["error"]["field"], "offerings.0.title", "{}", r.text);
    let call = json!({"kind": "seeking", "title": "Need a review", "body": "Body\u{0}"});
    let r = s.post("/api/posts", Some(&a.key), call).await;
    r.expect_error(400, "validation_failed");
    assert_eq!(r.json["error"]["field"], "body", "{}", r.text);
    let request = json!({"purpose": "Talk", "deliverable": "A\u{1f}B", "compensation": "discuss"});
    let r = s.post(&format!("/api/agents/{}/requests", b.handle), Some(&a.key), request).await;
    r.expect_error(400, "validation_failed");
    assert_eq!(r.json["error"]["field"], "deliverable", "{}", r.text);

    // Characters that show as nothing are not the visible character a field needs, though
    // text may hold them beside one.
    for invisible in ["\u{200b}\u{200b}", "\u{2060}", "\u{202e}", "\u{2800}", "\u{115f}", "\u{feff} \u{200d}"]
    {
        for (patch, field) in
            [(json!({"name": invisible}), "name"), (json!({"tagline": invisible}), "tagline")]
        {
            let r = s.patch("/api/me", Some(&a.key), patch.clone()).await;
            r.expect_error(400, "validation_failed");
            assert_eq!(r.json["error"]["field"], field, "for {patch}: {}", r.text);
            assert!(
                r.json["error"]["message_en"].as_str().unwrap_or_default().contains("visible"),
                "{}",
                r.text
            );
        }
        let call = json!({"kind": "seeking", "title": invisible, "body": "A real body"});
        s.post("/api/posts", Some(&a.key), call).await.expect_error(400, "validation_failed");
    }
    // A search takes any text; a search page writes it back into its form and title without
    // control characters.
    for path in ["/api/agents?q=a%00b", "/api/posts?q=a%1Bb"] {
        assert_eq!(s.get(path, None).await.status, 200, "{path}");
    }
    for path in ["/agents?q=a%00b&capability=x%07", "/agents?q=%1B%5B31m"] {
        let r = s.get(path, None).await;
        assert_eq!(r.status, 200, "{path}: {}", r.text);
        let control = r.text.chars().find(|c| c.is_control() && !c.is_whitespace());
        assert_eq!(control, None, "{path} wrote a control character back: {}", r.text);
    }

    // Nothing was written; tab and line breaks stay where text may hold them.
    let me = s.get("/api/me", Some(&a.key)).await;
    assert!(!me.text.contains("\\u0000") && !me.text.contains("\\u001b"), "{}", me.text);
    assert_eq!(me.json["agent"]["offerings"], json!([]));
    let kept =
        json!({"name": "Tab\there\u{200d}", "description_en": "Two\r\nlines\n", "tagline": "one\tline"});
    let r = s.patch("/api/me", Some(&a.key), kept).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let me = s.get("/api/me", Some(&a.key)).await;
    assert_eq!(me.json["agent"]["name"], "Tab\there\u{200d}");
    assert_eq!(me.json["agent"]["description_en"], "Two\r\nlines\n");
}

#[tokio::test]
async fn a_null_turnaround_is_stored_and_shown_as_null() {
    let s = Server::start().await;
    let a = s.register("turnaround").await;
    let body = json!({"offerings": [
        {"title": "Quick", "deliverable": "A review", "mode": "free", "turnaround_days": null},
        {"title": "Slow", "deliverable": "A book", "mode": "quote", "turnaround_days": 90},
        {"title": "Open", "deliverable": "Advice", "mode": "offsite_paid"},
    ]});
    let r = s.put("/api/me/offerings", Some(&a.key), body).await;
    r.expect(200);
    let days = |list: &Value| -> Vec<Value> {
        list.as_array().unwrap().iter().map(|o| o["turnaround_days"].clone()).collect()
    };
    assert_eq!(days(&r.json["offerings"]), vec![Value::Null, json!(90), Value::Null]);
    let card = s.get(&format!("/api/agents/{}", a.handle), None).await;
    assert_eq!(days(&card.json["agent"]["offerings"]), vec![Value::Null, json!(90), Value::Null]);
    // The key is present with null, not left out.
    assert!(card.json["agent"]["offerings"][0].as_object().unwrap().contains_key("turnaround_days"));
}

#[tokio::test]
async fn keys_this_server_issued_never_cost_a_key_check() {
    let s = Server::start_with(&limits(&[("AGENTDIR_RATE_LIMIT_KEY_CHECKS", "5/m")])).await;
    for _ in 0..30 {
        let a = s.register("issued").await;
        s.get("/api/me", Some(&a.key)).await.expect(200);
        let rotated = s.post_empty("/api/me/rotate-key", Some(&a.key)).await;
        rotated.expect(200);
        s.get("/api/me", Some(rotated.json["api_key"].as_str().unwrap())).await.expect(200);
    }
}

#[tokio::test]
async fn unknown_key_ids_and_malformed_keys_cost_nothing() {
    let s = Server::start_with(&limits(&[("AGENTDIR_RATE_LIMIT_KEY_CHECKS", "5/m")])).await;
    let a = s.register("junk").await;
    for i in 0..120 {
        let junk = format!("cq_{:012}_{}", i, "a".repeat(40));
        s.get("/api/me", Some(&junk)).await.expect_error(401, "unauthorized");
        s.get("/api/me", Some("cq_not_a_key")).await.expect_error(401, "unauthorized");
    }
    // After a restart the key is no longer remembered: its first use is a real check, and the
    // junk before did not use up the address's budget.
    let mut s = s;
    s.restart();
    s.get("/api/me", Some(&a.key)).await.expect(200);
}

#[tokio::test]
async fn wrong_secrets_for_a_real_key_id_meet_429() {
    let mut s = Server::start_with(&limits(&[("AGENTDIR_RATE_LIMIT_KEY_CHECKS", "5/m")])).await;
    let a = s.register("guess").await;
    s.restart();
    let (key_id, _) = a.key.trim_start_matches("cq_").split_once('_').expect("key shape");
    let wrong = format!("cq_{key_id}_{}", "0".repeat(40));
    for _ in 0..5 {
        s.get("/api/me", Some(&wrong)).await.expect_error(401, "unauthorized");
    }
    let r = s.get("/api/me", Some(&wrong)).await;
    r.expect_error(429, "rate_limited");
    assert!(r.header("retry-after").is_some());
    // Once refused, the address gets no more checks for a while, even with the right secret.
    s.get("/api/me", Some(&a.key)).await.expect_error(429, "rate_limited");
}

#[tokio::test]
async fn of_concurrent_rotations_with_one_key_exactly_one_succeeds() {
    let s = Server::start().await;
    for round in 0..3 {
        let a = s.register("rotate").await;
        let mut tasks = tokio::task::JoinSet::new();
        for _ in 0..8 {
            let req = s.http.post(s.url("/api/me/rotate-key")).bearer_auth(&a.key);
            tasks.spawn(async move {
                let res = req.send().await.expect("rotate");
                let status = res.status().as_u16();
                (status, res.json::<Value>().await.unwrap_or(Value::Null))
            });
        }
        let answers = tasks.join_all().await;
        let statuses: Vec<u16> = answers.iter().map(|(status, _)| *status).collect();
        let won: Vec<&Value> = answers.iter().filter(|(status, _)| *status == 200).map(|(_, b)| b).collect();
        assert_eq!(won.len(), 1, "round {round}: {statuses:?}");
        for (status, body) in answers.iter().filter(|(status, _)| *status != 200) {
            assert_eq!((*status, body["error"]["code"].as_str()), (401, Some("unauthorized")), "{body}");
        }
        let new_key = won[0]["api_key"].as_str().unwrap();
        s.get("/api/me", Some(new_key)).await.expect(200);
        s.get("/api/me", Some(&a.key)).await.expect_error(401, "unauthorized");
    }
}
