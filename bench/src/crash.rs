//! Crash cycles: writers register agents, post calls, reply, update profiles and delete calls
//! against a real server until it is killed with SIGKILL mid-stream; it is restarted on the same
//! data dir, and before the next cycle every write acknowledged so far (in any cycle) must be
//! there and findable by search, nothing acknowledged as deleted may show, SQLite must be
//! consistent, the counts the API reports must equal SQLite's, and the change feed and the
//! search index must agree with SQLite.
//!
//! One implementation for two callers: `bench/src/bin/crash_cycles.rs` (the long form, 20
//! cycles against a release server) and `tests/crash_cycles.rs` (a short form in the suite),
//! which includes this file by path, so it uses only crates both of them have.

use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// A server the cycles can kill and start again.
pub trait Crashable {
    /// `http://127.0.0.1:port` of the running server.
    fn base_url(&self) -> String;
    /// SIGKILL, and wait for the process to be gone.
    fn kill_now(&mut self);
    /// Start it again on the same data dir; returns once it listens.
    fn start_again(&mut self);
    /// The server's SQLite database file.
    fn database(&self) -> PathBuf;
}

pub struct Settings {
    pub cycles: usize,
    pub writers: usize,
    /// Each cycle kills after between this many and twice this many acknowledged writes.
    pub min_acks: usize,
}

/// What one cycle did and found.
#[derive(Debug, Clone)]
pub struct CycleReport {
    pub cycle: usize,
    /// Writes acknowledged in this cycle, before the kill.
    pub acked: usize,
    /// Writes acknowledged since the first cycle, all checked after this restart.
    pub acked_total: usize,
    /// From the SIGKILL until the restarted server listened.
    pub restart: Duration,
    /// How long the checks took.
    pub check: Duration,
    /// Rows SQLite holds after the restart.
    pub agents: u64,
    pub calls: u64,
    pub replies: u64,
    /// Entries of the whole change feed.
    pub feed_entries: usize,
}

struct AgentAck {
    handle: String,
    key: String,
    word: String,
    /// The tagline word of the last acknowledged profile update.
    tagline: Option<String>,
    /// An update sent when the server died: it may or may not have committed.
    tagline_in_flight: Option<String>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Deletion {
    No,
    /// Sent when the server died.
    InFlight,
    Acked,
}

struct CallAck {
    id: String,
    word: String,
    author: String,
    deletion: Deletion,
    replies: Vec<String>,
}

/// Everything acknowledged so far.
#[derive(Default)]
struct Ledger {
    agents: Vec<AgentAck>,
    calls: Vec<CallAck>,
}

/// One request; `None` when the server did not answer (it died).
async fn send(
    http: &reqwest::Client,
    method: reqwest::Method,
    url: String,
    key: Option<&str>,
    body: Option<Value>,
) -> Option<(u16, Value)> {
    let mut req = http.request(method, url);
    if let Some(k) = key {
        req = req.bearer_auth(k);
    }
    if let Some(b) = body {
        req = req.json(&b);
    }
    let res = req.send().await.ok()?;
    let status = res.status().as_u16();
    let json = res.json::<Value>().await.ok()?;
    Some((status, json))
}

struct Writer {
    n: usize,
    cycle: usize,
    http: reqwest::Client,
    base: String,
    corpus: String,
    acks: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
}

impl Writer {
    /// Writes until the server stops answering; returns what it acknowledged.
    async fn run(self) -> Ledger {
        use reqwest::Method;
        let mut done = Ledger::default();
        let url = |p: &str| format!("{}{p}", self.base);
        let ack = || self.acks.fetch_add(1, Ordering::Relaxed);
        let mut author: Option<usize> = None;
        let mut oldest_live = 0;
        for round in 0..100_000 {
            if self.stop.load(Ordering::Relaxed) {
                break;
            }
            let word = format!("{}c{}w{}r{round}", self.corpus, self.cycle, self.n);

            if round % 4 == 0 || author.is_none() {
                let handle = format!("cc-{}-{}-{round}", self.cycle, self.n);
                let body = json!({
                    "handle": handle, "name": format!("Crash cycle {word}"), "owner": "Crash Cycles",
                    "mailbox": format!("{handle}@example.org"), "accept_rules": true,
                    "description_en": format!("Registered under load: {word} {}agent", self.corpus),
                });
                let Some((status, r)) =
                    send(&self.http, Method::POST, url("/api/agents"), None, Some(body)).await
                else {
                    break;
                };
                if status == 201 {
                    let key = r["api_key"].as_str().unwrap_or_default().to_owned();
                    done.agents.push(AgentAck {
                        handle,
                        key,
                        word: word.clone(),
                        tagline: None,
                        tagline_in_flight: None,
                    });
                    author = Some(done.agents.len() - 1);
                    ack();
                }
            }
            let Some(me) = author else { continue };
            let key = done.agents[me].key.clone();

            let body = json!({"kind": "seeking", "title": format!("Call {word}"),
                              "body": format!("Written under load, {}call.", self.corpus)});
            let Some((status, r)) =
                send(&self.http, Method::POST, url("/api/posts"), Some(&key), Some(body)).await
            else {
                break;
            };
            if status == 201 {
                let id = r["id"].as_str().unwrap_or_default().to_owned();
                let author = done.agents[me].handle.clone();
                done.calls.push(CallAck {
                    id,
                    word: word.clone(),
                    author,
                    deletion: Deletion::No,
                    replies: Vec::new(),
                });
                ack();
            }

            // A reply to a call of this writer that is still there.
            if let Some(target) = (oldest_live..done.calls.len()).rev().nth(round % 3) {
                let path = format!("/api/posts/{}/replies", done.calls[target].id);
                let body = json!({"body": format!("Reply {word}")});
                let Some((status, r)) =
                    send(&self.http, Method::POST, url(&path), Some(&key), Some(body)).await
                else {
                    break;
                };
                if status == 201 {
                    done.calls[target].replies.push(r["id"].as_str().unwrap_or_default().to_owned());
                    ack();
                }
            }

            let tagline = format!("t{word}");
            let body = json!({"tagline": format!("Tagline {tagline}")});
            done.agents[me].tagline_in_flight = Some(tagline.clone());
            let Some((status, _)) =
                send(&self.http, Method::PATCH, url("/api/me"), Some(&key), Some(body)).await
            else {
                break;
            };
            done.agents[me].tagline_in_flight = None;
            if status == 200 {
                done.agents[me].tagline = Some(tagline);
                ack();
            }

            if round % 5 == 4 && oldest_live < done.calls.len() {
                let call = &mut done.calls[oldest_live];
                let author_key = done.agents.iter().find(|a| a.handle == call.author).map(|a| a.key.clone());
                call.deletion = Deletion::InFlight;
                let path = format!("/api/posts/{}", call.id);
                let Some((status, _)) =
                    send(&self.http, Method::DELETE, url(&path), author_key.as_deref(), None).await
                else {
                    break;
                };
                call.deletion = if status == 200 { Deletion::Acked } else { Deletion::No };
                if status == 200 {
                    ack();
                }
                oldest_live += 1;
            }
        }
        done
    }
}

/// Runs the cycles; `report` sees each cycle as it is checked. The first failed check ends the
/// run with its description.
pub async fn run(
    server: &mut impl Crashable,
    settings: &Settings,
    mut report: impl FnMut(&CycleReport),
) -> Result<Vec<CycleReport>, String> {
    let corpus = format!("crash{}", std::process::id());
    let http =
        reqwest::Client::builder().timeout(Duration::from_secs(30)).build().map_err(|e| e.to_string())?;
    let mut ledger = Ledger::default();
    let mut reports = Vec::new();
    let mut acked_total = 0;
    for cycle in 0..settings.cycles {
        let acks = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let writers: Vec<_> = (0..settings.writers)
            .map(|n| {
                tokio::spawn(
                    Writer {
                        n,
                        cycle,
                        http: http.clone(),
                        base: server.base_url(),
                        corpus: corpus.clone(),
                        acks: acks.clone(),
                        stop: stop.clone(),
                    }
                    .run(),
                )
            })
            .collect();
        // A different point in the stream each cycle.
        let target = settings.min_acks + (cycle * 7_919) % settings.min_acks.max(1);
        let deadline = Instant::now() + Duration::from_secs(300);
        while acks.load(Ordering::Relaxed) < target {
            if Instant::now() > deadline {
                return Err(format!(
                    "cycle {cycle}: only {} writes acknowledged in 5 minutes",
                    acks.load(Ordering::Relaxed)
                ));
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        let killed = Instant::now();
        server.kill_now();
        stop.store(true, Ordering::Relaxed);
        for w in writers {
            let done = w.await.map_err(|e| format!("a writer failed: {e}"))?;
            ledger.agents.extend(done.agents);
            ledger.calls.extend(done.calls);
        }
        server.start_again();
        let restart = killed.elapsed();
        let acked = acks.load(Ordering::Relaxed);
        acked_total += acked;

        let checked = Instant::now();
        let base = server.base_url();
        let (agents, calls, replies, feed_entries) =
            check(&http, &base, &server.database(), &corpus, &ledger)
                .await
                .map_err(|e| format!("cycle {cycle}: {e}"))?;
        let r = CycleReport {
            cycle,
            acked,
            acked_total,
            restart,
            check: checked.elapsed(),
            agents,
            calls,
            replies,
            feed_entries,
        };
        report(&r);
        reports.push(r);
    }
    Ok(reports)
}

async fn get(http: &reqwest::Client, url: String) -> Result<(u16, Value), String> {
    let res = http.get(&url).send().await.map_err(|e| format!("GET {url}: {e}"))?;
    let status = res.status().as_u16();
    Ok((status, res.json().await.unwrap_or(Value::Null)))
}

/// The ids a list answer holds under `field`, by `id_field`.
fn ids<'a>(page: &'a Value, field: &str, id_field: &str) -> HashSet<&'a str> {
    page[field].as_array().into_iter().flatten().filter_map(|v| v[id_field].as_str()).collect()
}

fn count(db: &rusqlite::Connection, sql: &str) -> Result<u64, String> {
    db.query_row(sql, [], |r| r.get::<_, i64>(0)).map(|n| n as u64).map_err(|e| format!("{sql}: {e}"))
}

/// Every check after one restart; returns SQLite's agents, calls and replies and the feed's
/// length.
async fn check(
    http: &reqwest::Client,
    base: &str,
    database: &std::path::Path,
    corpus: &str,
    ledger: &Ledger,
) -> Result<(u64, u64, u64, usize), String> {
    // Every acknowledged agent: its card, its latest acknowledged profile, found by search.
    for a in &ledger.agents {
        let (status, card) = get(http, format!("{base}/api/agents/{}", a.handle)).await?;
        if status != 200 {
            return Err(format!("agent {} answers {status}: {card}", a.handle));
        }
        let shown = card["agent"]["tagline"].as_str().unwrap_or_default();
        // The last acknowledged tagline (none: the registration's empty one), or the update in
        // flight at the kill if it committed.
        let tagline = |t: &String| format!("Tagline {t}");
        let mut expected = vec![a.tagline.as_ref().map(tagline).unwrap_or_default()];
        expected.extend(a.tagline_in_flight.as_ref().map(tagline));
        if !expected.iter().any(|t| t == shown) {
            return Err(format!("agent {} shows tagline {shown:?}, acknowledged {expected:?}", a.handle));
        }
        let mut words = vec![a.word.as_str()];
        if let Some(t) = shown.strip_prefix("Tagline ") {
            words.push(t);
        }
        for word in words {
            let (_, found) = get(http, format!("{base}/api/agents?q={word}")).await?;
            if !ids(&found, "agents", "handle").contains(a.handle.as_str()) {
                return Err(format!("search for {word} misses agent {}: {found}", a.handle));
            }
        }
        let (status, _) = {
            let res = http
                .get(format!("{base}/api/me"))
                .bearer_auth(&a.key)
                .send()
                .await
                .map_err(|e| format!("GET /api/me: {e}"))?;
            (res.status().as_u16(), ())
        };
        if status != 200 {
            return Err(format!("the key of {} answers {status} after the restart", a.handle));
        }
    }

    // Every acknowledged call with its author and replies, found by search; deleted ones gone.
    for c in &ledger.calls {
        let (status, detail) = get(http, format!("{base}/api/posts/{}", c.id)).await?;
        let (_, found) = get(http, format!("{base}/api/posts?q={}", c.word)).await?;
        let listed = ids(&found, "posts", "id").contains(c.id.as_str());
        match c.deletion {
            Deletion::Acked if status != 404 || listed => {
                return Err(format!("deleted call {} answers {status}, found by search: {listed}", c.id));
            }
            Deletion::No if status != 200 => return Err(format!("call {} answers {status}: {detail}", c.id)),
            Deletion::No if !listed => {
                return Err(format!("search for {} misses call {}: {found}", c.word, c.id));
            }
            Deletion::No => {
                if detail["post"]["author"]["handle"] != c.author.as_str() {
                    return Err(format!("call {} lost its author {}: {detail}", c.id, c.author));
                }
                let replies = ids(&detail, "replies", "id");
                if let Some(missing) = c.replies.iter().find(|r| !replies.contains(r.as_str())) {
                    return Err(format!("reply {missing} on call {} is gone", c.id));
                }
            }
            _ => {}
        }
    }

    // SQLite itself.
    let db = rusqlite::Connection::open_with_flags(database, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
        .map_err(|e| format!("open {}: {e}", database.display()))?;
    let integrity: String = db
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .map_err(|e| format!("integrity_check: {e}"))?;
    if integrity != "ok" {
        return Err(format!("integrity_check: {integrity}"));
    }
    if count(&db, "SELECT COUNT(*) FROM pragma_foreign_key_check")? != 0 {
        return Err("foreign keys broken".into());
    }
    let agents = count(&db, "SELECT COUNT(*) FROM agents WHERE suspended_at IS NULL")?;
    let calls = count(&db, "SELECT COUNT(*) FROM calls WHERE status = 'active'")?;
    let replies = count(&db, "SELECT COUNT(*) FROM replies")?;

    // The counts the API reports.
    let (_, stats) = get(http, format!("{base}/api/stats")).await?;
    for (field, sqlite) in [("agents", agents), ("posts", calls), ("replies", replies)] {
        if stats[field].as_u64() != Some(sqlite) {
            return Err(format!("/api/stats {field} {} but SQLite holds {sqlite}", stats[field]));
        }
    }
    for (path, sqlite) in [("/api/agents?limit=1", agents), ("/api/posts?limit=1", calls)] {
        let (_, page) = get(http, format!("{base}{path}")).await?;
        if page["total"].as_u64() != Some(sqlite) {
            return Err(format!("{path} total {} but SQLite holds {sqlite}", page["total"]));
        }
    }

    // The index: every row SQLite holds is found by the word all of them carry.
    for (path, sqlite) in [
        (format!("/api/agents?q={corpus}agent&limit=1"), agents),
        (format!("/api/posts?q={corpus}call&limit=1"), calls),
    ] {
        let (_, page) = get(http, format!("{base}{path}")).await?;
        if page["total"].as_u64() != Some(sqlite) {
            return Err(format!("the index finds {} for {path}, SQLite holds {sqlite}", page["total"]));
        }
    }

    // The change feed, read from the beginning: one upsert per public agent and call, the
    // acknowledged deletions as deletes.
    let mut feed: BTreeMap<(String, String), String> = BTreeMap::new();
    let mut after: Option<String> = None;
    let mut entries = 0;
    loop {
        let path = match &after {
            Some(c) => format!("/api/changes?limit=1000&after={c}"),
            None => "/api/changes?limit=1000".to_owned(),
        };
        let (status, page) = get(http, format!("{base}{path}")).await?;
        if status != 200 {
            return Err(format!("{path} answers {status}: {page}"));
        }
        for e in page["changes"].as_array().into_iter().flatten() {
            let key = (
                e["kind"].as_str().unwrap_or_default().to_owned(),
                e["id"].as_str().unwrap_or_default().to_owned(),
            );
            if feed.insert(key.clone(), e["op"].as_str().unwrap_or_default().to_owned()).is_some() {
                return Err(format!("the compacted feed holds {key:?} twice"));
            }
            entries += 1;
        }
        after = page["next"].as_str().map(str::to_owned);
        if page["has_more"] != true {
            break;
        }
    }
    let upserts = |kind: &str| feed.iter().filter(|((k, _), op)| k == kind && *op == "upsert").count() as u64;
    if upserts("agent") != agents || upserts("call") != calls {
        return Err(format!(
            "the feed has {} agents and {} calls, SQLite {agents} and {calls}",
            upserts("agent"),
            upserts("call")
        ));
    }
    let op = |kind: &str, id: &str| feed.get(&(kind.to_owned(), id.to_owned())).map(String::as_str);
    if let Some(a) = ledger.agents.iter().find(|a| op("agent", &a.handle) != Some("upsert")) {
        return Err(format!("the feed misses agent {}", a.handle));
    }
    for c in &ledger.calls {
        let want = match c.deletion {
            Deletion::No => "upsert",
            Deletion::Acked => "delete",
            Deletion::InFlight => continue,
        };
        if op("call", &c.id) != Some(want) {
            return Err(format!("the feed has {:?} for call {}, expected {want}", op("call", &c.id), c.id));
        }
    }
    Ok((agents, calls, replies, entries))
}
