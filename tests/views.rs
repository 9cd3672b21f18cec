//! Cards and calls served from memory, through the real server: every change a card or a call
//! shows is seen by the next read (REST and MCP alike), with a new ETag, whoever made it — this
//! server, `agentdir admin`, a direct edit of the database file — and 304 when nothing changed.

mod common;

use std::time::Duration;

use common::{Agent, Resp, Server};
use serde_json::{Value, json};

async fn card(s: &Server, a: &Agent) -> Resp {
    let r = s.get(&format!("/api/agents/{}", a.handle), None).await;
    r.expect(200);
    r
}

/// The card's ETag, after checking a conditional read of it is 304.
async fn tag_of(s: &Server, path: &str) -> String {
    let r = s.get(path, None).await;
    r.expect(200);
    assert_eq!(r.header("cache-control"), Some("no-cache"));
    let etag = r.header("etag").expect("ETag").to_owned();
    let again = s.send(s.http.get(s.url(path)).header("if-none-match", &etag)).await;
    assert_eq!(again.status, 304, "{path}");
    assert!(again.text.is_empty());
    etag
}

/// What the MCP tool `get_agent` answers for `handle`, as structured content.
async fn mcp_card(s: &Server, handle: &str) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                      "params": {"name": "get_agent", "arguments": {"handle": handle}}});
    let r = s
        .send(
            s.http
                .post(s.url("/mcp"))
                .header("content-type", "application/json")
                .header("accept", "application/json, text/event-stream")
                .body(body.to_string()),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    r.json["result"]["structuredContent"].clone()
}

#[tokio::test]
async fn every_change_a_card_shows_is_seen_at_once_with_a_new_tag() {
    let s = Server::start().await;
    let a = s.claimed("viewed", "owner-a@example.org").await;
    let b = s.claimed("partner", "owner-b@example.org").await;
    let path = format!("/api/agents/{}", a.handle);
    let call = s.seeking(&a, "A recent call").await;
    let mut tags = vec![tag_of(&s, &path).await];
    // Same bytes, same tag, while nothing changes.
    assert_eq!(tag_of(&s, &path).await, tags[0]);
    assert_eq!(mcp_card(&s, &a.handle).await, card(&s, &a).await.json);

    let mut changed = |tag: String, what: &str| {
        assert!(!tags.contains(&tag), "{what}: the ETag did not change");
        tags.push(tag);
    };

    // A reply to one of its recent calls: reply_count.
    s.post(&format!("/api/posts/{call}/replies"), Some(&b.key), json!({"body": "Interested."}))
        .await
        .expect(201);
    assert_eq!(card(&s, &a).await.json["recent_posts"][0]["reply_count"], 1);
    assert_eq!(mcp_card(&s, &a.handle).await["recent_posts"][0]["reply_count"], 1);
    changed(tag_of(&s, &path).await, "reply");

    // A confirmed collaboration: evidence.
    let r = s.post("/api/collabs", Some(&b.key), json!({"partner": a.handle, "summary": "Work done"})).await;
    r.expect(201);
    let collab = r.json["collab"]["id"].as_str().unwrap().to_owned();
    s.post_empty(&format!("/api/collabs/{collab}/confirm"), Some(&a.key)).await.expect(200);
    assert_eq!(card(&s, &a).await.json["evidence"]["confirmed_collaborations"], 1);
    changed(tag_of(&s, &path).await, "confirmed collaboration");

    // The partner's owner claim reset by another process: the evidence no longer counts.
    s.admin_ok(&["unclaim-owner", &b.handle]);
    assert_eq!(card(&s, &a).await.json["evidence"]["confirmed_collaborations"], 0);
    assert_eq!(mcp_card(&s, &a.handle).await["evidence"]["confirmed_collaborations"], 0);
    changed(tag_of(&s, &path).await, "partner unclaimed");

    // The partner renamed: its name in the call's replies changes; the card's call does not.
    s.patch("/api/me", Some(&b.key), json!({"name": "Partner renamed"})).await.expect(200);
    let detail = s.get(&format!("/api/posts/{call}"), None).await;
    assert_eq!(detail.json["replies"][0]["author"]["name"], "Partner renamed");

    // Its own profile, offerings and verification by an operator.
    s.patch("/api/me", Some(&a.key), json!({"tagline": "Now with a tagline"})).await.expect(200);
    assert_eq!(card(&s, &a).await.json["agent"]["tagline"], "Now with a tagline");
    changed(tag_of(&s, &path).await, "profile");
    s.offering(&a).await;
    assert_eq!(card(&s, &a).await.json["agent"]["offerings"].as_array().unwrap().len(), 1);
    changed(tag_of(&s, &path).await, "offerings");
    s.admin_ok(&["unverify-mailbox", &a.handle]);
    assert_eq!(card(&s, &a).await.json["agent"]["trust"]["level"], 0);
    changed(tag_of(&s, &path).await, "verification removed by an operator");

    // A hidden call leaves the card; a suspension removes the card.
    s.admin_ok(&["hide-call", "--category", "spam", &call]);
    assert_eq!(card(&s, &a).await.json["recent_posts"], json!([]));
    changed(tag_of(&s, &path).await, "hidden call");
    s.admin_ok(&["suspend", "--category", "abuse", &a.handle]);
    s.get(&path, None).await.expect_error(404, "not_found");
    let mcp = mcp_card(&s, &a.handle).await;
    assert_eq!(mcp, Value::Null, "the suspended card is still served over MCP");
    s.admin_ok(&["restore", &a.handle]);
    card(&s, &a).await;
}

#[tokio::test]
async fn a_call_with_its_replies_is_never_stale() {
    let s = Server::start().await;
    let author = s.register("author").await;
    let call = s.seeking(&author, "Busy call").await;
    let path = format!("/api/posts/{call}");
    let repliers: Vec<Agent> = {
        let mut v = Vec::new();
        for _ in 0..4 {
            v.push(s.register("replier").await);
        }
        v
    };
    // Readers hammer the call while replies land; after each reply is answered, the next read
    // of the call shows it.
    let reader = {
        let http = s.http.clone();
        let url = s.url(&path);
        tokio::spawn(async move {
            let deadline = std::time::Instant::now() + Duration::from_secs(4);
            let mut reads = 0;
            while std::time::Instant::now() < deadline {
                let r = http.get(&url).send().await.expect("read");
                assert_eq!(r.status(), 200);
                reads += 1;
            }
            reads
        })
    };
    let mut seen_tags = Vec::new();
    for round in 0..12 {
        let who = &repliers[round % repliers.len()];
        s.post(&format!("{path}/replies"), Some(&who.key), json!({"body": format!("reply {round}")}))
            .await
            .expect(201);
        let r = s.get(&path, None).await;
        assert_eq!(r.json["replies"].as_array().unwrap().len(), round + 1, "round {round}");
        assert_eq!(r.json["post"]["reply_count"], round + 1);
        let tag = r.header("etag").unwrap().to_owned();
        assert!(!seen_tags.contains(&tag));
        seen_tags.push(tag);
    }
    assert!(reader.await.expect("reader") > 0);
    // A reply's author suspended by an operator: the reply leaves the call at once.
    s.admin_ok(&["suspend", "--category", "abuse", &repliers[0].handle]);
    let r = s.get(&path, None).await;
    assert_eq!(r.json["replies"].as_array().unwrap().len(), 9);
    assert_eq!(r.json["post"]["reply_count"], 9);
    // Deleted: 404 at once.
    s.delete(&path, Some(&author.key)).await.expect(200);
    s.get(&path, None).await.expect_error(404, "not_found");
}

/// On the moved clock of the `test-clock` feature: the proof's 180 days pass without waiting.
#[cfg(feature = "test-clock")]
#[tokio::test]
async fn a_link_proof_passing_its_180_days_changes_the_card_by_itself() {
    let s = Server::start().await;
    let a = s.register("expiring").await;
    let path = format!("/api/agents/{}", a.handle);
    // A proof established 180 days ago less an hour, written as another process would.
    let db = rusqlite::Connection::open(s.data_dir.join("agentdir.sqlite3")).unwrap();
    let now: i64 = db
        .query_row("SELECT CAST(round((julianday('now') - 2440587.5) * 86400000) AS INTEGER)", [], |r| {
            r.get(0)
        })
        .unwrap();
    let verified_at = now - 180 * 86_400_000 + 3_600_000;
    db.execute(
        "INSERT INTO link_proofs (agent_id, url, host, verified_at) SELECT id, 'https://example.org/me', 'example.org', ?1 FROM agents WHERE handle = ?2",
        rusqlite::params![verified_at, a.handle],
    )
    .unwrap();
    drop(db);
    let before = card(&s, &a).await;
    assert_eq!(before.json["agent"]["trust"]["links"][0]["status"], "verified");
    let listed = s.get(&format!("/api/agents?q={}", a.handle), None).await;
    assert_eq!(listed.json["agents"][0]["trust"]["links"][0]["status"], "verified", "{}", listed.text);
    let tag = tag_of(&s, &path).await;
    let feed = s.get("/api/changes?limit=1000", None).await;
    let cursor = feed.json["next"].as_str().unwrap().to_owned();
    s.clock_ahead(Duration::from_secs(2 * 3_600));
    // Nobody wrote anything: the cached card knew when it stops being true, and so did the
    // agent as an item of the list.
    let after = card(&s, &a).await;
    assert_eq!(after.json["agent"]["trust"]["links"][0]["status"], "expired");
    assert_ne!(after.header("etag"), Some(tag.as_str()));
    let listed = s.get(&format!("/api/agents?q={}", a.handle), None).await;
    assert_eq!(listed.json["agents"][0]["trust"]["links"][0]["status"], "expired", "{}", listed.text);
    // The server also records the change, so a mirror following the feed learns it.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let changes = s.get(&format!("/api/changes?after={cursor}"), None).await;
        let entry = changes.json["changes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["id"] == a.handle.as_str())
            .cloned();
        if let Some(entry) = entry {
            assert_eq!(entry["data"]["trust"]["links"][0]["status"], "expired");
            break;
        }
        assert!(std::time::Instant::now() < deadline, "the expiry never reached the change feed");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test]
async fn cache_use_is_measured() {
    let s = Server::start().await;
    let a = s.register("measured").await;
    for _ in 0..5 {
        card(&s, &a).await;
    }
    let metrics = s.get("/metrics", None).await.text;
    let value = |name: &str| -> f64 {
        metrics
            .lines()
            .find(|l| l.starts_with(name) && l[name.len()..].starts_with(' '))
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("{name} missing from /metrics"))
    };
    assert!(value("agentdir_view_cache_hits_total") >= 4.0);
    assert!(value("agentdir_view_cache_misses_total") >= 1.0);
    assert!(value("agentdir_view_cache_bytes") > 0.0);
    assert!(value("agentdir_view_cache_views") >= 1.0);
}

/// The items of a list or a search (kept in memory once read) change with what they show,
/// whoever changed it: the next search after a write shows the write.
#[tokio::test]
async fn list_and_search_items_are_never_stale() {
    // Words only: the searches below count exactly the agents that hold a made-up word. By
    // meaning, a word no profile holds may still meet the nearest profile (docs/search.md).
    let words_only: Vec<(&str, &str)> =
        common::RELAXED_LIMITS.iter().copied().chain([("AGENTDIR_SEARCH_MODE", "words")]).collect();
    let s = Server::start_with(&words_only).await;
    let word = format!("zircon{}", std::process::id());
    let a = s.register("listed").await;
    let b = s.register("replying").await;
    s.patch("/api/me", Some(&a.key), json!({"tagline": format!("Cuts {word} gems")})).await.expect(200);
    let agents = format!("/api/agents?q={word}");
    let item = |r: &Resp| r.json["agents"][0].clone();
    // Read twice: the second page comes from the kept items.
    for _ in 0..2 {
        let r = s.get(&agents, None).await;
        assert_eq!(r.json["total"], 1, "{}", r.text);
        assert_eq!(item(&r)["handle"], a.handle.as_str());
    }
    s.patch("/api/me", Some(&a.key), json!({"name": "Renamed lister"})).await.expect(200);
    assert_eq!(item(&s.get(&agents, None).await)["name"], "Renamed lister");
    s.offering(&a).await;
    assert_eq!(item(&s.get(&agents, None).await)["offerings"].as_array().unwrap().len(), 1);
    // Another process verifies the mailbox.
    s.admin_ok(&["verify-mailbox", &a.handle]);
    assert_eq!(item(&s.get(&agents, None).await)["trust"]["level"], 1);
    // Suspended: gone from the list; restored: back.
    s.admin_ok(&["suspend", "--category", "abuse", &a.handle]);
    assert_eq!(s.get(&agents, None).await.json["total"], 0);
    s.admin_ok(&["restore", &a.handle]);
    assert_eq!(item(&s.get(&agents, None).await)["name"], "Renamed lister");

    // A call in the call search.
    let call = s.seeking(&a, &format!("Needs {word} polishing")).await;
    let calls = format!("/api/posts?q={word}");
    let first = |r: &Resp| r.json["posts"][0].clone();
    for _ in 0..2 {
        assert_eq!(first(&s.get(&calls, None).await)["id"], call.as_str());
    }
    s.post(&format!("/api/posts/{call}/replies"), Some(&b.key), json!({"body": "I can."})).await.expect(201);
    assert_eq!(first(&s.get(&calls, None).await)["reply_count"], 1);
    // Its author renamed, and verified no more by another process: the item's author changes.
    s.patch("/api/me", Some(&a.key), json!({"name": "Lister again"})).await.expect(200);
    assert_eq!(first(&s.get(&calls, None).await)["author"]["name"], "Lister again");
    s.admin_ok(&["unverify-mailbox", &a.handle]);
    assert_eq!(first(&s.get(&calls, None).await)["author"]["verified"], false);
    // Hidden by an operator: gone; restored: back; its author suspended: gone.
    s.admin_ok(&["hide-call", "--category", "spam", &call]);
    assert_eq!(s.get(&calls, None).await.json["total"], 0);
    s.admin_ok(&["restore-call", &call]);
    assert_eq!(first(&s.get(&calls, None).await)["reply_count"], 1);
    s.admin_ok(&["suspend", "--category", "abuse", &a.handle]);
    assert_eq!(s.get(&calls, None).await.json["total"], 0);
}

/// The cached reads look at SQLite's WAL-index (`store/wal_index.rs`) through a descriptor of the
/// `-shm` file of their own. POSIX drops every lock a process holds on a file when it closes any
/// descriptor of it: had the server closed one, it would hold no lock on the `-shm`, and the next
/// process to open the database (an `agentdir admin` command) would take itself for the first,
/// truncate the file under the server's map and kill the server with SIGBUS.
#[tokio::test]
async fn the_server_keeps_its_locks_on_the_wal_index_while_admin_commands_come_and_go() {
    use std::os::unix::fs::MetadataExt;
    let s = Server::start().await;
    let a = s.verified("locks").await;
    card(&s, &a).await;
    let shm = s.data_dir.join(format!("{}-shm", agentdir::store::DB_FILE));
    let inode = std::fs::metadata(&shm).expect("the -shm exists").ino();
    let pid = s.pid().to_string();
    let held = || {
        let locks = std::fs::read_to_string("/proc/locks").expect("/proc/locks");
        locks.lines().any(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            f.iter().position(|x| *x == pid.as_str()).is_some_and(|i| {
                f.get(i + 1).and_then(|dev| dev.rsplit(':').next()) == Some(inode.to_string().as_str())
            })
        })
    };
    assert!(held(), "the server holds no lock on its -shm file");
    for i in 0..5 {
        let b = s.verified(&format!("come{i}")).await;
        s.admin_ok(&["unverify-mailbox", &b.handle]);
        card(&s, &a).await;
        assert!(held(), "the server lost its lock on the -shm after admin command {i}");
    }
    assert_eq!(s.process_state(), "the server process still runs");
}
