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
        "5ecurity-alerts",
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
