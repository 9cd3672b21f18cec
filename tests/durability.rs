//! Crash durability: several clients write to a real server — registrations, calls, replies,
//! contact requests — until it is killed with SIGKILL in the middle of the stream. After a
//! restart on the same data dir, every write that was answered 2xx must be there and findable
//! by search, and nothing half-written may show: no call without its author, and the counts
//! and search totals the API reports must equal what SQLite holds.

mod common;

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use common::{Agent, RELAXED_LIMITS, Server};
use serde_json::{Value, json};

const RECIPIENTS: usize = 6;

/// What the server acknowledged with a 2xx.
#[derive(Default)]
struct Acked {
    agents: Vec<(Agent, String)>,
    calls: Vec<(String, String, String)>,
    replies: Vec<(String, String)>,
    requests: Vec<(String, String)>,
}

/// A POST that reports a transport failure (the server died) as `None`.
async fn post(http: &reqwest::Client, url: String, key: Option<&str>, body: Value) -> Option<(u16, Value)> {
    let mut req = http.post(url).json(&body);
    if let Some(k) = key {
        req = req.bearer_auth(k);
    }
    let res = req.send().await.ok()?;
    let status = res.status().as_u16();
    let json = res.json::<Value>().await.ok()?;
    Some((status, json))
}

struct Writer {
    n: usize,
    http: reqwest::Client,
    base: String,
    sender: Agent,
    recipients: Vec<(String, String)>,
    corpus: String,
    acks: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
}

impl Writer {
    /// Writes until the server stops answering; returns what it acknowledged.
    async fn run(self) -> Acked {
        let mut acked = Acked::default();
        let url = |p: &str| format!("{}{p}", self.base);
        for round in 0.. {
            if self.stop.load(Ordering::Relaxed) || round > 10_000 {
                break;
            }
            let tag = format!("w{}r{round}", self.n);
            let word = format!("{}{tag}", self.corpus);

            let handle = format!("dur-{}-{tag}", std::process::id() % 100_000);
            let mailbox = format!("{handle}@example.org");
            let body = json!({
                "handle": handle, "name": format!("Durable {tag}"), "owner": "Crash Test",
                "mailbox": mailbox, "accept_rules": true,
                "description_en": format!("Registered under load. {word} {} agentcorpus", self.corpus),
            });
            let Some((status, r)) = post(&self.http, url("/api/agents"), None, body).await else { break };
            let author = if status == 201 {
                let key = r["api_key"].as_str().unwrap_or_default().to_owned();
                let agent = Agent { handle, key, mailbox };
                acked.agents.push((agent.clone(), word.clone()));
                self.acks.fetch_add(1, Ordering::Relaxed);
                agent
            } else {
                self.sender.clone()
            };

            let body = json!({"kind": "seeking", "title": format!("Call {word}"), "body": format!("Written under load {}callcorpus.", self.corpus)});
            let Some((status, r)) = post(&self.http, url("/api/posts"), Some(&author.key), body).await else {
                break;
            };
            if status == 201 {
                let id = r["id"].as_str().unwrap_or_default().to_owned();
                acked.calls.push((id, word.clone(), author.handle.clone()));
                self.acks.fetch_add(1, Ordering::Relaxed);
            }

            if let Some((call, _, _)) = acked.calls.last().cloned() {
                let body = json!({"body": format!("Reply {tag}")});
                let path = format!("/api/posts/{call}/replies");
                let Some((status, r)) = post(&self.http, url(&path), Some(&self.sender.key), body).await
                else {
                    break;
                };
                if status == 201 {
                    acked.replies.push((r["id"].as_str().unwrap_or_default().to_owned(), call));
                    self.acks.fetch_add(1, Ordering::Relaxed);
                }
            }

            if let Some((recipient, offering)) = self.recipients.get(round) {
                let body = json!({"offering_id": offering, "purpose": format!("Work {tag}"), "deliverable": "A report", "compensation": "none"});
                let path = format!("/api/agents/{recipient}/requests");
                let Some((status, r)) = post(&self.http, url(&path), Some(&self.sender.key), body).await
                else {
                    break;
                };
                if status == 201 {
                    acked.requests.push((
                        r["request"]["id"].as_str().unwrap_or_default().to_owned(),
                        self.sender.key.clone(),
                    ));
                    self.acks.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
        acked
    }
}

fn sqlite_count(db: &rusqlite::Connection, sql: &str) -> u64 {
    db.query_row(sql, [], |r| r.get::<_, i64>(0)).unwrap_or_else(|e| panic!("{sql}: {e}")) as u64
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn acknowledged_writes_survive_sigkill_and_stay_searchable() {
    crash_and_check(4, 60).await;
}

/// The same with the writer busy at full batch size: as many clients as the server lets in at
/// once, so every batch is as large as the queue allows when the kill lands, and the search
/// index holds most of what it has applied in memory only (unflushed).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn acknowledged_writes_survive_sigkill_with_the_writer_busy() {
    crash_and_check(64, 400).await;
}

/// `clients` writers write until `acks_before_kill` writes were acknowledged; then SIGKILL,
/// restart, and check.
async fn crash_and_check(clients: usize, acks_before_kill: usize) {
    // The word index is what must hold every committed write, counted exactly below; meaning
    // (stored in the same transactions) would add agents similar to the corpus word.
    let env: Vec<(&str, &str)> =
        RELAXED_LIMITS.iter().copied().chain([("AGENTDIR_SEARCH_MODE", "words")]).collect();
    let mut s = Server::start_with(&env).await;
    let corpus = format!("durab{}", std::process::id());
    let mut recipients = Vec::new();
    for _ in 0..RECIPIENTS {
        let r = s.verified("dur-recipient").await;
        let offering = s.offering(&r).await;
        recipients.push((r.handle, offering));
    }
    let acks = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    // Every sender is made before any writes, so the kill lands after about `acks_before_kill`
    // writes rather than after whatever the first writers did while the others were made.
    let mut ready = Vec::new();
    for n in 0..clients {
        let sender = s.verified("dur-sender").await;
        let mut mine = recipients.clone();
        mine.rotate_left(n % RECIPIENTS);
        let w = Writer {
            n,
            http: reqwest::Client::builder().timeout(Duration::from_secs(20)).build().expect("client"),
            base: s.base.clone(),
            sender,
            recipients: mine,
            corpus: corpus.clone(),
            acks: acks.clone(),
            stop: stop.clone(),
        };
        ready.push(w);
    }
    let writers: Vec<_> = ready.into_iter().map(|w| tokio::spawn(w.run())).collect();

    let deadline = Instant::now() + Duration::from_secs(120);
    while acks.load(Ordering::Relaxed) < acks_before_kill && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(acks.load(Ordering::Relaxed) >= acks_before_kill, "the writers made too little progress");
    s.kill();
    stop.store(true, Ordering::Relaxed);
    let mut acked = Acked::default();
    for w in writers {
        let a = w.await.expect("writer");
        acked.agents.extend(a.agents);
        acked.calls.extend(a.calls);
        acked.replies.extend(a.replies);
        acked.requests.extend(a.requests);
    }

    eprintln!(
        "killed after {} agents, {} calls, {} replies, {} requests acknowledged",
        acked.agents.len(),
        acked.calls.len(),
        acked.replies.len(),
        acked.requests.len()
    );
    assert!(!acked.requests.is_empty() && !acked.replies.is_empty(), "some kinds of write never happened");
    s.restart();

    for (agent, word) in &acked.agents {
        s.get(&format!("/api/agents/{}", agent.handle), None).await.expect(200);
        s.get("/api/me", Some(&agent.key)).await.expect(200);
        let found = s.get(&format!("/api/agents?q={word}"), None).await;
        let handles: Vec<&str> = found.json["agents"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|a| a["handle"].as_str())
            .collect();
        assert!(
            handles.contains(&agent.handle.as_str()),
            "search for {word} misses {}: {}",
            agent.handle,
            found.text
        );
    }
    for (id, word, author) in &acked.calls {
        let call = s.get(&format!("/api/posts/{id}"), None).await;
        call.expect(200);
        assert_eq!(call.json["post"]["author"]["handle"], author.as_str(), "{}", call.text);
        let found = s.get(&format!("/api/posts?q={word}"), None).await;
        let ids: Vec<&str> =
            found.json["posts"].as_array().into_iter().flatten().filter_map(|p| p["id"].as_str()).collect();
        assert!(ids.contains(&id.as_str()), "search for {word} misses {id}: {}", found.text);
    }
    for (reply, call) in &acked.replies {
        let detail = s.get(&format!("/api/posts/{call}"), None).await;
        let replies: HashSet<&str> = detail.json["replies"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|r| r["id"].as_str())
            .collect();
        assert!(replies.contains(reply.as_str()), "reply {reply} on {call} is gone");
    }
    for (request, sender_key) in &acked.requests {
        s.get(&format!("/api/requests/{request}"), Some(sender_key)).await.expect(200);
    }

    // Nothing half-written: SQLite is consistent, and what the API and the index report equals it.
    let db = rusqlite::Connection::open_with_flags(
        s.data_dir.join("agentdir.sqlite3"),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    )
    .expect("open the database");
    let check: String = db.query_row("PRAGMA integrity_check", [], |r| r.get(0)).expect("integrity_check");
    assert_eq!(check, "ok");
    assert_eq!(sqlite_count(&db, "SELECT COUNT(*) FROM pragma_foreign_key_check"), 0);
    assert_eq!(
        sqlite_count(
            &db,
            "SELECT COUNT(*) FROM calls p LEFT JOIN agents a ON a.id = p.agent_id WHERE a.id IS NULL"
        ),
        0
    );
    assert_eq!(
        sqlite_count(
            &db,
            "SELECT COUNT(*) FROM replies r LEFT JOIN calls p ON p.seq = r.call_seq WHERE p.seq IS NULL"
        ),
        0
    );

    let agents = sqlite_count(&db, "SELECT COUNT(*) FROM agents WHERE suspended_at IS NULL");
    let posts = sqlite_count(&db, "SELECT COUNT(*) FROM calls WHERE status = 'active'");
    let replies = sqlite_count(&db, "SELECT COUNT(*) FROM replies");
    assert!(agents as usize >= acked.agents.len() + RECIPIENTS + clients);
    assert!(posts as usize >= acked.calls.len());
    let stats = s.get("/api/stats", None).await;
    assert_eq!(stats.json["agents"].as_u64(), Some(agents), "{}", stats.text);
    assert_eq!(stats.json["posts"].as_u64(), Some(posts), "{}", stats.text);
    assert_eq!(stats.json["replies"].as_u64(), Some(replies), "{}", stats.text);
    assert_eq!(s.get("/api/agents", None).await.json["total"].as_u64(), Some(agents));
    assert_eq!(s.get("/api/posts", None).await.json["total"].as_u64(), Some(posts));

    // Every committed write reached the index, acknowledged or not.
    let registered_under_load = sqlite_count(
        &db,
        &format!("SELECT COUNT(*) FROM agents WHERE description_en LIKE '%{corpus} agentcorpus%'"),
    );
    let found = s.get("/api/agents?q=agentcorpus&limit=1", None).await;
    assert_eq!(found.json["total"].as_u64(), Some(registered_under_load), "{}", found.text);
    let found = s.get(&format!("/api/posts?q={corpus}callcorpus&limit=1"), None).await;
    assert_eq!(found.json["total"].as_u64(), Some(posts), "{}", found.text);

    // Every listed call has its author.
    let page = s.get("/api/posts?limit=50", None).await;
    for post in page.json["posts"].as_array().into_iter().flatten() {
        let author = post["author"]["handle"].as_str().expect("author handle");
        s.get(&format!("/api/agents/{author}"), None).await.expect(200);
    }
}
