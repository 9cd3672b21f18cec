//! The server's memory and start-up over a large directory: a release `agentdir serve` over a
//! data dir the search benchmark kept (`search --dir D --meaning …`, so every agent has its
//! vector), asked distinct needs by meaning through REST, its memory read from
//! `/proc/<pid>/status` as it goes: once listening, after searches at one client, right after
//! each burst of sixteen clients at once, and five seconds after the last.
//!
//! ```text
//! cargo run --release -p agentdir-bench --bin memory -- --dir D [OPTIONS]
//!   --dir PATH         the search benchmark's kept data dir (required; the server adds its
//!                      own files to it, as a server does)
//!   --one N            searches at one client (default 300)
//!   --bursts B         bursts of sixteen clients at once (default 3)
//!   --per-client N     searches per client in each burst (default 50)
//!   --starts S         start-ups timed before the run, each to listening (default 1)
//! ```
//!
//! Each search is a distinct need (the search benchmark's generator: English, Chinese and
//! mixed, half with filters) from an address of its own /24 through a trusted proxy, so each is
//! within its network's share and read by the full model, and no cache answers it. `VmRSS` is
//! what the kernel counts resident (anonymous memory plus the pages of mapped files: the
//! model, the index, the binary), `VmHWM` its peak since start, `RssAnon` the process's own
//! heap and stacks.

// A binary's root looks for modules beside it; these are the search benchmark's.
#[allow(dead_code)]
#[path = "search/corpus.rs"]
mod corpus;
#[allow(dead_code)]
#[path = "search/queries.rs"]
mod queries;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use agentdir_bench::{Error, OwnServer, http_client, load_average, start_server};
use queries::{Query, Target, distinct_needs};

const CLIENTS: usize = 16;

struct Options {
    dir: PathBuf,
    one: usize,
    bursts: usize,
    per_client: usize,
    starts: usize,
}

fn options() -> Result<Options, Error> {
    let mut o = Options { dir: PathBuf::new(), one: 300, bursts: 3, per_client: 50, starts: 1 };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{a} needs a value"));
        match a.as_str() {
            "--dir" => o.dir = PathBuf::from(value()?),
            "--one" => o.one = value()?.parse()?,
            "--bursts" => o.bursts = value()?.parse()?,
            "--per-client" => o.per_client = value()?.parse()?,
            "--starts" => o.starts = value()?.parse::<usize>()?.max(1),
            other => return Err(format!("unknown argument {other}").into()),
        }
    }
    if o.dir.as_os_str().is_empty() || !o.dir.join("agentdir.sqlite3").exists() {
        return Err("--dir must name a data dir the search benchmark kept (search --dir D --meaning)".into());
    }
    Ok(o)
}

/// The memory figures of `/proc/<pid>/status`, in MB.
struct Memory {
    rss: f64,
    peak: f64,
    anonymous: f64,
    files: f64,
}

fn memory(pid: u32) -> Result<Memory, Error> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let mb = |key: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|kb| kb.parse::<f64>().ok())
            .map_or(0.0, |kb| kb / 1024.0)
    };
    Ok(Memory { rss: mb("VmRSS:"), peak: mb("VmHWM:"), anonymous: mb("RssAnon:"), files: mb("RssFile:") })
}

fn row(what: &str, took: Option<Duration>, m: &Memory) {
    let took = took.map_or("—".to_string(), |t| format!("{:.1} s", t.as_secs_f64()));
    println!("| {what} | {took} | {:.0} | {:.0} | {:.0} | {:.0} |", m.rss, m.peak, m.anonymous, m.files);
}

fn url(base: &str, q: &Query) -> Result<reqwest::Url, Error> {
    let mut params = vec![("q", q.text.to_string()), ("limit", queries::LIMIT.to_string())];
    let mut add = |k: &'static str, v: Option<String>| {
        if let Some(v) = v {
            params.push((k, v));
        }
    };
    add("capability", q.capability.map(str::to_string));
    add("language", q.language.map(str::to_string));
    add("verified", q.verified.map(|v| v.to_string()));
    add("min_level", q.min_level.map(|v| v.to_string()));
    add("new", q.new.map(|v| v.to_string()));
    Ok(reqwest::Url::parse_with_params(&format!("{base}/api/agents"), &params)?)
}

/// Searches `needs` one after another, the `n`-th from 10.x.y.1 (a /24 of its own).
async fn search(http: &reqwest::Client, base: &str, needs: &[Query], first: usize) -> Result<(), Error> {
    for (i, q) in needs.iter().enumerate() {
        let n = first + i;
        let from = format!("10.{}.{}.1", (n >> 8) & 255, n & 255);
        let answer = http.get(url(base, q)?).header("X-Forwarded-For", from).send().await?;
        if !answer.status().is_success() {
            return Err(format!("{} answered {}", q.text, answer.status()).into());
        }
        answer.bytes().await?;
    }
    Ok(())
}

fn serve(dir: &std::path::Path) -> Result<(OwnServer, Duration), Error> {
    let started = Instant::now();
    let server = start_server(Some(dir), &[("AGENTDIR_TRUSTED_PROXIES", "127.0.0.1")])?;
    Ok((server, started.elapsed()))
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let o = options()?;
    println!("command: {}", std::env::args().collect::<Vec<_>>().join(" "));
    println!("load average at start: {}", load_average());
    for start in 1..o.starts {
        let (mut server, took) = serve(&o.dir)?;
        println!("start-up {start}: listening after {:.1} s", took.as_secs_f64());
        server.kill();
    }
    let (server, took) = serve(&o.dir)?;
    let pid = server.pid();
    let http = http_client()?;
    let needs = distinct_needs(o.one + o.bursts * CLIENTS * o.per_client, Target::Agents);
    println!(
        "\n| after | took | VmRSS MB | VmHWM MB | RssAnon MB | RssFile MB |\n|---|---:|---:|---:|---:|---:|"
    );
    row("start-up, to listening", Some(took), &memory(pid)?);
    let t = Instant::now();
    search(&http, &server.base, &needs[..o.one], 0).await?;
    row(&format!("{} searches at one client", o.one), Some(t.elapsed()), &memory(pid)?);
    let mut next = o.one;
    for burst in 1..=o.bursts {
        let t = Instant::now();
        let clients: Vec<_> = (0..CLIENTS)
            .map(|c| {
                let first = next + c * o.per_client;
                let needs = needs[first..first + o.per_client].to_vec();
                let (http, base) = (http.clone(), server.base.clone());
                tokio::spawn(async move { search(&http, &base, &needs, first).await })
            })
            .collect();
        for c in clients {
            c.await??;
        }
        next += CLIENTS * o.per_client;
        let what = format!("burst {burst}: {} searches at sixteen clients at once", CLIENTS * o.per_client);
        row(&what, Some(t.elapsed()), &memory(pid)?);
    }
    tokio::time::sleep(Duration::from_secs(5)).await;
    row("five seconds later", None, &memory(pid)?);
    println!("\nload average at the end: {}", load_average());
    Ok(())
}
