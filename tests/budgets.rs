//! Budgets nobody else can spend and work nobody gets for free, through a real server: refused
//! registrations spend nothing of the agent whose handle they name, and are themselves counted
//! per client address; a new agent's endpoints spend its own links budget; an agent's budgets
//! are counted by its id, so neither a rename nor a restart refills them; a refused registration
//! costs no hash and no embedding; profile writes that change what the profile means are
//! limited per agent and embed only what changed; and one agent's stream of profile writes
//! holds one embedding permit at most, so another agent's edit does not queue behind it.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use common::{Agent, Resp, Server, assert_limited, limits, metric_value, unique_handle};
use serde_json::{Value, json};

/// Profiles the model embedded for registrations and profile writes so far.
async fn embeddings(s: &Server) -> f64 {
    metric_value(s, "agentdir_profile_embeddings_total").await
}

/// An endpoint list the server accepts (with `AGENTDIR_LINK_FETCH_ALLOW_PRIVATE=1`) and checks
/// without leaving the machine.
fn endpoints() -> Value {
    json!([{"kind": "http", "url": "http://127.0.0.1:9/"}])
}

/// A registration of `handle` with `extra` fields.
fn registration(handle: &str, extra: Value) -> Value {
    let mut body = json!({
        "handle": handle, "name": "Someone Else", "owner": "Not The Owner",
        "mailbox": "someone@example.org", "accept_rules": true,
        "description_en": "Wants this handle.",
    });
    for (k, v) in extra.as_object().expect("an object").clone() {
        body[k] = v;
    }
    body
}

/// The longest profile a registration may carry, different for each `i` (so no vector can be
/// reused): about 2,000 characters to embed.
fn long_profile(i: usize) -> Value {
    let en: String =
        format!("Variant {i}. ").chars().chain("I turn long podcast episodes into subtitles, with a glossary and a second reading of every line. ".chars().cycle()).take(600).collect();
    let zh: String = format!("第{i}版。")
        .chars()
        .chain("我把长篇播客节目做成中英文字幕，并附上术语表，每一行都经过第二遍校对。".chars().cycle())
        .take(600)
        .collect();
    let capabilities: Vec<String> =
        (0..12).map(|c| format!("capability {c} of variant {i}: subtitles and glossaries")).collect();
    json!({
        "tagline": format!("Subtitles and glossaries, variant {i}"),
        "description_en": en, "description_zh": zh, "capabilities": capabilities,
    })
}

async fn register_from(s: &Server, xff: &str, body: Value) -> Resp {
    s.send(s.http.post(s.url("/api/agents")).header("x-forwarded-for", xff).json(&body)).await
}

/// CPU time the process has used so far (user and system), from `/proc/<pid>/stat`.
fn cpu_time(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("read /proc/<pid>/stat");
    // Fields after the command name, which ends with the last ')': state is field 3, utime 14,
    // stime 15.
    let rest = &stat[stat.rfind(')').expect("a command name") + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 = fields[11].parse::<u64>().expect("utime") + fields[12].parse::<u64>().expect("stime");
    let out = std::process::Command::new("getconf").arg("CLK_TCK").output().expect("getconf");
    let per_second: u64 = String::from_utf8_lossy(&out.stdout).trim().parse().expect("CLK_TCK");
    Duration::from_millis(ticks * 1000 / per_second)
}

/// The probe's case: ten registrations of a taken handle, each with endpoints, answered 409. The
/// agent that holds the handle still has all of its links budget: it sets its endpoints, tries
/// a link proof, and only its own eleventh use is refused.
#[tokio::test]
async fn refused_registrations_of_a_taken_handle_spend_nothing_of_its_agent() {
    let s = Server::start_with(&limits(&[
        ("AGENTDIR_RATE_LIMIT_LINKS", "10/h"),
        ("AGENTDIR_LINK_FETCH_ALLOW_PRIVATE", "1"),
    ]))
    .await;
    let victim = s.register("victim").await;
    for _ in 0..10 {
        let body = registration(&victim.handle, json!({"endpoints": endpoints()}));
        s.post("/api/agents", None, body).await.expect_error(409, "handle_taken");
    }
    s.patch("/api/me", Some(&victim.key), json!({"endpoints": endpoints()})).await.expect(200);
    let proof = json!({"url": "http://127.0.0.1:9/proof"});
    s.post("/api/me/links", Some(&victim.key), proof).await.expect_error(422, "link_fetch_failed");
    for _ in 0..8 {
        s.patch("/api/me", Some(&victim.key), json!({"endpoints": endpoints()})).await.expect(200);
    }
    assert_limited(&s.patch("/api/me", Some(&victim.key), json!({"endpoints": endpoints()})).await, 3600);
}

/// Endpoints given at registration spend the new agent's own links budget, which stays its own
/// under a new handle.
#[tokio::test]
async fn registering_with_endpoints_spends_the_new_agents_links_budget() {
    let s = Server::start_with(&limits(&[
        ("AGENTDIR_RATE_LIMIT_LINKS", "1/h"),
        ("AGENTDIR_LINK_FETCH_ALLOW_PRIVATE", "1"),
    ]))
    .await;
    let handle = unique_handle("with-endpoints");
    let r = s.post("/api/agents", None, registration(&handle, json!({"endpoints": endpoints()}))).await;
    r.expect(201);
    let key = r.json["api_key"].as_str().expect("api_key").to_owned();
    s.post("/api/me/handle", Some(&key), json!({"handle": unique_handle("renamed")})).await.expect(200);
    assert_limited(&s.patch("/api/me", Some(&key), json!({"endpoints": endpoints()})).await, 3600);
    let other = s.register("without-endpoints").await;
    s.patch("/api/me", Some(&other.key), json!({"endpoints": endpoints()})).await.expect(200);
}

/// Registrations refused for their handle (taken, held, reserved) are counted per client
/// address at the registration rate: once they used it up, every registration from there meets
/// 429 before anything is looked at, while another address registers as before.
#[tokio::test]
async fn a_flood_of_refused_registrations_meets_429_per_client_address() {
    let s = Server::start_with(&limits(&[
        ("AGENTDIR_RATE_LIMIT_REGISTRATION", "3/h"),
        ("AGENTDIR_TRUSTED_PROXIES", "127.0.0.1"),
    ]))
    .await;
    let taken = s.register("taken").await;
    let flooder = "203.0.113.5";
    register_from(&s, flooder, registration(&taken.handle, json!({})))
        .await
        .expect_error(409, "handle_taken");
    register_from(&s, flooder, registration("admin-team", json!({})))
        .await
        .expect_error(409, "handle_reserved");
    register_from(&s, flooder, registration(&taken.handle, json!({})))
        .await
        .expect_error(409, "handle_taken");
    assert_limited(&register_from(&s, flooder, registration(&taken.handle, json!({}))).await, 3600);
    // Spent: even a free handle is refused from there, and nothing is written.
    let free = unique_handle("free");
    assert_limited(&register_from(&s, flooder, registration(&free, json!({}))).await, 3600);
    s.get(&format!("/api/agents/{free}"), None).await.expect_error(404, "not_found");
    // Another address is not affected.
    register_from(&s, "203.0.113.6", registration(&free, json!({}))).await.expect(201);
    assert_eq!(s.get("/api/stats", None).await.json["agents"], 2);
    assert_eq!(metric_value(&s, "agentdir_rate_limited_total{limit=\"refused_registrations\"}").await, 2.0);
}

/// Spends one use of each per-agent budget past its limit and asserts each is refused.
async fn assert_spent(s: &Server, a: &Agent, call: &str) {
    let post = json!({"kind": "seeking", "title": "Another call", "body": "Over the limit."});
    assert_limited(&s.post("/api/posts", Some(&a.key), post).await, 86_400);
    let reply = json!({"body": "Over the limit."});
    assert_limited(&s.post(&format!("/api/posts/{call}/replies"), Some(&a.key), reply).await, 3600);
    assert_limited(&s.patch("/api/me", Some(&a.key), json!({"endpoints": endpoints()})).await, 3600);
    assert_limited(&s.patch("/api/me", Some(&a.key), json!({"tagline": "Over the limit"})).await, 3600);
}

/// Calls, replies, links and profile edits are counted by the agent's id: a rename does not
/// give it fresh budgets under its new handle, nor does a restart; another agent has its own.
#[tokio::test]
async fn an_agents_budgets_survive_a_rename_and_a_restart() {
    let mut s = Server::start_with(&limits(&[
        ("AGENTDIR_RATE_LIMIT_CALLS", "1/d"),
        ("AGENTDIR_RATE_LIMIT_REPLIES", "2/h"),
        ("AGENTDIR_RATE_LIMIT_LINKS", "2/h"),
        ("AGENTDIR_RATE_LIMIT_PROFILE_EDITS", "2/h"),
        ("AGENTDIR_LINK_FETCH_ALLOW_PRIVATE", "1"),
    ]))
    .await;
    let author = s.register("author").await;
    let call = s.seeking(&author, "Need a reviewer").await;
    let a = s.register("spender").await;
    s.seeking(&a, "A call of its own").await;
    for i in 0..2 {
        s.post(&format!("/api/posts/{call}/replies"), Some(&a.key), json!({"body": "I can help."}))
            .await
            .expect(201);
        s.patch("/api/me", Some(&a.key), json!({"endpoints": endpoints()})).await.expect(200);
        s.patch("/api/me", Some(&a.key), json!({"tagline": format!("Tagline {i}")})).await.expect(200);
    }
    assert_spent(&s, &a, &call).await;

    let renamed = unique_handle("renamed");
    s.post("/api/me/handle", Some(&a.key), json!({"handle": renamed})).await.expect(200);
    assert_spent(&s, &a, &call).await;

    s.restart();
    assert_spent(&s, &a, &call).await;
    // The refusals changed nothing.
    let me = s.get("/api/me", Some(&a.key)).await;
    assert_eq!(me.json["agent"]["tagline"], "Tagline 1", "{}", me.text);

    let b = s.register("other").await;
    s.seeking(&b, "Its own call").await;
    s.post(&format!("/api/posts/{call}/replies"), Some(&b.key), json!({"body": "Me too."})).await.expect(201);
    s.patch("/api/me", Some(&b.key), json!({"endpoints": endpoints()})).await.expect(200);
    s.patch("/api/me", Some(&b.key), json!({"tagline": "Its own tagline"})).await.expect(200);
}

/// Only writes that change the profile's embedded text count against the profile-edit limit,
/// and only they cost an embedding; a refused one costs none and changes nothing.
#[tokio::test]
async fn profile_edits_count_and_embed_only_changes_of_what_the_profile_means() {
    let mut s = Server::start_with(&limits(&[("AGENTDIR_RATE_LIMIT_PROFILE_EDITS", "2/h")])).await;
    let a = s.register("editor").await;
    let before = embeddings(&s).await;

    s.patch("/api/me", Some(&a.key), json!({"tagline": "Subtitles for podcasts"})).await.expect(200);
    assert_eq!(embeddings(&s).await, before + 1.0, "a new text is embedded");
    // The same text again, and fields that are not embedded: neither counted nor embedded.
    s.patch("/api/me", Some(&a.key), json!({"tagline": "Subtitles for podcasts"})).await.expect(200);
    s.patch("/api/me", Some(&a.key), json!({"name": format!("Agent {}", a.handle)})).await.expect(200);
    s.patch(
        "/api/me",
        Some(&a.key),
        json!({"homepage": "https://example.org/", "contact_policy": {"accepting": false}}),
    )
    .await
    .expect(200);
    s.put("/api/me/offerings", Some(&a.key), json!({"offerings": []})).await.expect(200);
    assert_eq!(embeddings(&s).await, before + 1.0, "an unchanged text was embedded");

    let offering = json!({"title": "Subtitles", "deliverable": "An SRT file", "mode": "free"});
    let r = s.put("/api/me/offerings", Some(&a.key), json!({"offerings": [offering]})).await;
    r.expect(200);
    assert_eq!(embeddings(&s).await, before + 2.0);
    let mut same = offering.clone();
    same["id"] = r.json["offerings"][0]["id"].clone();
    s.put("/api/me/offerings", Some(&a.key), json!({"offerings": [same]})).await.expect(200);

    // Two changes: the budget is spent. Refused before any embedding, and nothing changes.
    assert_limited(&s.patch("/api/me", Some(&a.key), json!({"tagline": "Something else"})).await, 3600);
    let other = json!({"title": "Glossaries", "deliverable": "A glossary", "mode": "free"});
    assert_limited(&s.put("/api/me/offerings", Some(&a.key), json!({"offerings": [other]})).await, 3600);
    assert_eq!(embeddings(&s).await, before + 2.0, "a refused write was embedded");
    let me = s.get("/api/me", Some(&a.key)).await;
    assert_eq!(me.json["agent"]["tagline"], "Subtitles for podcasts");
    assert_eq!(me.json["agent"]["offerings"][0]["title"], "Subtitles", "{}", me.text);
    // Writes that do not change the text still pass.
    s.patch("/api/me", Some(&a.key), json!({"contact_policy": {"accepting": true}})).await.expect(200);
    assert_eq!(metric_value(&s, "agentdir_rate_limited_total{limit=\"profile_edits\"}").await, 2.0);

    s.restart();
    assert_limited(&s.patch("/api/me", Some(&a.key), json!({"tagline": "After a restart"})).await, 3600);
}

/// A registration refused for its handle costs no argon2 hash and no embedding: twenty of them
/// with the longest profiles cost the server well under 50 ms of CPU each.
#[tokio::test]
async fn a_refused_registration_costs_no_hash_and_no_embedding() {
    let s = Server::start().await;
    let victim = s.register("victim").await;
    let mover = s.register("mover").await;
    let renamed = unique_handle("moved");
    s.post("/api/me/handle", Some(&mover.key), json!({"handle": renamed})).await.expect(200);
    let before_embeddings = embeddings(&s).await;
    let cpu_before = cpu_time(s.pid());
    for i in 0..20 {
        // A taken handle, and the held previous handle of a renamed agent.
        let handle = if i % 2 == 0 { &victim.handle } else { &mover.handle };
        s.post("/api/agents", None, registration(handle, long_profile(i)))
            .await
            .expect_error(409, "handle_taken");
    }
    let spent = cpu_time(s.pid()) - cpu_before;
    eprintln!("20 refused registrations with long profiles: {} ms of server CPU", spent.as_millis());
    assert!(spent < Duration::from_millis(20 * 50), "20 refused registrations cost {spent:?} of CPU");
    assert_eq!(embeddings(&s).await, before_embeddings);
}

/// One agent sending long profile edits from four loops at once holds one embedding permit at
/// most: another agent's short edit waits for none of them (with one core, for one at most).
#[tokio::test]
async fn one_agents_profile_writes_do_not_slow_another_agents_edit() {
    let s = Arc::new(Server::start().await);
    let busy = s.register("busy").await;
    let calm = s.register("calm").await;
    let counter = Arc::new(AtomicUsize::new(0));
    // One long embedding, alone.
    let started = Instant::now();
    s.patch("/api/me", Some(&busy.key), long_profile(0)).await.expect(200);
    let one = started.elapsed();

    let stop = Arc::new(AtomicBool::new(false));
    let loops: Vec<_> = (0..4)
        .map(|_| {
            let (s, key, stop, counter) = (s.clone(), busy.key.clone(), stop.clone(), counter.clone());
            tokio::spawn(async move {
                while !stop.load(Ordering::Relaxed) {
                    let i = counter.fetch_add(1, Ordering::Relaxed) + 1;
                    s.patch("/api/me", Some(&key), long_profile(i)).await.expect(200);
                }
            })
        })
        .collect();
    // Let the loops fill the queue (this waits for load, not for time to pass).
    tokio::time::sleep(one * 2).await;
    let mut worst = Duration::ZERO;
    for k in 0..3 {
        let started = Instant::now();
        s.patch("/api/me", Some(&calm.key), json!({"tagline": format!("Calm edit {k}")})).await.expect(200);
        worst = worst.max(started.elapsed());
    }
    stop.store(true, Ordering::Relaxed);
    for l in loops {
        l.await.expect("a loop");
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let bound = if cores >= 2 { one } else { one * 2 };
    eprintln!(
        "one long embedding: {} ms; another agent's short edit under four loops: worst {} ms ({cores} cores)",
        one.as_millis(),
        worst.as_millis()
    );
    assert!(worst < bound, "a short edit took {worst:?} beside one agent's loops (one embedding: {one:?})");
}
