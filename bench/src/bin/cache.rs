//! Reads from many threads at once, in one process: where the read path serialises. Each mode
//! runs at 1, 2, 4, 8 and 16 threads (each thread loops for `--seconds`, all start together) and
//! reports operations per second, the median of `--rounds` runs:
//!
//! - `cache-hot`: `Cache::get` of one document (every thread reads the same card, as `wrk` does);
//! - `cache-spread`: `Cache::get` over 10,000 documents (each thread its own walk through them);
//! - `core`: `App::cached_document`, what REST and MCP ask first: the check for other processes'
//!   commits, then the cache;
//! - `card`: `GET /api/agents/{handle}` through the whole application as served (middleware,
//!   router, handler), without sockets;
//! - `mcp`: MCP `tools/call get_agent` for the same card, the same way;
//! - `mutex-lru-*`, `moka-*`, `quick_cache-*`: the candidates for the view cache by themselves,
//!   filled with the same 10,000 documents and weighted by their bytes, read as `cache-hot`
//!   (`-hot`) and `cache-spread` (`-spread`) read: a mutex around an `lru::LruCache` (what the
//!   view cache was), `moka::sync::Cache`, `quick_cache::sync::Cache` (what it is, with
//!   `sharded-lock`).
//!
//! ```text
//! cargo run --release -p agentdir-bench --bin cache [-- OPTIONS]
//!   --seconds S     seconds per run (default 1)
//!   --rounds R      runs per mode and thread count; the median is reported (default 3)
//!   --threads LIST  thread counts (default 1,2,4,8,16)
//!   --only MODE     one mode (cache-hot, cache-spread, core, card, mcp, or a candidate's)
//! ```
//!
//! On a machine with fewer cores than threads the extra threads share the cores: the figures
//! then show what waiting for one another costs (a lock held by a thread that lost its core
//! stops every thread that needs it), not how far the path scales; run it on a many-core machine
//! for that.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::time::{Duration, Instant};

use agentdir::app::Start;
use agentdir::config::ServeArgs;
use agentdir::derived::cache::{Cache, Shelved};
use agentdir::derived::documents::{Document, DocumentKey};
use agentdir::derived::rendered::Rendered;
use agentdir::http::ops::MetricsOn;
use agentdir::store::positions::ChangeSeq;
use agentdir::{App, Settings};
use agentdir_bench::{Error, load_average, median};
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{Request, StatusCode, header};
use http_body_util::BodyExt;
use serde_json::json;
use tower::ServiceExt;

const BASE_URL: &str = "http://127.0.0.1:8080";
const SPREAD: usize = 10_000;
const MODES: [&str; 11] = [
    "cache-hot",
    "cache-spread",
    "core",
    "card",
    "mcp",
    "mutex-lru-hot",
    "mutex-lru-spread",
    "moka-hot",
    "moka-spread",
    "quick_cache-hot",
    "quick_cache-spread",
];
/// The candidates' budget, as the view cache's in `filled_cache`.
const CANDIDATE_BYTES: u64 = 64 << 20;

struct Options {
    seconds: f64,
    rounds: usize,
    threads: Vec<usize>,
    only: Option<String>,
}

fn options() -> Result<Options, Error> {
    let mut o = Options { seconds: 1.0, rounds: 3, threads: vec![1, 2, 4, 8, 16], only: None };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--seconds" => o.seconds = value()?.parse()?,
            "--rounds" => o.rounds = value()?.parse()?,
            "--threads" => {
                o.threads = value()?.split(',').map(str::parse).collect::<Result<_, _>>()?;
            }
            "--only" => {
                let mode = value()?;
                if !MODES.contains(&mode.as_str()) {
                    return Err(format!("unknown mode {mode}; one of {}", MODES.join(", ")).into());
                }
                o.only = Some(mode);
            }
            "-h" | "--help" => {
                println!("see the header of bench/src/bin/cache.rs for the options");
                std::process::exit(0);
            }
            other => return Err(format!("unknown option {other}").into()),
        }
    }
    Ok(o)
}

/// Runs `op` on `threads` threads for `seconds`, all started together; operations per second.
/// `op` gets the thread's number and its count of operations so far.
fn measure<F>(threads: usize, seconds: f64, make: impl Fn(usize) -> F) -> f64
where
    F: FnMut(u64) + Send + 'static,
{
    let start = Arc::new(Barrier::new(threads + 1));
    let stop = Arc::new(AtomicBool::new(false));
    let workers: Vec<_> = (0..threads)
        .map(|t| {
            let mut op = make(t);
            let (start, stop) = (start.clone(), stop.clone());
            std::thread::spawn(move || {
                start.wait();
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    for _ in 0..64 {
                        op(n);
                        n += 1;
                    }
                }
                n
            })
        })
        .collect();
    start.wait();
    let began = Instant::now();
    std::thread::sleep(Duration::from_secs_f64(seconds));
    stop.store(true, Ordering::Relaxed);
    let total: u64 = workers.into_iter().map(|w| w.join().unwrap_or(0)).sum();
    total as f64 / began.elapsed().as_secs_f64()
}

/// A card-sized document (about 2 KB of JSON, as the benchmarks' translator's card).
fn document(i: usize) -> Arc<Document> {
    let text = "Translates READMEs, API references and release notes between English and Chinese. ";
    let json = json!({"handle": format!("agent-{i}"), "description_en": text.repeat(24)});
    Arc::new(Document { rendered: Rendered::of(&json).expect("renders"), valid_until: None })
}

fn card_key(i: usize) -> DocumentKey {
    DocumentKey::Card(format!("agent-{i}").into())
}

fn filled_cache() -> Arc<Cache> {
    let cache = Arc::new(Cache::new(64 << 20, ChangeSeq::new(0)));
    for i in 0..SPREAD {
        let key = card_key(i);
        let bytes = key.bytes();
        cache.keep(key, document(i), bytes, ChangeSeq::new(0));
    }
    cache
}

/// The candidates for the view cache, each filled as `filled_cache`.
struct Candidates {
    mutex_lru: Mutex<lru::LruCache<DocumentKey, Arc<Document>>>,
    moka: moka::sync::Cache<DocumentKey, Arc<Document>>,
    quick: quick_cache::sync::Cache<DocumentKey, Arc<Document>, ByBytes>,
}

#[derive(Clone)]
struct ByBytes;

impl quick_cache::Weighter<DocumentKey, Arc<Document>> for ByBytes {
    fn weight(&self, key: &DocumentKey, value: &Arc<Document>) -> u64 {
        (key.bytes() + value.bytes()) as u64
    }
}

impl Candidates {
    fn filled() -> Arc<Candidates> {
        let moka = moka::sync::Cache::builder()
            .max_capacity(CANDIDATE_BYTES)
            .weigher(|key: &DocumentKey, value: &Arc<Document>| (key.bytes() + value.bytes()) as u32)
            .build();
        let quick = quick_cache::sync::Cache::with_weighter(SPREAD, CANDIDATE_BYTES, ByBytes);
        let mut mutex_lru = lru::LruCache::unbounded();
        for i in 0..SPREAD {
            let (key, value) = (card_key(i), document(i));
            moka.insert(key.clone(), value.clone());
            quick.insert(key.clone(), value.clone());
            mutex_lru.put(key, value);
        }
        moka.run_pending_tasks();
        Arc::new(Candidates { mutex_lru: Mutex::new(mutex_lru), moka, quick })
    }

    /// One read of `key` from the candidate `name`, as its mode names it.
    fn get(&self, name: &str, key: &DocumentKey) -> Option<Arc<Document>> {
        match name {
            "mutex-lru" => self.mutex_lru.lock().ok()?.get(key).cloned(),
            "moka" => self.moka.get(key),
            _ => self.quick.get(key),
        }
    }
}

/// Each thread its own walk through the `SPREAD` keys (a stride coprime with it): the `n`th
/// key of thread `t`.
fn walk(t: usize) -> impl Fn(u64) -> usize {
    let stride = [7, 11, 13, 17, 19, 23, 29, 31][t % 8];
    let offset = t * 997;
    move |n| (offset + n as usize * stride) % SPREAD
}

/// As `agentdir serve` would run over `dir`, with its defaults.
fn settings(dir: &Path) -> Result<Settings, Error> {
    agentdir_bench::serve_settings(dir, BASE_URL)
}

fn request(method: &str, uri: &str, body: Option<String>) -> Request<Body> {
    let mut builder = Request::builder()
        .method(method)
        .uri(uri)
        .header(header::HOST, BASE_URL.trim_start_matches("http://"))
        .extension(ConnectInfo(SocketAddr::from(([127, 0, 0, 1], 40_000))));
    if body.is_some() {
        builder = builder
            .header(header::CONTENT_TYPE, "application/json")
            .header(header::ACCEPT, "application/json, text/event-stream");
    }
    builder.body(body.map_or_else(Body::empty, Body::from)).expect("a request")
}

/// Sends one request through `router` and returns its status and body.
async fn send(router: &axum::Router, req: Request<Body>) -> (StatusCode, axum::body::Bytes) {
    let res = router.clone().oneshot(req).await.unwrap_or_else(|never| match never {});
    let status = res.status();
    let body = res.into_body().collect().await.map(|b| b.to_bytes()).unwrap_or_default();
    (status, body)
}

fn get_agent_body(handle: &str) -> String {
    json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
           "params": {"name": "get_agent", "arguments": {"handle": handle}}})
    .to_string()
}

/// The application as served over a fresh data dir, with one registered agent (its handle).
fn served(dir: &Path) -> Result<(App, axum::Router, String), Error> {
    agentdir::telemetry::install();
    let app = App::open(settings(dir)?, Start::Primary).map_err(|e| e.to_string())?;
    let serve = ServeArgs::from_environment().map_err(|e| e.to_string())?;
    let router = agentdir::serve::app(app.clone(), &serve.hardening(), MetricsOn::MainPort)?;
    let handle = "bench-translator".to_owned();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let registration = json!({
        "handle": handle, "name": "Bench Translator 翻译", "owner": "Bench Owner",
        "mailbox": "bench@example.org", "accept_rules": true,
        "tagline": "English ⇄ Chinese translation of technical documents",
        "description_en": "Translates READMEs, API references and release notes between English and Chinese, keeping code blocks and links intact.",
        "description_zh": "专注于技术文档的中英文互译，保留代码块和链接。",
        "capabilities": ["translation", "localization", "proofreading"],
        "languages": ["en", "zh"], "homepage": "https://example.org/bench",
    });
    runtime.block_on(async {
        let (status, body) =
            send(&router, request("POST", "/api/agents", Some(registration.to_string()))).await;
        if status != StatusCode::CREATED {
            return Err::<(), Error>(format!("registration: {status} {body:?}").into());
        }
        let (status, _) = send(&router, request("GET", &format!("/api/agents/{handle}"), None)).await;
        let (mcp, body) = send(&router, request("POST", "/mcp", Some(get_agent_body(&handle)))).await;
        if status != StatusCode::OK || mcp != StatusCode::OK {
            return Err(format!("card {status}, MCP {mcp} {body:?}").into());
        }
        Ok(())
    })?;
    Ok((app, router, handle))
}

/// Each thread with its own single-threaded runtime, sending `req()` through `router` in a loop.
fn through_router(
    router: &axum::Router,
    req: impl Fn() -> Request<Body> + Clone + Send + 'static,
) -> impl Fn(usize) -> Box<dyn FnMut(u64) + Send> {
    move |_| {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        let router = router.clone();
        let req = req.clone();
        Box::new(move |_| {
            let (status, _) = runtime.block_on(send(&router, req()));
            assert_eq!(status, StatusCode::OK);
        })
    }
}

fn main() -> Result<(), Error> {
    let o = options()?;
    let dir = std::env::temp_dir().join(format!("agentdir-bench-cache-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let result = run(&o, &dir);
    let _ = std::fs::remove_dir_all(&dir);
    result
}

fn run(o: &Options, dir: &Path) -> Result<(), Error> {
    let cache = filled_cache();
    let candidates = Candidates::filled();
    let (app, router, handle) = served(dir)?;
    let key = DocumentKey::Card(handle.as_str().into());
    println!(
        "agentdir reads from many threads (in-process): {} s per run, median of {} runs; {} cores; load average {}",
        o.seconds,
        o.rounds,
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        load_average()
    );
    println!();
    let header: Vec<String> = o.threads.iter().map(|t| format!("{t} threads")).collect();
    println!("| ops/s | {} |", header.join(" | "));
    println!("|---|{}", "---:|".repeat(o.threads.len()));
    for mode in MODES {
        if o.only.as_deref().is_some_and(|only| only != mode) {
            continue;
        }
        let mut row = Vec::new();
        for &threads in &o.threads {
            let runs: Vec<f64> = (0..o.rounds)
                .map(|_| match mode {
                    "cache-hot" => measure(threads, o.seconds, |_| {
                        let cache = cache.clone();
                        let key = card_key(0);
                        move |_| assert!(cache.get::<Document>(&key, 0).is_some())
                    }),
                    "cache-spread" => measure(threads, o.seconds, |t| {
                        let cache = cache.clone();
                        let keys: Vec<DocumentKey> = (0..SPREAD).map(card_key).collect();
                        let walk = walk(t);
                        move |n| assert!(cache.get::<Document>(&keys[walk(n)], 0).is_some())
                    }),
                    candidate if candidate.ends_with("-hot") => measure(threads, o.seconds, |_| {
                        let (candidates, key) = (candidates.clone(), card_key(0));
                        let name = candidate.trim_end_matches("-hot");
                        move |_| assert!(candidates.get(name, &key).is_some())
                    }),
                    candidate if candidate.ends_with("-spread") => measure(threads, o.seconds, |t| {
                        let candidates = candidates.clone();
                        let name = candidate.trim_end_matches("-spread");
                        let keys: Vec<DocumentKey> = (0..SPREAD).map(card_key).collect();
                        let walk = walk(t);
                        move |n| assert!(candidates.get(name, &keys[walk(n)]).is_some())
                    }),
                    "core" => measure(threads, o.seconds, |_| {
                        let (app, key) = (app.clone(), key.clone());
                        move |_| assert!(matches!(app.cached_document(&key), Ok(Some(_))))
                    }),
                    "card" => {
                        let path = format!("/api/agents/{handle}");
                        measure(
                            threads,
                            o.seconds,
                            through_router(&router, move || request("GET", &path, None)),
                        )
                    }
                    _ => {
                        let body = get_agent_body(&handle);
                        measure(
                            threads,
                            o.seconds,
                            through_router(&router, move || request("POST", "/mcp", Some(body.clone()))),
                        )
                    }
                })
                .collect();
            row.push(format!("{:.0}", median(&runs)));
        }
        println!("| {mode} | {} |", row.join(" | "));
    }
    println!();
    println!("load average at the end: {}", load_average());
    Ok(())
}
