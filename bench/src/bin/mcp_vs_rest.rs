//! Throughput and latency of `tools/call get_agent` on `/mcp` against `GET /api/agents/{handle}`
//! for the same agent, at the same concurrency, in one run (rounds alternate so drift hits both).
//!
//! ```text
//! cargo run --release -p agentdir-bench --bin mcp_vs_rest [-- OPTIONS]
//!   --url BASE         benchmark a running server (default: start one over a temp dir, seeded)
//!   --handle HANDLE    the agent to read (default: the seeded one, or the first listed)
//!   --concurrency N    requests in flight per side (default 16)
//!   --seconds S        measured seconds per round and side (default 5)
//!   --rounds R         REST/MCP rounds, alternating (default 3)
//! ```
//!
//! Without `--url`, it builds `agentdir` with the same profile (a no-op when fresh), starts it on
//! 127.0.0.1 port 0 over a temporary data dir, and writes a realistic card through REST first.

use std::sync::Arc;
use std::time::{Duration, Instant};

use agentdir_bench::{Error, send_json, start_server};
use serde_json::{Value, json};

struct Options {
    url: Option<String>,
    handle: Option<String>,
    concurrency: usize,
    seconds: u64,
    rounds: usize,
}

fn options() -> Result<Options, Error> {
    let mut o = Options { url: None, handle: None, concurrency: 16, seconds: 5, rounds: 3 };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--url" => o.url = Some(value()?.trim_end_matches('/').to_owned()),
            "--handle" => o.handle = Some(value()?),
            "--concurrency" => o.concurrency = value()?.parse()?,
            "--seconds" => o.seconds = value()?.parse()?,
            "--rounds" => o.rounds = value()?.parse()?,
            "-h" | "--help" => {
                println!("see the header of bench/src/bin/mcp_vs_rest.rs for the options");
                std::process::exit(0);
            }
            other => return Err(format!("unknown option {other}").into()),
        }
    }
    if o.concurrency == 0 || o.seconds == 0 || o.rounds == 0 {
        return Err("--concurrency, --seconds and --rounds must be at least 1".into());
    }
    Ok(o)
}

/// One agent with a full card (see `seed_translator`) among others.
async fn seed(http: &reqwest::Client, base: &str) -> Result<String, Error> {
    let translator = agentdir_bench::seed_translator(http, base).await?;
    for i in 0..30 {
        send_json(
            http.post(format!("{base}/api/agents")),
            json!({"handle": format!("bench-other-{i}"), "name": format!("Other {i}"), "owner": "Someone",
                   "mailbox": format!("other{i}@example.org"), "accept_rules": true,
                   "description_en": "Another agent in the directory."}),
        )
        .await?;
    }
    Ok(translator.handle)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Side {
    Rest,
    Mcp,
}

impl Side {
    fn label(self) -> &'static str {
        match self {
            Side::Rest => "REST GET /api/agents/{handle}",
            Side::Mcp => "MCP tools/call get_agent",
        }
    }
}

struct Target {
    http: reqwest::Client,
    rest_url: String,
    mcp_url: String,
    mcp_body: String,
    handle: String,
}

impl Target {
    /// One request; the whole body is read (as a client must, to reuse the connection) and
    /// checked, so a fast error is never counted as a fast answer.
    async fn once(&self, side: Side) -> Result<(), Error> {
        let request = match side {
            Side::Rest => self.http.get(&self.rest_url),
            Side::Mcp => self
                .http
                .post(&self.mcp_url)
                .header("content-type", "application/json")
                .header("accept", "application/json, text/event-stream")
                .header("mcp-protocol-version", "2025-11-25")
                .body(self.mcp_body.clone()),
        };
        let response = request.send().await?;
        let status = response.status();
        let body = response.bytes().await?;
        let text = std::str::from_utf8(&body)?;
        let ok = status.is_success()
            && text.contains(&self.handle)
            && (side == Side::Rest || text.contains("\"isError\":false"));
        if !ok {
            return Err(format!("{}: {status} {}", side.label(), &text[..text.len().min(300)]).into());
        }
        Ok(())
    }
}

#[derive(Default)]
struct Tally {
    latencies_us: Vec<u32>,
    errors: usize,
    first_error: Option<String>,
    elapsed: Duration,
}

async fn run(target: &Arc<Target>, side: Side, concurrency: usize, duration: Duration, tally: &mut Tally) {
    let started = Instant::now();
    let deadline = started + duration;
    let workers: Vec<_> = (0..concurrency)
        .map(|_| {
            let target = target.clone();
            tokio::spawn(async move {
                let mut local = Tally::default();
                while Instant::now() < deadline {
                    let t0 = Instant::now();
                    match target.once(side).await {
                        Ok(()) => {
                            local.latencies_us.push(t0.elapsed().as_micros().min(u32::MAX as u128) as u32)
                        }
                        Err(e) => {
                            local.errors += 1;
                            local.first_error.get_or_insert_with(|| e.to_string());
                        }
                    }
                }
                local
            })
        })
        .collect();
    for worker in workers {
        if let Ok(local) = worker.await {
            tally.latencies_us.extend(local.latencies_us);
            tally.errors += local.errors;
            if tally.first_error.is_none() {
                tally.first_error = local.first_error;
            }
        }
    }
    tally.elapsed += started.elapsed();
}

fn percentile_ms(sorted: &[u32], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((p / 100.0) * (sorted.len() as f64)).ceil() as usize;
    f64::from(sorted[rank.clamp(1, sorted.len()) - 1]) / 1000.0
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let o = options()?;
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(o.concurrency.max(1))
        .timeout(Duration::from_secs(30))
        .build()?;
    let (_server, base) = match &o.url {
        Some(url) => (None, url.clone()),
        None => {
            let server = start_server(None, &[])?;
            let base = server.base.clone();
            (Some(server), base)
        }
    };
    let handle = match (&o.handle, &o.url) {
        (Some(h), _) => h.clone(),
        (None, None) => seed(&http, &base).await?,
        (None, Some(_)) => {
            let list: Value = http.get(format!("{base}/api/agents?limit=1")).send().await?.json().await?;
            list["agents"][0]["handle"].as_str().ok_or("the server has no agents; pass --handle")?.to_owned()
        }
    };
    let target = Arc::new(Target {
        http,
        rest_url: format!("{base}/api/agents/{handle}"),
        mcp_url: format!("{base}/mcp"),
        mcp_body: json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                         "params": {"name": "get_agent", "arguments": {"handle": handle}}})
        .to_string(),
        handle: handle.clone(),
    });
    // Both answers are the same card: compare once, outside the timing.
    let rest: Value = target.http.get(&target.rest_url).send().await?.json().await?;
    let mcp: Value = target
        .http
        .post(&target.mcp_url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(target.mcp_body.clone())
        .send()
        .await?
        .json()
        .await?;
    if mcp["result"]["structuredContent"] != rest {
        return Err(format!("MCP and REST disagree on {handle}: {mcp}").into());
    }

    let per_round = Duration::from_secs(o.seconds);
    println!(
        "agentdir MCP vs REST: {base}, agent {handle}, concurrency {}, {} rounds × {}s per side ({} build)",
        o.concurrency,
        o.rounds,
        o.seconds,
        if cfg!(debug_assertions) { "debug" } else { "release" }
    );
    let (mut rest_tally, mut mcp_tally) = (Tally::default(), Tally::default());
    // Warm-up: connections, caches, the allocator; not counted.
    for side in [Side::Rest, Side::Mcp] {
        run(&target, side, o.concurrency, Duration::from_secs(1), &mut Tally::default()).await;
    }
    for _ in 0..o.rounds {
        run(&target, Side::Rest, o.concurrency, per_round, &mut rest_tally).await;
        run(&target, Side::Mcp, o.concurrency, per_round, &mut mcp_tally).await;
    }

    println!();
    println!(
        "| {:<30} | {:>9} | {:>9} | {:>8} | {:>8} | {:>6} |",
        "", "requests", "req/s", "p50 ms", "p99 ms", "errors"
    );
    println!("|{:-<32}|{:->11}|{:->11}|{:->10}|{:->10}|{:->8}|", "", "", "", "", "", "");
    let mut throughput = [0.0f64; 2];
    for (i, (side, tally)) in
        [(Side::Rest, &mut rest_tally), (Side::Mcp, &mut mcp_tally)].into_iter().enumerate()
    {
        tally.latencies_us.sort_unstable();
        let n = tally.latencies_us.len();
        throughput[i] = n as f64 / tally.elapsed.as_secs_f64();
        println!(
            "| {:<30} | {:>9} | {:>9.0} | {:>8.2} | {:>8.2} | {:>6} |",
            side.label(),
            n,
            throughput[i],
            percentile_ms(&tally.latencies_us, 50.0),
            percentile_ms(&tally.latencies_us, 99.0),
            tally.errors
        );
    }
    let ratio = throughput[1] / throughput[0];
    println!();
    println!("MCP/REST throughput: {:.0}% (target ≥ 50%)", ratio * 100.0);
    for (side, tally) in [(Side::Rest, &rest_tally), (Side::Mcp, &mcp_tally)] {
        if let Some(e) = &tally.first_error {
            eprintln!("{}: {} errors, first: {e}", side.label(), tally.errors);
        }
    }
    if rest_tally.errors + mcp_tally.errors > 0 {
        return Err("some requests failed; the figures above are not comparable".into());
    }
    Ok(())
}
