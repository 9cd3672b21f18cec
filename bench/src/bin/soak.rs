//! Soak: a release server under a steady mix of card reads, searches (English and Chinese), MCP
//! tool calls, writes and bad input at about half of its measured capacity, for ten minutes.
//! Every minute it reports the server's resident memory (the mean of a reading every second),
//! open file descriptors, the minute's p99 latency and the 5xx answers the server counted (its
//! own `/metrics`), and at the end whether the goals held: memory flat after warm-up (under 5 %
//! growth of the minute means of anonymous memory over the last 8 minutes; the file-backed rest
//! is the mapped database, which grows with the data written), p99 flat, no 5xx.
//!
//! ```text
//! cargo run --release -p agentdir-bench --bin soak [-- OPTIONS]
//!   --minutes M           samples (default 10)
//!   --interval S          seconds per sample (default 60; --minutes 3 --interval 10 is a quick look)
//!   --connections C       wrk connections (default 32)
//!   --capacity-seconds S  length of the capacity run (default 20)
//!   --rate R              requests per second to hold, instead of half the measured capacity
//! ```
//!
//! Needs `wrk` on PATH (Debian: `apt-get install wrk`).

use agentdir_bench::{
    Error, LUA_THREADS, WrkRun, http_client, load_average, lua_array, register_agents, send_json,
    start_server, wrk,
};
use serde_json::{Value, json};

struct Options {
    minutes: usize,
    interval: u64,
    connections: usize,
    capacity_seconds: u64,
    rate: Option<f64>,
}

fn options() -> Result<Options, Error> {
    let mut o = Options { minutes: 10, interval: 60, connections: 32, capacity_seconds: 20, rate: None };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--minutes" => o.minutes = value()?.parse()?,
            "--interval" => o.interval = value()?.parse()?,
            "--connections" => o.connections = value()?.parse()?,
            "--capacity-seconds" => o.capacity_seconds = value()?.parse()?,
            "--rate" => o.rate = Some(value()?.parse()?),
            "-h" | "--help" => {
                println!("see the header of bench/src/bin/soak.rs for the options");
                std::process::exit(0);
            }
            other => return Err(format!("unknown option {other}").into()),
        }
    }
    if o.minutes < 3 || o.interval == 0 || o.connections == 0 {
        return Err("--minutes must be at least 3, --interval and --connections at least 1".into());
    }
    Ok(o)
}

const WORDS_EN: &[&str] = &["translation", "review", "legal", "subtitles", "data", "glossary", "contracts"];
const WORDS_ZH: &[&str] = &["翻译", "审校", "数据分析", "本地化", "字幕"];

/// The mix, per 100 requests: 36 card and call reads, 20 searches, 12 MCP tool calls, 2 feed
/// pages, 10 writes (calls, replies, profile updates), 20 bad inputs of every kind the server
/// refuses. `delay` paces each connection so the whole holds the target rate.
fn script(handles: &[String], keys: &[String], calls: &[String], delay_ms: f64) -> String {
    let mut words: Vec<String> = WORDS_EN.iter().chain(WORDS_ZH).map(|w| (*w).to_owned()).collect();
    // Query strings carry the Chinese words percent-encoded.
    for w in words.iter_mut() {
        *w = w
            .bytes()
            .map(|b| if b.is_ascii_alphanumeric() { (b as char).to_string() } else { format!("%{b:02X}") })
            .collect();
    }
    format!(
        r#"
local handles = {handles}
local keys = {keys}
local calls = {calls}
local words = {words}
{THREADS}
function delay() return {delay_ms:.3} end
local function pick(t) return t[math.random(#t)] end
local json = {{["Content-Type"] = "application/json"}}
local function authed(key) return {{["Content-Type"] = "application/json", ["Authorization"] = "Bearer " .. key}} end
local mcp = {{["Content-Type"] = "application/json", ["Accept"] = "application/json, text/event-stream", ["MCP-Protocol-Version"] = "2025-11-25"}}
local function tool(name, args)
  return wrk.format("POST", "/mcp", mcp, string.format('{{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{{"name":"%s","arguments":%s}}}}', n, name, args))
end
request = function()
  n = n + 1
  local r = math.random(100)
  if r <= 28 then return wrk.format("GET", "/api/agents/" .. pick(handles))
  elseif r <= 36 then return wrk.format("GET", "/api/posts/" .. pick(calls))
  elseif r <= 46 then return wrk.format("GET", "/api/agents?q=" .. pick(words) .. "&limit=20")
  elseif r <= 54 then return wrk.format("GET", "/api/posts?q=" .. pick(words) .. "&offset=" .. math.random(0, 40))
  elseif r <= 56 then return wrk.format("GET", "/api/agents?verified=false&new=true&min_level=0&limit=50")
  elseif r <= 62 then return tool("get_agent", string.format('{{"handle":"%s"}}', pick(handles)))
  elseif r <= 66 then return tool("search_agents", string.format('{{"q":"%s","limit":"10"}}', pick({{"translation", "翻译", "legal review"}})))
  elseif r <= 68 then return tool("search_calls", '{{"q":"glossary","kind":"seeking"}}')
  elseif r <= 70 then return wrk.format("GET", "/api/changes?limit=100")
  elseif r <= 74 then
    local key = pick(keys)
    return wrk.format("POST", "/api/posts", authed(key), string.format('{{"kind":"seeking","title":"Soak call %d-%d","body":"Looking for help with item %d; English or 中文.","tags":["soak"]}}', id, n, n))
  elseif r <= 77 then
    return wrk.format("POST", "/api/posts/" .. pick(calls) .. "/replies", authed(pick(keys)), string.format('{{"body":"I can help (%d-%d)."}}', id, n))
  elseif r <= 80 then
    return wrk.format("PATCH", "/api/me", authed(pick(keys)), string.format('{{"tagline":"Updated %d-%d","languages":["en","zh-CN"]}}', id, n))
  elseif r <= 83 then return wrk.format("POST", "/api/posts", authed(pick(keys)), '{{"kind":"seeking","title":')
  elseif r <= 85 then return wrk.format("POST", "/api/agents", json, '{{"handle":"NO SUCH","name":"","accept_rules":false}}')
  elseif r <= 87 then return wrk.format("GET", "/api/agents?limit=0&min_level=9&verified=maybe")
  elseif r <= 89 then return wrk.format("GET", "/api/agents/Not_A_Handle!")
  elseif r <= 91 then return wrk.format("GET", "/api/changes?after=zz_not_a_cursor")
  elseif r <= 93 then return wrk.format("POST", "/api/posts", authed("adk_wrong_key"), '{{"kind":"seeking","title":"t","body":"b"}}')
  elseif r <= 95 then return tool("get_call", '{{"id":17}}')
  elseif r <= 97 then return wrk.format("POST", "/mcp", mcp, '{{"jsonrpc":"2.0","id":1,"method":"no/such"')
  elseif r <= 99 then return wrk.format("GET", "/api/no/such/route")
  else return wrk.format("POST", "/api/posts", authed(pick(keys)), '{{"kind":"seeking","title":"' .. string.rep("x", 300000) .. '"}}')
  end
end
"#,
        handles = lua_array(handles),
        keys = lua_array(keys),
        calls = lua_array(calls),
        words = lua_array(&words),
        THREADS = LUA_THREADS,
    )
}

/// What a process holds: resident memory, and of it the anonymous part (heap, caches) and the
/// file-backed part (the files it maps: the index's segments, the model, the binary), in MiB;
/// and its open file descriptors.
#[derive(Default)]
struct Held {
    rss_mib: f64,
    anon_mib: f64,
    file_mib: f64,
    fds: usize,
}

/// How often memory is sampled while a minute runs. One reading a minute lands anywhere on the
/// saw-tooth of the search index's flushes and merges (tens of MiB up and down within seconds);
/// a minute's mean does not.
const HELD_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

/// The mean of the memory figures sampled every [`HELD_EVERY`] until `done`, and the most fds.
async fn held_while(pid: u32, done: tokio::sync::oneshot::Receiver<()>) -> Result<Held, Error> {
    let mut done = done;
    let (mut sum, mut n) = (Held::default(), 0.0);
    loop {
        let now = process_figures(pid)?;
        sum.rss_mib += now.rss_mib;
        sum.anon_mib += now.anon_mib;
        sum.file_mib += now.file_mib;
        sum.fds = sum.fds.max(now.fds);
        n += 1.0;
        tokio::select! {
            _ = &mut done => break,
            _ = tokio::time::sleep(HELD_EVERY) => {}
        }
    }
    Ok(Held {
        rss_mib: sum.rss_mib / n,
        anon_mib: sum.anon_mib / n,
        file_mib: sum.file_mib / n,
        fds: sum.fds,
    })
}

fn process_figures(pid: u32) -> Result<Held, Error> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let mib = |key: &str| -> Result<f64, Error> {
        let kb: f64 = status
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.split_whitespace().next())
            .ok_or_else(|| format!("no {key} in /proc/{pid}/status"))?
            .parse()?;
        Ok(kb / 1024.0)
    };
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd"))?.count();
    Ok(Held { rss_mib: mib("VmRSS:")?, anon_mib: mib("RssAnon:")?, file_mib: mib("RssFile:")?, fds })
}

/// Answers the server counted with a 5xx status, from its Prometheus text.
async fn server_5xx(http: &reqwest::Client, base: &str) -> Result<u64, Error> {
    let text = http.get(format!("{base}/metrics")).send().await?.text().await?;
    let mut total = 0.0;
    for line in text.lines().filter(|l| l.starts_with("agentdir_http_requests_total{")) {
        if line.contains("status=\"5") {
            total += line.rsplit(' ').next().unwrap_or("0").parse::<f64>().unwrap_or(0.0);
        }
    }
    Ok(total as u64)
}

async fn seed(http: &reqwest::Client, base: &str) -> Result<(Vec<String>, Vec<String>, Vec<String>), Error> {
    let agents = register_agents(http, base, "soak", 60).await?;
    let mut calls = Vec::new();
    for (i, (_, key)) in agents.iter().enumerate() {
        let en = WORDS_EN[i % WORDS_EN.len()];
        let zh = WORDS_ZH[i % WORDS_ZH.len()];
        send_json(
            http.patch(format!("{base}/api/me")).bearer_auth(key),
            json!({"tagline": format!("{en} and {zh}"), "description_zh": format!("我们提供{zh}服务"),
                   "capabilities": [en], "languages": ["en", "zh-CN"]}),
        )
        .await?;
        for j in 0..4 {
            let c: Value = send_json(
                http.post(format!("{base}/api/posts")).bearer_auth(key),
                json!({"kind": "seeking", "title": format!("Need {en} help, {i}-{j}"),
                       "body": format!("A {en} glossary to review; {zh} welcome."), "tags": [en]}),
            )
            .await?;
            calls.push(c["id"].as_str().ok_or("no call id")?.to_owned());
        }
    }
    let handles = agents.iter().map(|(h, _)| h.clone()).collect();
    let keys = agents.iter().map(|(_, k)| k.clone()).collect();
    Ok((handles, keys, calls))
}

struct Sample {
    run: WrkRun,
    held: Held,
    /// The database file with its WAL, in MiB.
    db_mib: f64,
    server_5xx: u64,
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let o = options()?;
    let server = start_server(None, &[])?;
    let base = server.base.clone();
    let pid = server.pid();
    let http = http_client()?;
    let (handles, keys, calls) = seed(&http, &base).await?;
    let connections = o.connections;

    let rate = match o.rate {
        Some(r) => r,
        None => {
            let s = script(&handles, &keys, &calls, 0.0);
            let url = format!("{base}/");
            let secs = o.capacity_seconds;
            let full = tokio::task::spawn_blocking(move || wrk(&url, &s, connections, secs)).await??;
            println!(
                "capacity: {:.0} requests/s over {} connections for {} s (p99 {:.1} ms)",
                full.per_second(),
                connections,
                secs,
                full.p99_ms
            );
            full.per_second() / 2.0
        }
    };
    // Each connection waits so that all of them together send `rate` requests a second.
    let delay_ms = 1000.0 * connections as f64 / rate;
    println!(
        "soak: {} × {} s at about {rate:.0} requests/s ({connections} connections, {delay_ms:.1} ms apart), load average {}",
        o.minutes,
        o.interval,
        load_average()
    );
    println!();
    println!(
        "| minute | requests/s | p50 ms | p99 ms | max ms | 5xx | errors | RSS MiB | anon MiB | file MiB | db MiB | open fds |"
    );
    // Memory columns: means of the readings taken every second of the minute; fds: the most.
    println!(
        "|-------:|-----------:|-------:|-------:|-------:|----:|-------:|--------:|---------:|---------:|-------:|---------:|"
    );
    let mut samples: Vec<Sample> = Vec::new();
    let mut counted_5xx = server_5xx(&http, &base).await?;
    for minute in 1..=o.minutes {
        let s = script(&handles, &keys, &calls, delay_ms);
        let url = format!("{base}/");
        let secs = o.interval;
        let (stop, done) = tokio::sync::oneshot::channel();
        let sampler = tokio::spawn(held_while(pid, done));
        let run = tokio::task::spawn_blocking(move || wrk(&url, &s, connections, secs)).await??;
        let _ = stop.send(());
        let held = sampler.await??;
        let db_mib = ["agentdir.sqlite3", "agentdir.sqlite3-wal"]
            .iter()
            .filter_map(|f| std::fs::metadata(server.data_dir.join(f)).ok())
            .map(|m| m.len() as f64 / 1_048_576.0)
            .sum();
        let now_5xx = server_5xx(&http, &base).await?;
        let sample = Sample { run, held, db_mib, server_5xx: now_5xx - counted_5xx };
        counted_5xx = now_5xx;
        println!(
            "| {minute:>6} | {:>10.0} | {:>6.2} | {:>6.2} | {:>6.1} | {:>3} | {:>6} | {:>7.1} | {:>8.1} | {:>8.1} | {:>6.1} | {:>8} |",
            sample.run.per_second(),
            sample.run.p50_ms,
            sample.run.p99_ms,
            sample.run.max_ms,
            sample.server_5xx,
            sample.run.errors,
            sample.held.rss_mib,
            sample.held.anon_mib,
            sample.held.file_mib,
            sample.db_mib,
            sample.held.fds
        );
        samples.push(sample);
    }

    // Warm-up: the first two samples; the goals are judged over the rest.
    let steady = &samples[2.min(samples.len() - 1)..];
    let first = &steady[0];
    let last = &steady[steady.len() - 1];
    let grew = |from: f64, to: f64| (to - from) / from * 100.0;
    // Judged on anonymous memory, what the process itself holds: the file-backed part is the
    // mapped index segments, which grow with the data the soak's writes add, and is page cache
    // the kernel reclaims, not memory held.
    let growth = grew(first.held.anon_mib, last.held.anon_mib);
    let rss_growth = grew(first.held.rss_mib, last.held.rss_mib);
    let p99s: Vec<f64> = steady.iter().map(|s| s.run.p99_ms).collect();
    let (p99_min, p99_max) =
        (p99s.iter().copied().fold(f64::MAX, f64::min), p99s.iter().copied().fold(0.0, f64::max));
    let total_5xx: u64 = samples.iter().map(|s| s.server_5xx).sum();
    let errors: u64 = samples.iter().map(|s| s.run.errors).sum();
    let fds_max = samples.iter().map(|s| s.held.fds).max().unwrap_or(0);
    println!();
    println!(
        "anonymous memory (minute means) {:.1} → {:.1} MiB over the last {} minutes ({growth:+.1} %, goal < 5 %); \
         all of RSS {:.1} → {:.1} MiB ({rss_growth:+.1} %) with the database {:.1} → {:.1} MiB; p99 {p99_min:.2}-{p99_max:.2} ms; \
         open fds at most {fds_max}; {total_5xx} answers 5xx and {errors} socket errors in {} requests; load average {}",
        first.held.anon_mib,
        last.held.anon_mib,
        steady.len(),
        first.held.rss_mib,
        last.held.rss_mib,
        first.db_mib,
        last.db_mib,
        samples.iter().map(|s| s.run.requests).sum::<u64>(),
        load_average()
    );
    let mut failed = Vec::new();
    if growth >= 5.0 {
        failed.push(format!("anonymous memory grew {growth:.1} % after warm-up"));
    }
    if total_5xx > 0 || errors > 0 {
        failed.push(format!("{total_5xx} answers 5xx, {errors} socket errors"));
    }
    if failed.is_empty() {
        println!("goals held");
        Ok(())
    } else {
        Err(failed.join("; ").into())
    }
}
