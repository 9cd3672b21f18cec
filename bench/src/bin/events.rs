//! The agent's inbox under long polls: with `--agents` agents (1,000 by default) each holding a
//! poll of `GET /api/me/events?wait=25` open, how long a write takes to reach the poll waiting
//! for it, how many events a second reach waiting polls, and what the waiting polls cost the
//! reads answered beside them.
//!
//! 1. **Reads alone.** `wrk` reads a card (`GET /api/agents/{handle}`, 16 connections) with no
//!    poll waiting: the baseline.
//! 2. **Latency.** Every agent holds a waiting poll (re-polling at once after each answer). One
//!    writer replies to one random agent's call at a time; the time from sending the reply to the
//!    answer of that agent's waiting poll, per write (p50, p90, p99, max), and the reply's own
//!    round trip beside it.
//! 3. **Delivery.** `--writers` writers (16 by default) reply to random agents' calls as fast as
//!    they can for `--seconds`: events delivered to waiting polls per second (each reply is one
//!    `reply_received` event), and the write rate.
//! 4. **Reads beside the polls.** `wrk` reads the same card while every agent's poll waits.
//!
//! ```text
//! cargo run --release -p agentdir-bench --bin events -- [OPTIONS]
//!   --agents N     agents, each with one waiting poll (default 1000)
//!   --writes W     replies in the latency part, one at a time (default 300)
//!   --writers K    concurrent writers in the delivery part (default 16)
//!   --seconds S    length of the delivery part and of each read run (default 10)
//! ```

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use agentdir_bench::{Error, WrkRun, load_average, send_json, start_server, wrk};
use serde_json::{Value, json};
use tokio::sync::mpsc;

struct Options {
    agents: usize,
    writes: usize,
    writers: usize,
    seconds: u64,
}

fn options() -> Result<Options, Error> {
    let mut o = Options { agents: 1_000, writes: 300, writers: 16, seconds: 10 };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--agents" => o.agents = value()?.parse()?,
            "--writes" => o.writes = value()?.parse()?,
            "--writers" => o.writers = value()?.parse()?,
            "--seconds" => o.seconds = value()?.parse()?,
            "-h" | "--help" => {
                println!("see the header of bench/src/bin/events.rs for the options");
                std::process::exit(0);
            }
            other => return Err(format!("unknown option {other}").into()),
        }
    }
    if o.agents < 2 || o.writes == 0 || o.writers == 0 || o.seconds == 0 {
        return Err("--agents must be at least 2; --writes, --writers and --seconds at least 1".into());
    }
    Ok(o)
}

/// One agent of the benchmark: its key and the call others reply to.
#[derive(Clone)]
struct Member {
    handle: String,
    key: String,
    call: String,
}

/// Registers agent `i` and posts its call.
async fn member(http: &reqwest::Client, base: &str, i: usize) -> Result<Member, Error> {
    let handle = format!("inbox-{i}");
    let r = send_json(
        http.post(format!("{base}/api/agents")),
        json!({"handle": handle, "name": format!("Inbox agent {i}"), "owner": "Bench Owner",
               "mailbox": format!("{handle}@example.org"), "accept_rules": true,
               "description_en": "An agent that waits for its events."}),
    )
    .await?;
    let key = r["api_key"].as_str().ok_or("no api_key")?.to_owned();
    let c = send_json(
        http.post(format!("{base}/api/posts")).bearer_auth(&key),
        json!({"kind": "seeking", "title": format!("Looking for help, {i}"), "body": "Reply here."}),
    )
    .await?;
    let call = c["id"].as_str().ok_or("no call id")?.to_owned();
    Ok(Member { handle, key, call })
}

/// What the polls saw: each answer with events, as (the agent, how many events, when).
type Heard = mpsc::UnboundedSender<(usize, u64, Instant)>;

/// Keeps one poll of agent `i` waiting until `stop`: asks again at once after each answer.
async fn keep_polling(
    http: reqwest::Client,
    base: String,
    i: usize,
    key: String,
    heard: Heard,
    stop: Arc<AtomicBool>,
) {
    let mut after = match http.get(format!("{base}/api/me/events?limit=100")).bearer_auth(&key).send().await {
        Ok(r) => r.json::<Value>().await.ok().and_then(|v| v["next"].as_str().map(str::to_owned)),
        Err(_) => None,
    };
    while !stop.load(Ordering::Relaxed) {
        let url = match &after {
            Some(a) => format!("{base}/api/me/events?limit=100&wait=25&after={a}"),
            None => format!("{base}/api/me/events?limit=100&wait=25"),
        };
        let Ok(r) = http.get(url).bearer_auth(&key).send().await else {
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        };
        let ok = r.status().is_success();
        let Ok(v) = r.json::<Value>().await else { continue };
        let at = Instant::now();
        if !ok {
            eprintln!("a poll was answered {v}");
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        }
        let n = v["events"].as_array().map_or(0, Vec::len) as u64;
        if n > 0 {
            let _ = heard.send((i, n, at));
        }
        after = v["next"].as_str().map(str::to_owned).or(after);
    }
}

/// Replies to `target`'s call as `writer`.
async fn reply(http: &reqwest::Client, base: &str, writer: &Member, target: &Member) -> Result<(), Error> {
    send_json(
        http.post(format!("{base}/api/posts/{}/replies", target.call)).bearer_auth(&writer.key),
        json!({"body": "I can help with that."}),
    )
    .await
    .map(|_| ())
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

fn print_reads(what: &str, r: &WrkRun) {
    println!(
        "{what}: {:.0} reads/s, p50 {:.2} ms, p99 {:.2} ms, {} non-2xx, {} errors",
        r.ok_per_second(),
        r.p50_ms,
        r.p99_ms,
        r.non_2xx,
        r.errors
    );
}

/// Polls waiting on the server now, from its `/metrics`.
async fn waiting(http: &reqwest::Client, base: &str) -> u64 {
    let Ok(r) = http.get(format!("{base}/metrics")).send().await else { return 0 };
    let text = r.text().await.unwrap_or_default();
    text.lines()
        .find_map(|l| l.strip_prefix("agentdir_inbox_polls_waiting "))
        .and_then(|v| v.trim().parse::<f64>().ok())
        .map_or(0, |v| v as u64)
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let o = options()?;
    let connections = (o.agents * 2 + 256).to_string();
    let server = start_server(
        None,
        &[
            ("AGENTDIR_MAX_CONNECTIONS", &connections),
            ("AGENTDIR_MAX_CONNECTIONS_PER_IP", &connections),
            ("AGENTDIR_MAX_WAITING", &connections),
        ],
    )?;
    let base = server.base.clone();
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(60))
        .pool_max_idle_per_host(o.agents * 2 + 64)
        .build()?;
    println!("load average at start: {}", load_average());

    // The agents (one more writes the replies of the latency part), eight registrations at once.
    let started = Instant::now();
    let mut members = Vec::with_capacity(o.agents + 1);
    for chunk in (0..=o.agents).collect::<Vec<_>>().chunks(8) {
        let made = join_all(chunk.iter().map(|&i| member(&http, &base, i)).collect()).await;
        for m in made {
            members.push(m?);
        }
    }
    let writer = members.pop().ok_or("no writer")?;
    println!(
        "{} agents registered with a call each in {:.1} s",
        members.len(),
        started.elapsed().as_secs_f64()
    );

    // 1. Reads alone.
    let card = format!("{base}/api/agents/{}", members[0].handle);
    let alone = wrk(&card, "", 16, o.seconds)?;
    print_reads("card reads, no poll waiting (16 connections)", &alone);

    // Every agent's poll waits.
    let (heard_tx, mut heard_rx) = mpsc::unbounded_channel();
    let stop = Arc::new(AtomicBool::new(false));
    let polls: Vec<_> = members
        .iter()
        .enumerate()
        .map(|(i, m)| {
            tokio::spawn(keep_polling(
                http.clone(),
                base.clone(),
                i,
                m.key.clone(),
                heard_tx.clone(),
                stop.clone(),
            ))
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(60);
    while waiting(&http, &base).await < o.agents as u64 {
        if Instant::now() > deadline {
            return Err(format!("only {} polls waiting after 60 s", waiting(&http, &base).await).into());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    println!("{} polls waiting", waiting(&http, &base).await);

    // 2. Latency: one reply at a time to a random agent; when its poll answers.
    let mut rng = fastrand_seed(7);
    let mut to_poll = Vec::with_capacity(o.writes);
    let mut round_trip = Vec::with_capacity(o.writes);
    for _ in 0..o.writes {
        let i = (rng() % members.len() as u64) as usize;
        let sent = Instant::now();
        reply(&http, &base, &writer, &members[i]).await?;
        round_trip.push(sent.elapsed().as_secs_f64() * 1000.0);
        loop {
            let (who, _, at) = tokio::time::timeout(Duration::from_secs(30), heard_rx.recv())
                .await
                .map_err(|_| "a poll did not answer within 30 s")?
                .ok_or("the polls stopped")?;
            if who == i {
                to_poll.push(at.duration_since(sent).as_secs_f64() * 1000.0);
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    to_poll.sort_by(f64::total_cmp);
    round_trip.sort_by(f64::total_cmp);
    println!(
        "write to waiting poll's answer, {} writes with {} polls waiting: p50 {:.2} ms, p90 {:.2} ms, p99 {:.2} ms, max {:.2} ms (the reply's own round trip: p50 {:.2} ms, p99 {:.2} ms)",
        o.writes,
        o.agents,
        percentile(&to_poll, 50.0),
        percentile(&to_poll, 90.0),
        percentile(&to_poll, 99.0),
        to_poll.last().copied().unwrap_or(f64::NAN),
        percentile(&round_trip, 50.0),
        percentile(&round_trip, 99.0),
    );

    // 3. Delivery: many writers at once; events that reach waiting polls per second.
    let delivered = Arc::new(AtomicU64::new(0));
    let counting = {
        let delivered = delivered.clone();
        tokio::spawn(async move {
            while let Some((_, n, _)) = heard_rx.recv().await {
                delivered.fetch_add(n, Ordering::Relaxed);
            }
        })
    };
    // Writers are agents too (the first ones): a reply to one's own call tells nobody, so each
    // writer replies to others only.
    let written = Arc::new(AtomicU64::new(0));
    let before = delivered.load(Ordering::Relaxed);
    let began = Instant::now();
    let writing_until = Instant::now() + Duration::from_secs(o.seconds);
    let shared = Arc::new(members.clone());
    let writer_tasks: Vec<_> = (0..o.writers.min(members.len()))
        .map(|w| {
            let (http, base, shared, written) = (http.clone(), base.clone(), shared.clone(), written.clone());
            tokio::spawn(async move {
                let mut rng = fastrand_seed(w as u64 + 100);
                while Instant::now() < writing_until {
                    let mut i = (rng() % shared.len() as u64) as usize;
                    if i == w {
                        i = (i + 1) % shared.len();
                    }
                    if reply(&http, &base, &shared[w], &shared[i]).await.is_ok() {
                        written.fetch_add(1, Ordering::Relaxed);
                    }
                }
            })
        })
        .collect();
    for t in writer_tasks {
        t.await?;
    }
    let writes = written.load(Ordering::Relaxed);
    // The last writes' events are on their way: give the polls a moment to answer them.
    let settle = Instant::now() + Duration::from_secs(5);
    while delivered.load(Ordering::Relaxed) - before < writes && Instant::now() < settle {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let seconds = began.elapsed().as_secs_f64();
    let events = delivered.load(Ordering::Relaxed) - before;
    println!(
        "delivery, {} writers for {} s with {} polls waiting: {} replies written ({:.0}/s), {} events delivered to waiting polls ({:.0}/s over {:.1} s)",
        o.writers,
        o.seconds,
        o.agents,
        writes,
        writes as f64 / o.seconds as f64,
        events,
        events as f64 / seconds,
        seconds
    );

    // 4. Reads beside the waiting polls.
    while waiting(&http, &base).await < o.agents as u64 {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let beside = wrk(&card, "", 16, o.seconds)?;
    print_reads(&format!("card reads, {} polls waiting (16 connections)", o.agents), &beside);
    println!("load average at the end: {}", load_average());

    stop.store(true, Ordering::Relaxed);
    for p in polls {
        p.abort();
    }
    counting.abort();
    Ok(())
}

/// Runs every future at once on this task and returns their outputs in order.
async fn join_all<F: std::future::Future>(futures: Vec<F>) -> Vec<F::Output> {
    let mut pinned: Vec<_> = futures.into_iter().map(Box::pin).map(Some).collect();
    let mut out: Vec<Option<F::Output>> = (0..pinned.len()).map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut done = true;
        for (slot, fut) in out.iter_mut().zip(pinned.iter_mut()) {
            if let Some(f) = fut {
                match f.as_mut().poll(cx) {
                    std::task::Poll::Ready(v) => {
                        *slot = Some(v);
                        *fut = None;
                    }
                    std::task::Poll::Pending => done = false,
                }
            }
        }
        if done { std::task::Poll::Ready(()) } else { std::task::Poll::Pending }
    })
    .await;
    out.into_iter().flatten().collect()
}

/// A small deterministic generator (xorshift), so runs choose the same agents.
fn fastrand_seed(seed: u64) -> impl FnMut() -> u64 {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    }
}
