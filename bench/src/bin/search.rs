//! Search benchmark of the core, in one process and one run: generates a realistic corpus
//! (agents in English and Chinese, calls), loads it into a fresh data dir through the core's
//! store functions, builds the search index the way the server does at start, then measures
//! server-side search latency — `App::search_agents` / `search_calls`, awaited exactly as the
//! REST handlers await them, SQLite hydration of the page included — for
//! a fixed query set at 1 and 16 concurrent clients, with the index's result cache off and on.
//! The same queries then run against an SQLite FTS5 baseline over the same database (see
//! `search/fts.rs`), so the tantivy/FTS5 ratio is measured on one machine. Last, the CPU of one
//! search is split by phase (change-log check, index query, hydration; `search/breakdown.rs`).
//!
//! ```text
//! cargo run --release -p agentdir-bench --bin search -- [OPTIONS]
//!   --agents N       agents in the corpus (default 100000)
//!   --calls N        calls in the corpus (default 1000000)
//!   --dir PATH       data dir; reused when a previous run loaded the same corpus sizes into it
//!                    (default: a fresh temporary dir, removed at the end)
//!   --rounds R       passes over the query set at 1 client (default 3)
//!   --rounds-16 R    passes over the query set per client at 16 clients (default 1)
//!   --only WHAT      agents | calls: measure only one target
//!   --no-fts         skip the FTS5 baseline
//!   --no-item-cache  no memory for list items (the server keeps a page's agents and calls
//!                    in its view cache, 64 MiB by default): every page is read from SQLite
//!   --fts-plans      print SQLite's query plan of every FTS5 statement used
//!   --queries        print the query set and exit
//!   --meaning        compute every agent's and call's vector first (timed), then measure the
//!                    agent and call queries with search by meaning on beside words only
//!                    (search/meaning.rs)
//!   --synthetic-vectors K
//!                    with --meaning: K profiles (and K calls) read by the model, every agent
//!                    (call) a noisy copy of one of them (search/synthetic.rs), instead of
//!                    reading every profile and call
//!   --quick-rows N   with --meaning: only the row where the quick encoder reads every need,
//!                    N times over 4,800 distinct needs (no other row, no breakdown): for
//!                    comparing two builds run in turn
//! ```

// A binary's root looks for modules beside it; these live in a folder named after the binary.
#[path = "search/breakdown.rs"]
mod breakdown;
#[path = "search/corpus.rs"]
mod corpus;
#[path = "search/fts.rs"]
mod fts;
#[path = "search/meaning.rs"]
mod meaning;
#[path = "search/measure.rs"]
mod measure;
#[path = "search/queries.rs"]
mod queries;
#[path = "search/synthetic.rs"]
mod synthetic;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use agentdir::app::Start;
use agentdir::{App, Settings};
use agentdir_search_index::{AgentQuery, CallQuery, DEFAULT_CACHE_ENTRIES, IndexError, Page};

use measure::{Run, load_average, pct, status_mb};
use queries::{CLASSES, Target};

type Error = Box<dyn std::error::Error + Send + Sync>;

/// Written into the data dir once the corpus is loaded; a later run with `--dir` and the same
/// sizes reuses the data instead of loading it again.
const MARKER: &str = "bench-search-corpus";
/// Bump when the generator changes, so an old corpus is not mistaken for the current one.
const CORPUS_VERSION: u32 = 1;

struct Options {
    agents: u64,
    calls: u64,
    dir: Option<PathBuf>,
    rounds: usize,
    rounds16: usize,
    only: Option<Target>,
    fts: bool,
    plans: bool,
    list: bool,
    meaning: bool,
    /// Profiles read by the model for synthetic vectors (`--synthetic-vectors`).
    synthetic: Option<usize>,
    /// Memory for rendered views and list items, as `agentdir serve` has by default.
    view_cache_bytes: usize,
    /// Only the quick encoder's row, this many times (`--quick-rows`).
    quick_rows: Option<usize>,
}

fn options() -> Result<Options, Error> {
    let mut o = Options {
        agents: 100_000,
        calls: 1_000_000,
        dir: None,
        rounds: 3,
        rounds16: 1,
        only: None,
        fts: true,
        plans: false,
        list: false,
        meaning: false,
        synthetic: None,
        view_cache_bytes: 64 << 20,
        quick_rows: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--agents" => o.agents = value()?.parse()?,
            "--calls" => o.calls = value()?.parse()?,
            "--dir" => o.dir = Some(value()?.into()),
            "--rounds" => o.rounds = value()?.parse()?,
            "--rounds-16" => o.rounds16 = value()?.parse()?,
            "--only" => {
                o.only = Some(match value()?.as_str() {
                    "agents" => Target::Agents,
                    "calls" => Target::Calls,
                    other => return Err(format!("--only takes agents or calls, not {other}").into()),
                })
            }
            "--no-fts" => o.fts = false,
            "--no-item-cache" => o.view_cache_bytes = 0,
            "--fts-plans" => o.plans = true,
            "--queries" => o.list = true,
            "--meaning" => o.meaning = true,
            "--synthetic-vectors" => o.synthetic = Some(value()?.parse()?),
            "--quick-rows" => o.quick_rows = Some(value()?.parse()?),
            "-h" | "--help" => {
                println!("see the header of bench/src/bin/search.rs for the options");
                std::process::exit(0);
            }
            other => return Err(format!("unknown option {other}").into()),
        }
    }
    if o.agents == 0 || o.rounds == 0 || o.rounds16 == 0 || o.quick_rows == Some(0) {
        return Err("--agents, --rounds, --rounds-16 and --quick-rows must be at least 1".into());
    }
    if o.quick_rows.is_some() && !o.meaning {
        return Err("--quick-rows measures search by meaning: give --meaning too".into());
    }
    Ok(o)
}

fn main() {
    if let Err(e) = run() {
        eprintln!("search benchmark failed: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), Error> {
    let o = options()?;
    measure::start_sampler();
    if o.list {
        for target in [Target::Agents, Target::Calls] {
            for q in queries::fixed(target) {
                println!("{:<24} {}", CLASSES[q.class], q.describe());
            }
        }
        return Ok(());
    }
    let temporary = o.dir.is_none();
    let dir = o.dir.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!("agentdir-search-bench-{}", std::process::id()))
    });
    let result = bench(&o, &dir);
    if temporary {
        let _ = std::fs::remove_dir_all(&dir);
    }
    result
}

fn bench(o: &Options, dir: &Path) -> Result<(), Error> {
    println!("== agentdir search benchmark ==");
    println!("command: {}", std::env::args().collect::<Vec<_>>().join(" "));
    println!("machine: {}", machine());
    println!(
        "load average at start: {}",
        std::fs::read_to_string("/proc/loadavg").unwrap_or_default().trim()
    );
    println!("data dir: {}", dir.display());

    // 1. The corpus, through the core's store functions.
    let now = agentdir::time::now_ms();
    let marker = format!("version={CORPUS_VERSION} agents={} calls={}", o.agents, o.calls);
    let reuse = std::fs::read_to_string(dir.join(MARKER)).is_ok_and(|m| m.trim() == marker);
    if reuse {
        println!("\ncorpus: reusing the one loaded earlier into this dir ({marker})");
    } else {
        if dir.join(agentdir::store::DB_FILE).exists() {
            return Err(
                format!("{} holds another database; give an empty or new --dir", dir.display()).into()
            );
        }
        let pool = agentdir::store::open(dir, 2).map_err(|e| e.to_string())?;
        let vocab = corpus::Vocab::new();
        let loaded = corpus::load(&pool, &vocab, o.agents, o.calls, now)?;
        std::fs::write(dir.join(MARKER), &marker)?;
        println!(
            "\nload: {} agents, {} calls, {} replies in {:.1} s through store::agents::insert, offerings::replace, \
             proofs::upsert, calls::insert, replies::insert ({} rows per transaction)",
            loaded.agents,
            loaded.calls,
            loaded.replies,
            loaded.seconds,
            corpus::BATCH
        );
    }
    let db = dir.join(agentdir::store::DB_FILE);
    println!(
        "SQLite database: {:.0} MB (+ WAL {:.0} MB)",
        file_mb(&db),
        file_mb(&dir.join("agentdir.sqlite3-wal"))
    );
    println!("peak RSS after loading: {:.0} MB", status_mb("VmHWM:"));

    if let (true, Some(bases)) = (o.meaning, o.synthetic) {
        if o.only != Some(Target::Calls) {
            synthetic::write(dir, bases)?;
        }
        if o.only != Some(Target::Agents) {
            synthetic::write_calls(dir, bases)?;
        }
    }

    // 2. The index, built the way the server builds it at start.
    let started = Instant::now();
    let app = App::open(settings(dir, o.view_cache_bytes), Start::Primary).map_err(|e| e.to_string())?;
    let opened = started.elapsed().as_secs_f64();
    let index_dir = dir.join("search-index");
    println!(
        "\nindex: App::open (migrations, jieba dictionary, full rebuild from SQLite when the index is new) \
         took {opened:.1} s{}",
        if reuse { " (reused dir: the index is rebuilt only if it was missing or stale)" } else { "" }
    );
    println!(
        "index size on disk: {:.0} MB (agents {:.0} MB, calls {:.0} MB)",
        dir_mb(&index_dir),
        dir_mb(&index_dir.join("agents")),
        dir_mb(&index_dir.join("calls"))
    );
    let counts =
        agentdir::store::stats::counts(&*agentdir::store::open(dir, 1).map_err(|e| e.to_string())?.get()?)?;
    println!(
        "visible: {} agents ({} verified, {} owner-claimed), {} calls, {} replies",
        counts.agents, counts.agents_verified, counts.agents_owner_claimed, counts.calls, counts.replies
    );
    println!(
        "peak RSS after the index build: {:.0} MB (peak anonymous memory so far {:.0} MB)",
        status_mb("VmHWM:"),
        measure::peak_anon_mb()
    );

    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    if o.meaning {
        meaning::fill(&app, &runtime, o.only)?;
    }

    // 4 (built before measuring, so both engines are measured on the same database state).
    let baseline = if o.fts {
        let pool = agentdir::store::open(dir, 16).map_err(|e| e.to_string())?;
        let conn = pool.get()?;
        if fts::exists(&conn)? && reuse {
            println!(
                "\nFTS5 baseline: reusing the tables built earlier ({:.0} MB)",
                fts::size(&conn)? as f64 / 1e6
            );
        } else {
            drop(conn);
            let built = fts::build(&pool)?;
            println!("\nFTS5 baseline build: {:.1} s, {:.0} MB", built.seconds, built.bytes as f64 / 1e6);
        }
        let baseline = fts::Baseline::new(pool);
        if o.plans {
            println!("\nFTS5 query plans:");
            for target in [Target::Agents, Target::Calls] {
                fts::print_plans(&baseline, &queries::fixed(target))?;
            }
        }
        Some(baseline)
    } else {
        None
    };

    // 3 and 4: the measurements.
    let mut reports = Vec::new();
    for target in [Target::Agents, Target::Calls] {
        if o.only.is_some_and(|t| t != target) {
            continue;
        }
        let qs = Arc::new(queries::fixed(target));
        if let Some(rows) = o.quick_rows {
            runtime.block_on(meaning::measure_quick(&app, &qs, rows, target));
            continue;
        }
        reports.extend(runtime.block_on(measure_target(&app, baseline.as_ref(), &qs, target, o)));
        if o.meaning {
            runtime.block_on(meaning::measure(&app, &qs, o.rounds16, target));
        }
    }
    if o.quick_rows.is_some() {
        return Ok(());
    }

    // Where one search's CPU goes, phase by phase, on one thread.
    let mut breakdowns = Vec::new();
    for target in [Target::Agents, Target::Calls] {
        if o.only.is_some_and(|t| t != target) {
            continue;
        }
        app.index().set_result_cache_capacity(0);
        let qs = queries::fixed(target);
        breakdowns.push((target, breakdown::measure(&app, &runtime, &qs, o.rounds, index_page)?));
        app.index().set_result_cache_capacity(DEFAULT_CACHE_ENTRIES);
    }

    println!("\n== results ==");
    println!(
        "latency in ms, measured by the client task around the search (queueing for a blocking thread included)"
    );
    println!("ratio = FTS5 / tantivy (cache off): above 1 means tantivy is faster");
    for r in &reports {
        print_table(r);
    }
    println!("\n-- CPU per search by phase, one thread, result cache off (ms) --");
    for (target, b) in &breakdowns {
        let name = target.name();
        println!("{name:<7} {b}");
    }
    println!(
        "\npeak RSS of the whole run (VmHWM): {:.0} MB; resident now {:.0} MB, of which anonymous {:.0} MB",
        status_mb("VmHWM:"),
        status_mb("VmRSS:"),
        status_mb("RssAnon:")
    );
    println!(
        "peak anonymous memory (sampled every 50 ms): {:.0} MB; the rest of RSS is the files \
         the process maps (the index's, the model's, the binary)",
        measure::peak_anon_mb()
    );
    println!(
        "proportional set size now (each page once): {:.0} MB, of which the mapped files {:.0} MB",
        measure::rollup_mb("Pss:"),
        measure::rollup_mb("Pss_File:")
    );
    println!(
        "load average at the end: {}",
        std::fs::read_to_string("/proc/loadavg").unwrap_or_default().trim()
    );
    Ok(())
}

/// As `agentdir serve` would run over `dir`, with the given view cache.
fn settings(dir: &Path, view_cache_bytes: usize) -> Settings {
    let settings =
        agentdir_bench::serve_settings(dir, "http://127.0.0.1:8080").expect("serve's defaults parse");
    Settings { view_cache_bytes, ..settings }
}

/// One target at one concurrency: the three engines' runs.
struct Report {
    target: Target,
    clients: usize,
    tantivy: Run,
    fts: Option<Run>,
    cached: Run,
    /// The index's own search without the core around it (1 client only): what hydration costs.
    index_only: Option<Run>,
    loads: [String; 3],
}

async fn tantivy(app: &App, qs: &Arc<Vec<queries::Query>>, clients: usize, rounds: usize) -> Run {
    let app = app.clone();
    measure::run(qs, clients, rounds, move |q| {
        let app = app.clone();
        async move {
            match q.target {
                Some(Target::Calls) => app.search_calls(q.call_search()).await.map(|l| l.total),
                _ => app.search_agents(q.agent_search()).await.map(|l| l.total),
            }
        }
    })
    .await
}

/// The index query alone, as `search_agents` / `search_calls` would issue it, without the
/// change-log check and the SQLite hydration of the page.
fn index_page(app: &App, q: &queries::Query, limit: usize) -> Result<Page, IndexError> {
    match q.target {
        Some(Target::Calls) => app.index().search_calls(&CallQuery {
            text: Some(q.text),
            kind: q.kind.map(|k| k.as_str()),
            tag: q.tag,
            author_handle: None,
            limit,
            offset: 0,
        }),
        _ => {
            let window = agentdir::domain::agent::NEW_WINDOW_DAYS * agentdir::time::DAY;
            let handle = agentdir::domain::agent::as_handle(q.text);
            app.index().search_agents(&AgentQuery {
                text: Some(q.text),
                handle: handle.as_deref(),
                capability: q.capability,
                language: q.language,
                mailbox_verified: q.verified,
                live: None,
                min_level: q.min_level.map(u64::from),
                joined_since: (q.new == Some(true)).then(|| agentdir::time::now_ms() - window),
                limit,
                offset: 0,
            })
        }
    }
}

async fn index_only(app: &App, qs: &Arc<Vec<queries::Query>>, rounds: usize) -> Run {
    let app = app.clone();
    measure::run(qs, 1, rounds, move |q| {
        let app = app.clone();
        async move {
            match tokio::task::spawn_blocking(move || index_page(&app, &q, queries::LIMIT as usize)).await {
                Ok(Ok(page)) => Ok(page.total),
                Ok(Err(e)) => Err(e.to_string()),
                Err(e) => Err(e.to_string()),
            }
        }
    })
    .await
}

async fn baseline(fts: &fts::Baseline, qs: &Arc<Vec<queries::Query>>, clients: usize, rounds: usize) -> Run {
    let fts = fts.clone();
    measure::run(qs, clients, rounds, move |q| {
        let fts = fts.clone();
        async move {
            match tokio::task::spawn_blocking(move || fts.search(&q)).await {
                Ok(r) => r,
                Err(e) => Err(e.to_string().into()),
            }
        }
    })
    .await
}

async fn measure_target(
    app: &App,
    fts: Option<&fts::Baseline>,
    qs: &Arc<Vec<queries::Query>>,
    target: Target,
    o: &Options,
) -> Vec<Report> {
    let name = target.name();
    // Warm-up: one pass of each engine, so both read from a warm page cache.
    app.index().set_result_cache_capacity(0);
    tantivy(app, qs, 1, 1).await;
    if let Some(f) = fts {
        baseline(f, qs, 1, 1).await;
    }
    let mut out = Vec::new();
    for clients in [1, 16] {
        let rounds = if clients == 1 { o.rounds } else { o.rounds16 };
        let mut loads: [String; 3] = Default::default();
        app.index().set_result_cache_capacity(0);
        let off = tantivy(app, qs, clients, rounds).await;
        loads[0] = load_average();
        announce(name, "tantivy, result cache off", clients, &off, &loads[0]);
        let bare = if clients == 1 {
            let run = index_only(app, qs, rounds).await;
            announce(name, "index query only, result cache off", clients, &run, &load_average());
            Some(run)
        } else {
            None
        };
        let base = match fts {
            Some(f) => {
                let run = baseline(f, qs, clients, rounds).await;
                loads[1] = load_average();
                announce(name, "SQLite FTS5", clients, &run, &loads[1]);
                Some(run)
            }
            None => None,
        };
        app.index().set_result_cache_capacity(DEFAULT_CACHE_ENTRIES);
        // Fills the cache once: the figures are the steady state of a repeated query set.
        tantivy(app, qs, 1, 1).await;
        let on = tantivy(app, qs, clients, rounds).await;
        loads[2] = load_average();
        announce(name, "tantivy, result cache on", clients, &on, &loads[2]);
        out.push(Report { target, clients, tantivy: off, fts: base, cached: on, index_only: bare, loads });
    }
    app.index().set_result_cache_capacity(DEFAULT_CACHE_ENTRIES);
    out
}

fn announce(target: &str, engine: &str, clients: usize, r: &Run, load: &str) {
    let errors = if r.errors > 0 { format!(", {} ERRORS", r.errors) } else { String::new() };
    println!(
        "[{target}, {engine}, {clients} client{}] {} queries in {:.1} s: {:.0} q/s, CPU {:.2} ms/query, \
         load average {load}{errors}",
        if clients == 1 { "" } else { "s" },
        r.queries(),
        r.wall.as_secs_f64(),
        r.throughput(),
        r.cpu_per_query_ms(),
    );
}

fn print_table(r: &Report) {
    let prefix = r.target.name();
    println!(
        "\n-- {prefix}, {} client{} (load average after each engine's run: tantivy {}, FTS5 {}, cached {}) --",
        r.clients,
        if r.clients == 1 { "" } else { "s" },
        r.loads[0],
        if r.fts.is_some() { r.loads[1].as_str() } else { "-" },
        r.loads[2]
    );
    println!(
        "{:<24} {:>5} | {:>15} | {:>15} | {:>13} | {:>15} | {:>15} | {:>15}",
        "class",
        "n",
        "tantivy p50/p99",
        "FTS5 p50/p99",
        "ratio p50/p99",
        "cached p50/p99",
        "index p50/p99",
        "mean hits t/F"
    );
    let row = |label: &str,
               n: usize,
               t: &[Duration],
               f: Option<&[Duration]>,
               c: &[Duration],
               i: Option<&[Duration]>,
               hits: String| {
        let (t50, t99, c50, c99) = (pct(t, 0.5), pct(t, 0.99), pct(c, 0.5), pct(c, 0.99));
        let bare = i.map_or("-".into(), |i| format!("{:.2} / {:.2}", pct(i, 0.5), pct(i, 0.99)));
        let (fts, ratio) = match f {
            Some(f) => {
                let (f50, f99) = (pct(f, 0.5), pct(f, 0.99));
                (format!("{f50:.2} / {f99:.2}"), format!("{:.1}x / {:.1}x", f50 / t50, f99 / t99))
            }
            None => ("-".into(), "-".into()),
        };
        println!(
            "{label:<24} {n:>5} | {:>15} | {fts:>15} | {ratio:>13} | {:>15} | {bare:>15} | {hits:>15}",
            format!("{t50:.2} / {t99:.2}"),
            format!("{c50:.2} / {c99:.2}")
        );
    };
    for (i, class) in CLASSES.iter().enumerate() {
        let (t, t_hits) = &r.tantivy.classes[i];
        if t.is_empty() {
            continue;
        }
        let f = r.fts.as_ref().map(|f| &f.classes[i]);
        let hits =
            format!("{:.0} / {}", mean(t_hits), f.map_or("-".into(), |(_, h)| format!("{:.0}", mean(h))));
        let bare = r.index_only.as_ref().map(|b| b.classes[i].0.as_slice());
        row(class, t.len(), t, f.map(|(l, _)| l.as_slice()), &r.cached.classes[i].0, bare, hits);
    }
    let all = r.tantivy.all(prefix);
    let f_all = r.fts.as_ref().map(|f| f.all(prefix));
    let bare_all = r.index_only.as_ref().map(|b| b.all(prefix));
    row(
        &format!("ALL {prefix}"),
        all.len(),
        &all,
        f_all.as_deref(),
        &r.cached.all(prefix),
        bare_all.as_deref(),
        String::new(),
    );
    println!(
        "{:<24} {:>5} | {:>15} | {:>15} | {:>13} | {:>15} | {:>15} |",
        "throughput q/s",
        "",
        format!("{:.0}", r.tantivy.throughput()),
        r.fts.as_ref().map_or("-".into(), |f| format!("{:.0}", f.throughput())),
        r.fts.as_ref().map_or("-".into(), |f| format!("{:.2}x", r.tantivy.throughput() / f.throughput())),
        format!("{:.0}", r.cached.throughput()),
        r.index_only.as_ref().map_or("-".into(), |b| format!("{:.0}", b.throughput())),
    );
    println!(
        "{:<24} {:>5} | {:>15} | {:>15} | {:>13} | {:>15} | {:>15} |",
        "CPU ms per query",
        "",
        format!("{:.2}", r.tantivy.cpu_per_query_ms()),
        r.fts.as_ref().map_or("-".into(), |f| format!("{:.2}", f.cpu_per_query_ms())),
        r.fts
            .as_ref()
            .map_or("-".into(), |f| format!("{:.1}x", f.cpu_per_query_ms() / r.tantivy.cpu_per_query_ms())),
        format!("{:.2}", r.cached.cpu_per_query_ms()),
        r.index_only.as_ref().map_or("-".into(), |b| format!("{:.2}", b.cpu_per_query_ms())),
    );
}

fn mean(v: &[u64]) -> f64 {
    v.iter().sum::<u64>() as f64 / v.len().max(1) as f64
}

fn machine() -> String {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map_or("unknown CPU", |(_, m)| m.trim());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let mem = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines().next().and_then(|l| l.split_whitespace().nth(1)).and_then(|kb| kb.parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0 / 1024.0);
    format!("{model}, {cores} cores available, {mem:.0} GB RAM")
}

fn file_mb(path: &Path) -> f64 {
    std::fs::metadata(path).map_or(0.0, |m| m.len() as f64 / 1e6)
}

fn dir_mb(path: &Path) -> f64 {
    fn size(path: &Path) -> u64 {
        std::fs::read_dir(path).map_or(0, |entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| match e.metadata() {
                    Ok(m) if m.is_dir() => size(&e.path()),
                    Ok(m) => m.len(),
                    Err(_) => 0,
                })
                .sum()
        })
    }
    size(path) as f64 / 1e6
}
