//! What the load benchmarks share: starting a release `agentdir serve` over a temporary data
//! dir, seeding it through REST, and driving load with `wrk` (a C load generator, so the
//! machine's two cores go to the server, not to the client), whose results a Lua `done` hook
//! prints as one JSON line.
//!
//! The benchmarks need `wrk` on PATH (Debian: `apt-get install wrk`); those with an nginx
//! reference need `nginx` too (`apt-get install nginx-light`).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

pub mod crash;

pub type Error = Box<dyn std::error::Error + Send + Sync>;

/// A server a benchmark started; killed (and its data dir removed) when dropped.
pub struct OwnServer {
    child: Option<Child>,
    pub data_dir: PathBuf,
    pub base: String,
    keep_dir: bool,
}

impl OwnServer {
    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }

    /// Kills the server at once (SIGKILL) and waits for it; the data dir stays.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for OwnServer {
    fn drop(&mut self) {
        self.kill();
        if !self.keep_dir {
            let _ = std::fs::remove_dir_all(&self.data_dir);
        }
    }
}

/// The `agentdir` binary: built with this binary's profile into the same target dir (a no-op
/// when fresh).
pub fn server_binary() -> Result<PathBuf, Error> {
    let here = std::env::current_exe()?;
    let dir = here.parent().ok_or("no directory for the current executable")?;
    let bin = dir.join(format!("agentdir{}", std::env::consts::EXE_SUFFIX));
    if let Ok(cargo) = std::env::var("CARGO") {
        let mut build = Command::new(cargo);
        build.args(["build", "--quiet", "-p", "agentdir", "--bin", "agentdir"]);
        if !cfg!(debug_assertions) {
            build.arg("--release");
        }
        if !build.status()?.success() {
            return Err("building the agentdir binary failed".into());
        }
    }
    if !bin.exists() {
        return Err(format!("{} not found; build it first", bin.display()).into());
    }
    Ok(bin)
}

/// Limits far above what any benchmark reaches, so the figures measure the server's work, not
/// its refusals.
pub const BENCH_LIMITS: &[(&str, &str)] = &[
    ("AGENTDIR_RATE_LIMIT_REGISTRATION", "100000000/h"),
    ("AGENTDIR_RATE_LIMIT_CALLS", "100000000/d"),
    ("AGENTDIR_RATE_LIMIT_REPLIES", "100000000/h"),
    ("AGENTDIR_RATE_LIMIT_REQUESTS", "100000000/d"),
    ("AGENTDIR_RATE_LIMIT_REPORTS", "100000000/h"),
    ("AGENTDIR_RATE_LIMIT_PROFILE_EDITS", "100000000/h"),
];

/// Starts `agentdir serve` on 127.0.0.1 port 0 over `data_dir` (a fresh temp dir when `None`)
/// with the benchmark limits and `env` on top.
pub fn start_server(data_dir: Option<&Path>, env: &[(&str, &str)]) -> Result<OwnServer, Error> {
    let bin = server_binary()?;
    let (data_dir, keep_dir) = match data_dir {
        Some(d) => (d.to_path_buf(), true),
        None => {
            let d =
                std::env::temp_dir().join(format!("agentdir-bench-{}-{}", std::process::id(), rand_tag()));
            let _ = std::fs::remove_dir_all(&d);
            (d, false)
        }
    };
    let mut cmd = Command::new(bin);
    cmd.args(["serve", "--bind", "127.0.0.1:0", "--data-dir"])
        .arg(&data_dir)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    for (k, v) in BENCH_LIMITS.iter().chain(env) {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn()?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let mut server = OwnServer { child: Some(child), data_dir, base: String::new(), keep_dir };
    let mut lines = BufReader::new(stdout).lines();
    let line = lines.next().ok_or("the server exited before listening")??;
    // Keep draining stdout so the server never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines {});
    server.base = line.rsplit(' ').next().ok_or("no address in the server's first line")?.to_owned();
    Ok(server)
}

fn rand_tag() -> u128 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() % 1_000_000)
}

/// A fresh release server with the benchmark limits, and a client for it.
pub fn serve() -> Result<(OwnServer, reqwest::Client), Error> {
    Ok((start_server(None, &[])?, http_client()?))
}

pub fn http_client() -> Result<reqwest::Client, Error> {
    Ok(reqwest::Client::builder().timeout(Duration::from_secs(60)).pool_max_idle_per_host(64).build()?)
}

/// Sends `body` as JSON and returns the answer, or an error naming the status.
pub async fn send_json(req: reqwest::RequestBuilder, body: Value) -> Result<Value, Error> {
    let response = req.json(&body).send().await?;
    let status = response.status();
    let value: Value = response.json().await.unwrap_or(Value::Null);
    if !status.is_success() {
        return Err(format!("{status}: {value}").into());
    }
    Ok(value)
}

/// Registers `n` agents named `{prefix}-{i}` and returns their (handle, key).
pub async fn register_agents(
    http: &reqwest::Client,
    base: &str,
    prefix: &str,
    n: usize,
) -> Result<Vec<(String, String)>, Error> {
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let handle = format!("{prefix}-{i}");
        let r = send_json(
            http.post(format!("{base}/api/agents")),
            json!({"handle": handle, "name": format!("Bench agent {i}"), "owner": "Bench Owner",
                   "mailbox": format!("{handle}@example.org"), "accept_rules": true,
                   "tagline": "Writes benchmark calls",
                   "description_en": "An agent that takes part in the write benchmark."}),
        )
        .await?;
        out.push((handle, r["api_key"].as_str().ok_or("no api_key")?.to_owned()));
    }
    Ok(out)
}

/// The agent the read benchmarks read: a full card with three offerings, English and Chinese
/// text, and five calls (newest last).
pub struct Translator {
    pub handle: String,
    pub key: String,
    pub calls: Vec<String>,
}

/// Registers the benchmarks' translator agent with its offerings and calls.
pub async fn seed_translator(http: &reqwest::Client, base: &str) -> Result<Translator, Error> {
    let handle = "bench-translator".to_owned();
    let registered = send_json(
        http.post(format!("{base}/api/agents")),
        json!({
            "handle": handle, "name": "Bench Translator 翻译", "owner": "Bench Owner",
            "mailbox": "bench@example.org", "accept_rules": true,
            "tagline": "English ⇄ Chinese translation of technical documents",
            "description_en": "Translates READMEs, API references and release notes between English and Chinese, keeping code blocks and links intact.",
            "description_zh": "专注于技术文档的中英文互译，保留代码块和链接。",
            "capabilities": ["translation", "localization", "proofreading"],
            "languages": ["en", "zh"], "homepage": "https://example.org/bench",
        }),
    )
    .await?;
    let key = registered["api_key"].as_str().ok_or("no api_key")?.to_owned();
    let offering = |title: &str, mode: &str| {
        json!({"title": title, "deliverable": "A translated document with a glossary", "mode": mode,
               "turnaround_days": 3, "languages": ["en", "zh"], "tags": ["translation", "docs"]})
    };
    send_json(
        http.put(format!("{base}/api/me/offerings")).bearer_auth(&key),
        json!({"offerings": [offering("README translation", "free"), offering("API docs", "quote"),
                             offering("Release notes", "offsite_paid")]}),
    )
    .await?;
    let mut calls = Vec::new();
    for i in 0..5 {
        let c = send_json(
            http.post(format!("{base}/api/posts")).bearer_auth(&key),
            json!({"kind": "offering", "title": format!("Translating open-source docs, batch {i}"),
                   "body": "Free English to Chinese translation for two open-source READMEs this week.",
                   "tags": ["translation"]}),
        )
        .await?;
        calls.push(c["id"].as_str().ok_or("no call id")?.to_owned());
    }
    Ok(Translator { handle, key, calls })
}

/// What one `wrk` run measured.
#[derive(Debug, Clone, Default)]
pub struct WrkRun {
    pub requests: u64,
    pub seconds: f64,
    /// Answers with a status outside 2xx/3xx.
    pub non_2xx: u64,
    /// Socket errors and timeouts together.
    pub errors: u64,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
}

impl WrkRun {
    /// Answers with a 2xx status, per second.
    pub fn ok_per_second(&self) -> f64 {
        self.requests.saturating_sub(self.non_2xx) as f64 / self.seconds
    }
    pub fn per_second(&self) -> f64 {
        self.requests as f64 / self.seconds
    }
}

/// The `done` hook every script ends with: the run as one JSON line on stdout.
const DONE_HOOK: &str = r#"
done = function(summary, latency, requests)
  io.write(string.format('WRK_RESULT {"requests":%d,"duration_us":%d,"non_2xx":%d,"errors":%d,"p50":%d,"p90":%d,"p99":%d,"max":%d}\n',
    summary.requests, summary.duration, summary.errors.status,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max))
end
"#;

/// Runs `wrk` against `url` with `script` (Lua; may be empty for plain GETs) at `connections`
/// connections over two threads for `seconds`.
pub fn wrk(url: &str, script: &str, connections: usize, seconds: u64) -> Result<WrkRun, Error> {
    wrk_with(url, script, connections, seconds, &WrkPlace::default())
}

/// Where `wrk` runs: its threads, and the CPUs it is pinned to (`taskset -c`), so a server on
/// the other CPUs of a many-core machine does not share them with its client.
#[derive(Debug, Clone)]
pub struct WrkPlace {
    pub threads: usize,
    pub cpus: Option<String>,
}

impl Default for WrkPlace {
    fn default() -> WrkPlace {
        WrkPlace { threads: 2, cpus: None }
    }
}

/// `wrk` as `place` says.
pub fn wrk_with(
    url: &str,
    script: &str,
    connections: usize,
    seconds: u64,
    place: &WrkPlace,
) -> Result<WrkRun, Error> {
    let dir = std::env::temp_dir().join(format!("agentdir-wrk-{}-{}", std::process::id(), rand_tag()));
    std::fs::create_dir_all(&dir)?;
    let path = dir.join("script.lua");
    std::fs::write(&path, format!("{script}\n{DONE_HOOK}"))?;
    let threads = connections.clamp(1, place.threads.max(1));
    let mut command = match &place.cpus {
        Some(cpus) => {
            let mut c = Command::new("taskset");
            c.args(["-c", cpus, "wrk"]);
            c
        }
        None => Command::new("wrk"),
    };
    let out = command
        .args(["-t", &threads.to_string(), "-c", &connections.to_string(), "-d", &format!("{seconds}s")])
        .args(["--timeout", "10s", "-s"])
        .arg(&path)
        .arg(url)
        .output()
        .map_err(|e| format!("cannot run wrk (apt-get install wrk): {e}"))?;
    let _ = std::fs::remove_dir_all(&dir);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix("WRK_RESULT "))
        .ok_or_else(|| format!("wrk printed no result: {stdout} {}", String::from_utf8_lossy(&out.stderr)))?;
    let v: Value = serde_json::from_str(line)?;
    let n = |k: &str| v[k].as_u64().unwrap_or(0);
    let ms = |k: &str| n(k) as f64 / 1000.0;
    Ok(WrkRun {
        requests: n("requests"),
        seconds: n("duration_us") as f64 / 1e6,
        non_2xx: n("non_2xx"),
        errors: n("errors"),
        p50_ms: ms("p50"),
        p90_ms: ms("p90"),
        p99_ms: ms("p99"),
        max_ms: ms("max"),
    })
}

/// The start of a `wrk` script whose requests count (`n`) and know their thread (`id`, also
/// seeding Lua's random numbers per thread).
pub const LUA_THREADS: &str = r#"local n = 0
local id = 0
local next_id = 0
function setup(thread) thread:set("id", next_id); next_id = next_id + 1 end
function init(args) id = wrk.thread:get("id"); math.randomseed(id * 7919 + 1) end"#;

/// A Lua string literal of `s` (for values embedded in scripts).
pub fn lua_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A Lua array literal of strings.
pub fn lua_array(items: &[String]) -> String {
    let inner: Vec<String> = items.iter().map(|s| lua_string(s)).collect();
    format!("{{{}}}", inner.join(", "))
}

/// The median of `values` (NaN when empty).
pub fn median(values: &[f64]) -> f64 {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| !x.is_nan()).collect();
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let mid = v.len() / 2;
    if v.len() % 2 == 1 { v[mid] } else { (v[mid - 1] + v[mid]) / 2.0 }
}

/// The 1-minute load average, to print next to figures taken on a shared machine.
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().map(str::to_owned))
        .unwrap_or_else(|| "?".into())
}

/// What `agentdir serve` would run with over `dir`, on its defaults (its flags and environment
/// as `ServeArgs` reads them), for a benchmark that opens the application in its own process.
pub fn serve_settings(dir: &Path, base_url: &str) -> Result<agentdir::Settings, Error> {
    let serve = agentdir::config::ServeArgs::from_environment().map_err(|e| e.to_string())?;
    Ok(agentdir::Settings {
        data_dir: dir.to_path_buf(),
        base_url: base_url.into(),
        mail_domain: "example.org".into(),
        mail_authserv_id: "example.org".into(),
        rates: serve.rates(),
        link_fetch_allow_private: agentdir::checks::link_fetch::PrivateTargets::None,
        trusted_proxies: Vec::new(),
        link_fetches_at_once: serve.link_fetches_at_once(),
        read_pool: serve.read_pool(),
        changes_retention_ms: i64::try_from(serve.changes_retention.as_millis()).unwrap_or(i64::MAX),
        view_cache_bytes: serve.view_cache_mb.saturating_mul(1 << 20),
        reserved_handles: serve.reserved_handles(),
        endpoint_check_interval: serve.endpoint_check_interval,
        model: serve.model(),
        sitemap_urls: serve.sitemap_urls,
        max_waiting: serve.max_waiting,
        longest_wait: serve.longest_wait(),
    })
}
