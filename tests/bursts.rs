//! Bursts queue, they do not fail: 200 registrations at once, each from its own client address
//! (through a trusted proxy's `X-Forwarded-For`), and 200 calls at once by 20 agents, against a
//! real server whose rate limits are set high enough that every one of them should be created.
//! No answer may be a 5xx; here every one must be a 201, and every call must then be findable.

mod common;

use std::sync::Arc;

use common::{RELAXED_LIMITS, Resp, Server, unique_handle};
use serde_json::json;

const BURST: usize = 200;
const AUTHORS: usize = 20;

fn env() -> Vec<(&'static str, &'static str)> {
    let mut env = RELAXED_LIMITS.to_vec();
    env.push(("AGENTDIR_TRUSTED_PROXIES", "127.0.0.1"));
    env
}

#[track_caller]
fn all_created(answers: &[Resp], what: &str) {
    let server_errors: Vec<&Resp> = answers.iter().filter(|r| r.status >= 500).collect();
    assert!(
        server_errors.is_empty(),
        "{} {what} answered 5xx, e.g. {:?}",
        server_errors.len(),
        server_errors[0]
    );
    for r in answers {
        assert_eq!(r.status, 201, "{what}: {}", r.text);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_hundred_registrations_at_once_from_distinct_addresses_are_all_created() {
    let s = Arc::new(Server::start_with(&env()).await);
    let mut tasks = Vec::new();
    for i in 0..BURST {
        let s = s.clone();
        tasks.push(tokio::spawn(async move {
            let handle = unique_handle("burst");
            let req = s
                .http
                .post(s.url("/api/agents"))
                .header("x-forwarded-for", format!("10.20.{}.{}", i / 250, 1 + i % 250))
                .json(&json!({
                    "handle": handle, "name": format!("Burst {i}"), "owner": "Burst Test",
                    "mailbox": format!("{handle}@example.org"), "accept_rules": true,
                    "description_en": format!("Announced in a burst, number {i}."),
                }));
            (handle, s.send(req).await)
        }));
    }
    let mut answers = Vec::new();
    let mut handles = Vec::new();
    for t in tasks {
        let (handle, r) = t.await.expect("task");
        handles.push(handle);
        answers.push(r);
    }
    all_created(&answers, "registrations");
    for handle in handles.iter().step_by(20) {
        s.get(&format!("/api/agents/{handle}"), None).await.expect(200);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_hundred_calls_at_once_by_twenty_agents_are_all_created_and_findable() {
    let s = Arc::new(Server::start_with(&env()).await);
    let mut authors = Vec::new();
    for _ in 0..AUTHORS {
        authors.push(s.register("burst-author").await);
    }
    let marker = format!("burstmark{}", std::process::id());
    let mut tasks = Vec::new();
    for i in 0..BURST {
        let s = s.clone();
        let key = authors[i % AUTHORS].key.clone();
        let body = json!({"kind": "seeking", "title": format!("Burst call {i} {marker}"), "body": "Posted in a burst."});
        tasks.push(tokio::spawn(async move { s.post("/api/posts", Some(&key), body).await }));
    }
    let mut answers = Vec::new();
    for t in tasks {
        answers.push(t.await.expect("task"));
    }
    all_created(&answers, "calls");
    let found = s.get(&format!("/api/posts?q={marker}&limit=1"), None).await;
    assert_eq!(found.json["total"].as_u64(), Some(BURST as u64), "{}", found.text);
}
