//! The public change feed: how fast a mirror reads all of it, and what keeping it costs a write.
//!
//! 1. **Full sync.** A release server over a directory loaded by the search benchmark (100k
//!    agents / 1M calls by default) is read from the beginning, `GET /api/changes?limit=1000`
//!    page after page until `has_more` is false, by one client as a mirror would: pages/s,
//!    entries/s and MB/s, median of the rounds.
//! 2. **Write cost.** The same calls and replies are written through the store, in transactions of
//!    `--batch` writes (what the writer commits at once under load), into two fresh databases side
//!    by side: one as migrated, one with the change-log triggers dropped. The difference per write
//!    is what maintaining the log costs (the trigger that records the call, and the fan-out to the
//!    author's card). Rounds alternate between the two.
//!
//! ```text
//! cargo run --release -p agentdir-bench --bin search -- --dir /tmp/corpus --no-fts  # once: the corpus
//! cargo run --release -p agentdir-bench --bin feed -- --dir /tmp/corpus [OPTIONS]
//!   --dir DIR       a data dir loaded by the search benchmark (required for the full sync)
//!   --rounds R      rounds of each part (default 3)
//!   --writes N      calls (and as many replies) per write-cost round (default 20000)
//!   --batch B       writes per transaction in the write-cost part (default 64)
//! ```

#[allow(dead_code)]
#[path = "search/corpus.rs"]
mod corpus;

use std::path::PathBuf;
use std::time::Instant;

use agentdir::config::ServeArgs;
use agentdir::store;
use agentdir_bench::{Error, http_client, load_average, median, start_server};
use serde_json::Value;

struct Options {
    dir: Option<PathBuf>,
    rounds: usize,
    writes: u64,
    batch: u64,
}

fn options() -> Result<Options, Error> {
    let mut o = Options { dir: None, rounds: 3, writes: 20_000, batch: 64 };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--dir" => o.dir = Some(value()?.into()),
            "--rounds" => o.rounds = value()?.parse()?,
            "--writes" => o.writes = value()?.parse()?,
            "--batch" => o.batch = value()?.parse()?,
            "-h" | "--help" => {
                println!("see the header of bench/src/bin/feed.rs for the options");
                std::process::exit(0);
            }
            other => return Err(format!("unknown option {other}").into()),
        }
    }
    if o.rounds == 0 || o.writes == 0 || o.batch == 0 {
        return Err("--rounds, --writes and --batch must be at least 1".into());
    }
    Ok(o)
}

struct Sync {
    pages: u64,
    entries: u64,
    bytes: u64,
    seconds: f64,
}

/// Reads the whole feed from the beginning, one page after another.
async fn full_sync(base: &str) -> Result<Sync, Error> {
    let http = http_client()?;
    let mut sync = Sync { pages: 0, entries: 0, bytes: 0, seconds: 0.0 };
    let mut after = String::new();
    let started = Instant::now();
    loop {
        let mut url = format!("{base}/api/changes?limit=1000");
        if !after.is_empty() {
            url.push_str("&after=");
            url.push_str(&after);
        }
        let response = http.get(&url).send().await?;
        if !response.status().is_success() {
            return Err(format!("{url}: {}", response.status()).into());
        }
        let body = response.bytes().await?;
        let page: Value = serde_json::from_slice(&body)?;
        sync.pages += 1;
        sync.bytes += body.len() as u64;
        sync.entries += page["changes"].as_array().map_or(0, Vec::len) as u64;
        after = page["next"].as_str().ok_or("a page without next")?.to_owned();
        if page["has_more"] != Value::Bool(true) {
            break;
        }
    }
    sync.seconds = started.elapsed().as_secs_f64();
    Ok(sync)
}

/// Microseconds per call and per reply written in transactions of `batch`, with or without
/// the change-log triggers.
fn write_round(with_log: bool, o: &Options) -> Result<(f64, f64), Error> {
    let dir = std::env::temp_dir().join(format!("agentdir-feed-bench-{}-{with_log}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let (mut conn, _readers) = store::open_server(&dir, ServeArgs::from_environment()?.read_pool())?;
    if !with_log {
        // Benchmark instrumentation, not product SQL: the baseline is the schema without the
        // triggers that record the change log.
        let triggers: Vec<String> = conn
            .prepare("SELECT name FROM sqlite_master WHERE type = 'trigger' AND sql LIKE '%touched%'")?
            .query_map([], |r| r.get(0))?
            .collect::<Result<_, _>>()?;
        for t in &triggers {
            conn.execute_batch(&format!("DROP TRIGGER \"{t}\""))?;
        }
    }
    let vocab = corpus::Vocab::new();
    let now = agentdir::time::now_ms();
    const AGENTS: u64 = 200;
    store::write(&mut conn, |tx| {
        for key in 1..=AGENTS {
            store::agents::insert(tx, &corpus::agent(&vocab, key, now).row)?;
        }
        Ok(())
    })?;
    let calls: Vec<corpus::Call> =
        (1..=o.writes).map(|k| corpus::call(&vocab, k, o.writes, AGENTS, now)).collect();
    let started = Instant::now();
    let mut seqs = Vec::with_capacity(calls.len());
    for chunk in calls.chunks(o.batch as usize) {
        store::write(&mut conn, |tx| {
            for c in chunk {
                seqs.push(store::calls::insert(tx, &c.row())?);
            }
            Ok(())
        })?;
    }
    let per_call = started.elapsed().as_secs_f64() * 1e6 / calls.len() as f64;
    let started = Instant::now();
    for (n, chunk) in seqs.chunks(o.batch as usize).enumerate() {
        store::write(&mut conn, |tx| {
            for (i, seq) in chunk.iter().enumerate() {
                let id = format!("rep_bench{n}x{i}");
                let author = 1 + (*seq % AGENTS as i64);
                store::replies::insert(tx, &id, *seq, author, "Happy to help with this.", now)?;
            }
            Ok(())
        })?;
    }
    let per_reply = started.elapsed().as_secs_f64() * 1e6 / seqs.len() as f64;
    drop(conn);
    let _ = std::fs::remove_dir_all(&dir);
    Ok((per_call, per_reply))
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Error> {
    let o = options()?;
    println!("== agentdir change feed benchmark ==");
    println!("load average at start: {}", load_average());

    if let Some(dir) = &o.dir {
        let server = start_server(Some(dir), &[])?;
        let mut rounds = Vec::new();
        for round in 1..=o.rounds {
            let s = full_sync(&server.base).await?;
            println!(
                "full sync round {round}: {} pages, {} entries, {:.1} MB in {:.2} s",
                s.pages,
                s.entries,
                s.bytes as f64 / 1e6,
                s.seconds
            );
            rounds.push(s);
        }
        let per_s =
            |f: &dyn Fn(&Sync) -> f64| median(&rounds.iter().map(|s| f(s) / s.seconds).collect::<Vec<_>>());
        println!(
            "full sync, median of {}: {:.0} pages/s, {:.0} entries/s, {:.1} MB/s ({:.2} s for {} entries)",
            o.rounds,
            per_s(&|s| s.pages as f64),
            per_s(&|s| s.entries as f64),
            per_s(&|s| s.bytes as f64 / 1e6),
            median(&rounds.iter().map(|s| s.seconds).collect::<Vec<_>>()),
            rounds[0].entries
        );
    } else {
        println!("full sync skipped: pass --dir with a corpus loaded by the search benchmark");
    }

    let (mut with, mut without) = (Vec::new(), Vec::new());
    for round in 1..=o.rounds {
        let w = write_round(true, &o)?;
        let b = write_round(false, &o)?;
        println!(
            "write round {round}: with the log {:.1} µs/call {:.1} µs/reply; without {:.1} µs/call {:.1} µs/reply",
            w.0, w.1, b.0, b.1
        );
        with.push(w);
        without.push(b);
    }
    let med = |v: &[(f64, f64)], f: fn(&(f64, f64)) -> f64| median(&v.iter().map(f).collect::<Vec<_>>());
    let (wc, wr) = (med(&with, |x| x.0), med(&with, |x| x.1));
    let (bc, br) = (med(&without, |x| x.0), med(&without, |x| x.1));
    println!(
        "write cost, median of {} ({} writes per round, {} per transaction): call {:.1} vs {:.1} µs (+{:.1} µs, {:+.0} %), reply {:.1} vs {:.1} µs (+{:.1} µs, {:+.0} %)",
        o.rounds,
        o.writes,
        o.batch,
        wc,
        bc,
        wc - bc,
        (wc / bc - 1.0) * 100.0,
        wr,
        br,
        wr - br,
        (wr / br - 1.0) * 100.0
    );
    println!("load average at the end: {}", load_average());
    Ok(())
}
