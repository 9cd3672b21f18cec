//! Write throughput and latency of a release server: acknowledged writes per second and
//! p50/p99 latency of `POST /api/posts` (calls by 64 agents in turn), `POST /api/posts/{id}/replies`
//! and `POST /api/agents` (registrations, each an argon2 hash), driven by `wrk`, with several
//! rounds per connection count. Then the read-your-writes check the goal comes with: calls posted
//! one by one, each searched for by a word only it holds the moment its POST is answered.
//!
//! ```text
//! cargo run --release -p agentdir-bench --bin writes [-- OPTIONS]
//!   --connections LIST  connection counts for every workload (default: posts at 32, the goal's
//!                       setting; replies and registrations at 16 and 64)
//!   --seconds S         seconds per run (default 5)
//!   --rounds R          runs per workload and connection count (default 3)
//!   --only WHAT         posts | replies | registrations
//! ```
//!
//! Needs `wrk` on PATH (Debian: `apt-get install wrk`). Every figure is the median of the rounds.

use std::time::Instant;

use agentdir_bench::{Error, LUA_THREADS, WrkRun, load_average, lua_array, median, register_agents, wrk};
use serde_json::json;

struct Options {
    connections: Option<Vec<usize>>,
    seconds: u64,
    rounds: usize,
    only: Option<String>,
}

fn options() -> Result<Options, Error> {
    let mut o = Options { connections: None, seconds: 5, rounds: 3, only: None };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--connections" => {
                o.connections = Some(value()?.split(',').map(|c| c.trim().parse()).collect::<Result<_, _>>()?)
            }
            "--seconds" => o.seconds = value()?.parse()?,
            "--rounds" => o.rounds = value()?.parse()?,
            "--only" => o.only = Some(value()?),
            "-h" | "--help" => {
                println!("see the header of bench/src/bin/writes.rs for the options");
                std::process::exit(0);
            }
            other => return Err(format!("unknown option {other}").into()),
        }
    }
    Ok(o)
}

/// Calls by the agents in turn, each with a unique title.
fn posts_script(keys: &[String]) -> String {
    format!(
        r#"
local keys = {keys}
{THREADS}
request = function()
  n = n + 1
  local key = keys[(n * 2 + id) % #keys + 1]
  local body = string.format('{{"kind":"seeking","title":"Benchmark call %d-%d","body":"Looking for a reviewer for item %d of batch %d; English or Chinese.","tags":["bench"]}}', id, n, n, id)
  return wrk.format("POST", "/api/posts", {{["Authorization"] = "Bearer " .. key, ["Content-Type"] = "application/json"}}, body)
end
"#,
        keys = lua_array(keys),
        THREADS = LUA_THREADS,
    )
}

/// Replies by the agents in turn to the calls in turn.
fn replies_script(keys: &[String], calls: &[String]) -> String {
    format!(
        r#"
local keys = {keys}
local calls = {calls}
{THREADS}
request = function()
  n = n + 1
  local key = keys[(n * 2 + id) % #keys + 1]
  local call = calls[(n * 7 + id) % #calls + 1]
  local body = string.format('{{"body":"I can help with this (reply %d-%d)."}}', id, n)
  return wrk.format("POST", "/api/posts/" .. call .. "/replies", {{["Authorization"] = "Bearer " .. key, ["Content-Type"] = "application/json"}}, body)
end
"#,
        keys = lua_array(keys),
        calls = lua_array(calls),
        THREADS = LUA_THREADS,
    )
}

/// Registrations with fresh handles.
fn registrations_script(run: usize) -> String {
    format!(
        r#"
{THREADS}
request = function()
  n = n + 1
  local handle = string.format("reg-{run}-%d-%d", id, n)
  local body = string.format('{{"handle":"%s","name":"Registered %d","owner":"Bench Owner","mailbox":"%s@example.org","accept_rules":true,"description_en":"Registered by the write benchmark."}}', handle, n, handle)
  return wrk.format("POST", "/api/agents", {{["Content-Type"] = "application/json"}}, body)
end
"#,
        THREADS = LUA_THREADS,
    )
}

/// Mean writer batch size and duration so far, from the server's Prometheus metrics.
async fn batch_figures(http: &reqwest::Client, base: &str) -> Result<(f64, f64), Error> {
    let text = http.get(format!("{base}/metrics")).send().await?.text().await?;
    let value = |name: &str| -> f64 {
        text.lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(f64::NAN)
    };
    let jobs = value("agentdir_write_batch_size_sum");
    let batches = value("agentdir_write_batch_size_count");
    let seconds = value("agentdir_write_batch_seconds_sum");
    Ok((jobs / batches, seconds * 1000.0 / batches))
}

fn report(label: &str, connections: usize, runs: &[WrkRun]) {
    let per = |f: fn(&WrkRun) -> f64| median(&runs.iter().map(f).collect::<Vec<_>>());
    let failed: u64 = runs.iter().map(|r| r.non_2xx + r.errors).sum();
    println!(
        "| {label:<13} | {connections:>5} | {:>9.0} | {:>7.2} | {:>7.2} | {:>7.2} | {failed:>6} |",
        per(WrkRun::ok_per_second),
        per(|r| r.p50_ms),
        per(|r| r.p99_ms),
        per(|r| r.max_ms),
    );
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let o = options()?;
    let (server, http) = agentdir_bench::serve()?;
    let base = server.base.clone();
    let agents = register_agents(&http, &base, "writer", 64).await?;
    let keys: Vec<String> = agents.iter().map(|(_, k)| k.clone()).collect();
    let mut calls = Vec::new();
    for (i, (_, key)) in agents.iter().enumerate().take(32) {
        let c = agentdir_bench::send_json(
            http.post(format!("{base}/api/posts")).bearer_auth(key),
            json!({"kind": "seeking", "title": format!("A call to reply to, {i}"), "body": "Replies welcome."}),
        )
        .await?;
        calls.push(c["id"].as_str().ok_or("no call id")?.to_owned());
    }
    println!(
        "agentdir writes: {base}, {} rounds × {}s per workload and connection count, load average {} at start",
        o.rounds,
        o.seconds,
        load_average()
    );
    println!();
    println!("| workload      | conns | writes/s  | p50 ms  | p99 ms  | max ms  | non-2xx |");
    println!("|---------------|------:|----------:|--------:|--------:|--------:|-------:|");
    let mut registration_runs = 0;
    let mut batches = Vec::new();
    for workload in ["posts", "replies", "registrations"] {
        if o.only.as_deref().is_some_and(|w| w != workload) {
            continue;
        }
        let connections = match (&o.connections, workload) {
            (Some(list), _) => list.clone(),
            (None, "posts") => vec![32],
            (None, _) => vec![16, 64],
        };
        for connections in connections {
            let mut runs = Vec::new();
            for _ in 0..o.rounds {
                let script = match workload {
                    "posts" => posts_script(&keys),
                    "replies" => replies_script(&keys, &calls),
                    _ => {
                        registration_runs += 1;
                        registrations_script(registration_runs)
                    }
                };
                let url = format!("{base}/");
                runs.push(
                    tokio::task::spawn_blocking(move || wrk(&url, &script, connections, o.seconds)).await??,
                );
            }
            report(workload, connections, &runs);
            batches.push((workload, connections, batch_figures(&http, &base).await?));
        }
    }

    println!();
    println!("writer batches so far (server metrics, cumulative): workload, conns, mean size, mean ms");
    for (workload, connections, (size, ms)) in batches {
        println!("  {workload:<13} {connections:>5}  {size:>7.1}  {ms:>7.2}");
    }

    // Read-your-writes: each call is found by `q` the moment its POST is answered.
    let mut found = 0;
    let mut worst = 0.0f64;
    for i in 0..20 {
        let word = format!("zqx{i}marker{}", std::process::id());
        let (_, key) = &agents[i % agents.len()];
        let started = Instant::now();
        agentdir_bench::send_json(
            http.post(format!("{base}/api/posts")).bearer_auth(key),
            json!({"kind": "announce", "title": format!("Findable {word}"), "body": "Checking read-your-writes."}),
        )
        .await?;
        let list: serde_json::Value =
            http.get(format!("{base}/api/posts?q={word}")).send().await?.json().await?;
        worst = worst.max(started.elapsed().as_secs_f64() * 1000.0);
        if list["total"] == 1 {
            found += 1;
        }
    }
    println!();
    println!(
        "read-your-writes: {found}/20 calls found by q right after their POST (slowest POST+search {worst:.1} ms)"
    );
    println!("load average at the end: {}", load_average());
    if found != 20 {
        return Err("a call was not findable right after its POST was answered".into());
    }
    Ok(())
}
