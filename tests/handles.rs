//! Reserved handles: the built-in lists and the operator's additions refuse registration and
//! renames, with the handles that start or end with a reserved word or spell one with look-alike
//! characters; ordinary handles that merely hold the letters pass.

mod common;

use common::{RELAXED_LIMITS, Server};
use serde_json::json;

fn registration(handle: &str) -> serde_json::Value {
    json!({
        "handle": handle, "name": "Someone", "owner": "Test Owner",
        "mailbox": format!("{handle}@example.org"), "accept_rules": true,
        "description_en": "A test agent.",
    })
}

#[tokio::test]
async fn reserved_handles_are_refused_at_registration() {
    let env: Vec<(&str, &str)> = RELAXED_LIMITS
        .iter()
        .copied()
        .chain([("AGENTDIR_RESERVED_HANDLES", "acme-corp, Our-Brand")])
        .collect();
    let s = Server::start_with(&env).await;
    for handle in ["admin", "api", "verify", "support", "agentdir", "deleted", "acme-corp", "our-brand"] {
        s.post("/api/agents", None, registration(handle)).await.expect_error(409, "handle_reserved");
        s.get(&format!("/api/agents/{handle}"), None).await.expect_error(404, "not_found");
    }
    assert_eq!(s.get("/api/stats", None).await.json["agents"], 0, "a refused registration changes nothing");
    // The operator's additions are reserved the way the built-in list is.
    for handle in ["acme-corp-fan", "fans-of-acme-corp", "4cme-c0rp", "our-brand-support"] {
        s.post("/api/agents", None, registration(handle)).await.expect_error(409, "handle_reserved");
    }
    s.post("/api/agents", None, registration("acme-corporation")).await.expect(201);
}

#[tokio::test]
async fn handles_joined_to_a_reserved_word_or_spelled_like_one_are_refused() {
    let s = Server::start().await;
    let refused = [
        "agentdir-support",
        "admin-team",
        "verify-bot",
        "team-admin",
        "adm1n",
        "4dmin",
        "a-d-m-i-n",
        "supp0rt",
        "no-reply-bot",
        "n0reply",
        "5ecurity",
        "0fficial",
        "ap1",
    ];
    for handle in refused {
        s.post("/api/agents", None, registration(handle)).await.expect_error(409, "handle_reserved");
    }
    let ordinary = [
        "apiary",
        "supporter",
        "administrative-law",
        "helpful",
        "api-tester",
        "mcp-weather",
        "my-admin-team",
        "support-bot-builder",
        "security-auditor",
    ];
    for handle in ordinary {
        s.post("/api/agents", None, registration(handle)).await.expect(201);
    }
    assert_eq!(s.get("/api/stats", None).await.json["agents"], ordinary.len());
    // Renames follow the same rule.
    let a = s.register("renaming").await;
    for handle in ["verify-bot", "adm1n"] {
        s.post("/api/me/handle", Some(&a.key), json!({"handle": handle}))
            .await
            .expect_error(409, "handle_reserved");
    }
    s.post("/api/me/handle", Some(&a.key), json!({"handle": "supporters-club"})).await.expect(200);
}

/// A client that shows redirects instead of following them.
fn no_redirects() -> reqwest::Client {
    reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap()
}

/// What the handle an agent had before its rename leads to, beyond the card (whose 301
/// tests/leaving.rs covers): its statement answers 301 to the new statement, a key recovery
/// started for it recovers the renamed agent (its owner may know only the old handle, even
/// after a deletion), and a contact request sent to it reaches the renamed agent.
#[tokio::test]
async fn an_old_handle_leads_to_the_renamed_agent_as_its_card_does() {
    use common::mail::{deliver, dkim_pass, message};
    let s = common::mail::server().await;
    let x = s.verified("renamed").await;
    let offering = s.offering(&x).await;
    let sender = s.verified("sender").await;
    let old = x.handle.clone();
    let new = common::unique_handle("new-name");
    s.post("/api/me/handle", Some(&x.key), json!({"handle": new})).await.expect(200);

    // The statement: 301 to the new statement, which verifies as before.
    let r = no_redirects().get(s.url(&format!("/api/agents/{old}/statement"))).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 301);
    let location = r.headers().get("location").unwrap().to_str().unwrap().to_owned();
    assert_eq!(location, format!("/api/agents/{new}/statement"));
    let followed = s.get(&location, None).await;
    followed.expect(200);
    assert!(followed.json["payload"].is_string(), "{}", followed.text);
    s.get("/api/agents/nobody-ever/statement", None).await.expect_error(404, "not_found");

    // A contact request to the old handle reaches the renamed agent, under its new handle.
    let sent = s
        .post(
            &format!("/api/agents/{old}/requests"),
            Some(&sender.key),
            json!({"offering_id": offering, "purpose": "Translate our README", "deliverable": "A Chinese README", "compensation": "none"}),
        )
        .await;
    sent.expect(201);
    assert_eq!(sent.json["request"]["recipient"]["handle"], new.as_str());
    assert_eq!(s.get("/api/me/requests", Some(&x.key)).await.json["total"], 1);

    // A key recovery started for the old handle recovers the renamed agent.
    let recover = |handle: String| {
        let s = &s;
        let mailbox = x.mailbox.clone();
        async move {
            let started = s.post_empty(&format!("/api/agents/{handle}/recover"), None).await;
            started.expect(200);
            let subject = started.json["subject"].as_str().unwrap();
            let (code, err) = deliver(s, &message(&mailbox, subject, &dkim_pass(&mailbox)));
            assert_eq!(code, 0, "{err}");
            let token = started.json["recovery_token"].as_str().unwrap();
            let done = s.post("/api/recover", None, json!({"recovery_token": token})).await;
            done.expect(200);
            done
        }
    };
    let done = recover(old.clone()).await;
    assert_eq!(done.json["handle"], new.as_str());
    let key = done.json["api_key"].as_str().unwrap().to_owned();
    s.get("/api/me", Some(&key)).await.expect(200);

    // Deleted after the rename (say, by a thief who renamed it): the card, the statement and
    // requests answer 404 for both handles, and the old handle still starts the recovery that
    // undoes the deletion.
    s.delete("/api/me", Some(&key)).await.expect(200);
    for handle in [&old, &new] {
        s.get(&format!("/api/agents/{handle}/statement"), None).await.expect_error(404, "not_found");
        s.post(
            &format!("/api/agents/{handle}/requests"),
            Some(&sender.key),
            json!({"offering_id": offering, "purpose": "Again", "deliverable": "Anything", "compensation": "none"}),
        )
        .await
        .expect_error(404, "not_found");
    }
    let done = recover(old.clone()).await;
    assert_eq!(done.json["handle"], new.as_str());
    s.get(&format!("/api/agents/{new}"), None).await.expect(200);
}
