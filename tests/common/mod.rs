//! Test fixtures: a real `agentdir serve` on 127.0.0.1 port 0 over a temp data dir, a real HTTP
//! client, and helpers that hand back ready actors (registered agents with keys, at the trust
//! level a test needs — reached through the real `agentdir admin` command path).

#![allow(dead_code)]

pub mod mail;
pub mod mirror;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Value, json};

pub const BIN: &str = env!("CARGO_BIN_EXE_agentdir");

/// Generous limits so that tests which are not about rate limits never meet one.
pub const RELAXED_LIMITS: &[(&str, &str)] = &[
    ("AGENTDIR_RATE_LIMIT_REGISTRATION", "10000/h"),
    ("AGENTDIR_RATE_LIMIT_CALLS", "10000/d"),
    ("AGENTDIR_RATE_LIMIT_REPLIES", "10000/h"),
    ("AGENTDIR_RATE_LIMIT_REQUESTS", "10000/d"),
    ("AGENTDIR_RATE_LIMIT_LINKS", "10000/h"),
    ("AGENTDIR_RATE_LIMIT_REPORTS", "10000/h"),
    ("AGENTDIR_RATE_LIMIT_KEY_CHECKS", "10000/m"),
    ("AGENTDIR_RATE_LIMIT_PROFILE_EDITS", "10000/h"),
    ("AGENTDIR_RATE_LIMIT_COLLABS", "10000/d"),
];

pub struct Server {
    child: Option<Child>,
    pub base: String,
    pub data_dir: PathBuf,
    _temp: Option<tempfile::TempDir>,
    pub http: reqwest::Client,
    env: Vec<(String, String)>,
}

/// One HTTP answer: status, headers and the body parsed as JSON (Null when empty or not JSON).
#[derive(Debug)]
pub struct Resp {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    pub text: String,
    pub json: Value,
}

impl Resp {
    pub fn code(&self) -> &str {
        self.json["error"]["code"].as_str().unwrap_or("")
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// Asserts the status and, for errors, the bilingual envelope; returns self for chaining.
    #[track_caller]
    pub fn expect(&self, status: u16) -> &Self {
        assert_eq!(self.status, status, "unexpected status; body: {}", self.text);
        if status >= 400 {
            let e = &self.json["error"];
            assert!(e["code"].is_string(), "no error code in {}", self.text);
            assert!(!e["message_en"].as_str().unwrap_or("").is_empty(), "no message_en in {}", self.text);
            assert!(!e["message_zh"].as_str().unwrap_or("").is_empty(), "no message_zh in {}", self.text);
            assert!(e.get("field").is_some(), "no field key in {}", self.text);
        }
        self
    }

    #[track_caller]
    pub fn expect_error(&self, status: u16, code: &str) -> &Self {
        self.expect(status);
        assert_eq!(self.code(), code, "unexpected error code; body: {}", self.text);
        self
    }
}

/// A registered agent and its key.
#[derive(Debug, Clone)]
pub struct Agent {
    pub handle: String,
    pub key: String,
    pub mailbox: String,
}

/// Relaxed limits with some of them replaced.
pub fn limits(overrides: &[(&'static str, &'static str)]) -> Vec<(&'static str, &'static str)> {
    let mut env: Vec<_> =
        RELAXED_LIMITS.iter().filter(|(k, _)| !overrides.iter().any(|(o, _)| o == k)).copied().collect();
    env.extend_from_slice(overrides);
    env
}

/// Asserts a 429 `rate_limited` with a `Retry-After` of at most `window_s` seconds.
#[track_caller]
pub fn assert_limited(r: &Resp, window_s: u64) {
    r.expect_error(429, "rate_limited");
    let retry: u64 = r
        .header("retry-after")
        .unwrap_or_else(|| panic!("no Retry-After on a 429: {:?}", r.headers))
        .parse()
        .expect("Retry-After in whole seconds");
    assert!((1..=window_s + 1).contains(&retry), "Retry-After {retry} outside 1..={window_s}");
}

/// The value of one series of `/metrics` (0 when it is not there yet).
pub async fn metric_value(s: &Server, series: &str) -> f64 {
    let text = s.http.get(s.url("/metrics")).send().await.expect("metrics").text().await.expect("body");
    text.lines()
        .find_map(|l| l.strip_prefix(series).and_then(|rest| rest.trim().parse::<f64>().ok()))
        .unwrap_or(0.0)
}

static COUNTER: AtomicUsize = AtomicUsize::new(0);

/// A handle no other test in this process uses.
pub fn unique_handle(prefix: &str) -> String {
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("{prefix}-{}-{n}", std::process::id() % 100_000)
}

impl Server {
    /// A fresh server over a fresh temp data dir, with relaxed rate limits.
    pub async fn start() -> Server {
        Self::start_with(RELAXED_LIMITS).await
    }

    /// A fresh server with these environment variables (no relaxed limits unless given).
    pub async fn start_with(env: &[(&str, &str)]) -> Server {
        let temp = tempfile::tempdir().expect("temp dir");
        let mut server = Self::start_in(temp.path(), env).await;
        server._temp = Some(temp);
        server
    }

    /// A server over an existing data dir (to test persistence across restarts).
    pub async fn start_in(dir: &Path, env: &[(&str, &str)]) -> Server {
        let env: Vec<(String, String)> = env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let (child, base) = spawn(dir, &env);
        Server {
            child: Some(child),
            base,
            data_dir: dir.to_path_buf(),
            _temp: None,
            http: reqwest::Client::builder().timeout(Duration::from_secs(60)).build().expect("client"),
            env,
        }
    }

    /// Stops the server gracefully (SIGTERM) and waits for it.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = Command::new("kill").arg("-TERM").arg(child.id().to_string()).status();
            let _ = child.wait();
        }
    }

    /// Kills the server without warning (SIGKILL).
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts the server again on the same data dir (a new port).
    pub fn restart(&mut self) {
        self.stop();
        let (child, base) = spawn(&self.data_dir, &self.env);
        self.child = Some(child);
        self.base = base;
    }

    /// Moves the clock of the server and of the commands run on its data dir `days` ahead of
    /// the system's (the `test-clock` feature), then restarts the server, for the rules a server
    /// applies as it starts.
    #[cfg(feature = "test-clock")]
    pub fn clock_ahead_days(&mut self, days: f64) {
        self.clock_ahead(Duration::from_secs_f64(days * 86_400.0));
        self.restart();
    }

    /// Moves the clock of the running server and of the commands run on its data dir `ahead` of
    /// the system's (the `test-clock` feature). The server reads it at its next look at the time:
    /// nothing restarts, its caches stay as they were.
    #[cfg(feature = "test-clock")]
    pub fn clock_ahead(&self, ahead: Duration) {
        std::fs::write(self.data_dir.join("test-clock-offset-ms"), ahead.as_millis().to_string())
            .expect("write the clock offset");
    }

    /// Whether the server's process still runs: what a failed request means depends on it.
    pub fn process_state(&self) -> &'static str {
        let Some(pid) = self.child.as_ref().map(Child::id) else {
            return "no process of its own";
        };
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Ok(stat) if stat.rsplit(')').next().is_some_and(|rest| rest.trim_start().starts_with('Z')) => {
                "the server process has exited"
            }
            Ok(_) => "the server process still runs",
            Err(_) => "the server process is gone",
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    pub async fn send(&self, req: reqwest::RequestBuilder) -> Resp {
        let res = match req.send().await {
            Ok(res) => res,
            Err(e) => panic!("request failed ({}): {e:?}", self.process_state()),
        };
        let status = res.status().as_u16();
        let headers = res.headers().clone();
        let text = res.text().await.expect("body");
        let json = serde_json::from_str(&text).unwrap_or(Value::Null);
        Resp { status, headers, text, json }
    }

    fn with_key(req: reqwest::RequestBuilder, key: Option<&str>) -> reqwest::RequestBuilder {
        match key {
            Some(k) => req.bearer_auth(k),
            None => req,
        }
    }

    pub async fn get(&self, path: &str, key: Option<&str>) -> Resp {
        self.send(Self::with_key(self.http.get(self.url(path)), key)).await
    }

    pub async fn post(&self, path: &str, key: Option<&str>, body: Value) -> Resp {
        self.send(Self::with_key(self.http.post(self.url(path)), key).json(&body)).await
    }

    /// A POST without any body.
    pub async fn post_empty(&self, path: &str, key: Option<&str>) -> Resp {
        self.send(Self::with_key(self.http.post(self.url(path)), key)).await
    }

    pub async fn patch(&self, path: &str, key: Option<&str>, body: Value) -> Resp {
        self.send(Self::with_key(self.http.patch(self.url(path)), key).json(&body)).await
    }

    pub async fn put(&self, path: &str, key: Option<&str>, body: Value) -> Resp {
        self.send(Self::with_key(self.http.put(self.url(path)), key).json(&body)).await
    }

    pub async fn delete(&self, path: &str, key: Option<&str>) -> Resp {
        self.send(Self::with_key(self.http.delete(self.url(path)), key)).await
    }

    /// Registers an agent with a unique handle built from `prefix`.
    pub async fn register(&self, prefix: &str) -> Agent {
        let handle = unique_handle(prefix);
        let mailbox = format!("{handle}@example.org");
        let r = self
            .post(
                "/api/agents",
                None,
                json!({
                    "handle": handle, "name": format!("Agent {handle}"), "owner": "Test Owner",
                    "mailbox": mailbox, "accept_rules": true,
                    "description_en": "A test agent that helps with tests.",
                }),
            )
            .await;
        r.expect(201);
        let key = r.json["api_key"].as_str().expect("api_key").to_owned();
        Agent { handle, key, mailbox }
    }

    /// Runs `agentdir admin …` on this server's data dir.
    pub fn admin(&self, args: &[&str]) -> Output {
        Command::new(BIN)
            .arg("admin")
            .arg("--data-dir")
            .arg(&self.data_dir)
            .arg("--actor")
            .arg("test-suite")
            .args(args)
            .output()
            .expect("run agentdir admin")
    }

    #[track_caller]
    pub fn admin_ok(&self, args: &[&str]) -> String {
        let out = self.admin(args);
        assert!(out.status.success(), "admin {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// A level-1 agent (mailbox verified by the operator command).
    pub async fn verified(&self, prefix: &str) -> Agent {
        let a = self.register(prefix).await;
        self.admin_ok(&["verify-mailbox", &a.handle]);
        a
    }

    /// A level-2 agent, claimed by `owner_email`.
    pub async fn claimed(&self, prefix: &str, owner_email: &str) -> Agent {
        let a = self.verified(prefix).await;
        self.admin_ok(&["claim-owner", &a.handle, owner_email]);
        a
    }

    /// Posts a call with `body` as `author` and returns its id.
    pub async fn call(&self, author: &Agent, body: Value) -> String {
        let r = self.post("/api/posts", Some(&author.key), body).await;
        r.expect(201);
        r.json["id"].as_str().expect("call id").to_owned()
    }

    /// Posts a `seeking` call titled `title` as `author` and returns its id.
    pub async fn seeking(&self, author: &Agent, title: &str) -> String {
        self.call(author, json!({"kind": "seeking", "title": title, "body": "Details."})).await
    }

    /// Publishes one offering for `agent` and returns its id.
    pub async fn offering(&self, agent: &Agent) -> String {
        let r = self
            .put(
                "/api/me/offerings",
                Some(&agent.key),
                json!({"offerings": [{"title": "Translation", "deliverable": "A translated document", "mode": "free"}]}),
            )
            .await;
        r.expect(200);
        r.json["offerings"][0]["id"].as_str().expect("offering id").to_owned()
    }

    /// Sends a valid contact request from `from` to `to` (which has an offering) and returns its id.
    pub async fn request(&self, from: &Agent, to: &Agent, offering_id: &str) -> String {
        let r = self
            .post(
                &format!("/api/agents/{}/requests", to.handle),
                Some(&from.key),
                json!({"offering_id": offering_id, "purpose": "Translate our README", "deliverable": "A Chinese README", "compensation": "none"}),
            )
            .await;
        r.expect(201);
        r.json["request"]["id"].as_str().expect("request id").to_owned()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}

fn spawn(dir: &Path, env: &[(String, String)]) -> (Child, String) {
    spawn_with_stderr(dir, env, Stdio::inherit())
}

/// Like `spawn`, with the server's stderr written to `log` (to inspect what it logs).
fn spawn_logged(dir: &Path, env: &[(String, String)], log: &Path) -> (Child, String) {
    let file = std::fs::File::create(log).expect("create the server log file");
    spawn_with_stderr(dir, env, Stdio::from(file))
}

fn spawn_with_stderr(dir: &Path, env: &[(String, String)], stderr: Stdio) -> (Child, String) {
    let mut cmd = Command::new(BIN);
    cmd.arg("serve")
        .arg("--bind")
        .arg("127.0.0.1:0")
        .arg("--data-dir")
        .arg(dir)
        .env("RUST_LOG", std::env::var("AGENTDIR_TEST_LOG").unwrap_or_else(|_| "warn".into()))
        // The quick encoder distils only the tokens of needs a test reads, not the whole
        // vocabulary (minutes of a core in every server); a test may set it back.
        .env("AGENTDIR_QUICK_ENCODER_FILL", "0")
        .stdout(Stdio::piped())
        .stderr(stderr);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().expect("spawn agentdir serve");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut lines = BufReader::new(stdout).lines();
        if let Some(Ok(line)) = lines.next() {
            let _ = tx.send(line);
        }
        // Keep draining so the server never blocks on a full pipe.
        for _ in lines {}
    });
    let line = rx.recv_timeout(Duration::from_secs(120)).expect("server did not report its address");
    let base = line.rsplit(' ').next().expect("address").to_owned();
    (child, base)
}

impl Server {
    /// A fresh server whose stderr goes to a file (returned) instead of the test's stderr.
    /// `env` may set `RUST_LOG` to choose what is logged.
    pub async fn start_logged(env: &[(&str, &str)]) -> (Server, PathBuf) {
        let temp = tempfile::tempdir().expect("temp dir");
        let data_dir = temp.path().join("data");
        let log = temp.path().join("stderr.log");
        let env: Vec<(String, String)> = env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let (child, base) = spawn_logged(&data_dir, &env, &log);
        let server = Server {
            child: Some(child),
            base,
            data_dir,
            _temp: Some(temp),
            http: reqwest::Client::builder().timeout(Duration::from_secs(60)).build().expect("client"),
            env,
        };
        (server, log)
    }

    /// Like `restart`, with the server's stderr written to `log` (to inspect what it logs).
    pub fn restart_logged(&mut self, log: &Path) {
        self.stop();
        let (child, base) = spawn_logged(&self.data_dir, &self.env, log);
        self.child = Some(child);
        self.base = base;
    }

    /// Sends SIGTERM and returns at once (`wait_exit` collects the process).
    pub fn terminate(&self) {
        if let Some(child) = &self.child {
            let _ = Command::new("kill").arg("-TERM").arg(child.id().to_string()).status();
        }
    }

    /// Waits up to `limit` for the server process to exit; its status, or None if still running.
    pub fn wait_exit(&mut self, limit: Duration) -> Option<std::process::ExitStatus> {
        let deadline = std::time::Instant::now() + limit;
        while std::time::Instant::now() < deadline {
            if let Some(child) = self.child.as_mut()
                && let Ok(Some(status)) = child.try_wait()
            {
                self.child = None;
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }

    /// The server's process id (to read its memory from `/proc`).
    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("the server is running").id()
    }

    /// The host:port the server listens on.
    pub fn addr(&self) -> String {
        self.base.trim_start_matches("http://").to_owned()
    }
}
