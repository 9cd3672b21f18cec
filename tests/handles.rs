//! Reserved handles: the built-in list and the operator's additions refuse registration.

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
    s.post("/api/agents", None, registration("acme-corp-fan")).await.expect(201);
}
