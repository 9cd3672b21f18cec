//! `--meaning`: the agent queries with search by meaning on (`App::find_agents`, the REST
//! handler's path: the need read by the full model within its client network's fair share, by
//! the quick encoder past it, then words and meaning fused) beside words alone
//! (`App::search_agents`), in the same run, result cache off. The uncached rows search
//! distinct needs, each once, and remember no need and keep no results: every search reads its
//! need. Each row says which encoder read how many needs (`matched_by`). The "quick" row gives
//! every network a share of 0 (`Shares::resize`), so the quick encoder reads every need: what
//! it serves on its own. The cached row beside them repeats the fixed set with both caches on,
//! as the server has them. Before measuring,
//! every agent's vector is computed the way the server's background worker does (its time is
//! the rebuild figure), or made synthetic (`--synthetic-vectors K`, `search/synthetic.rs`), and
//! the quick encoder's table is made whole.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agentdir::App;
use agentdir::app::shares::ShareSize;
use agentdir::domain::ranking::MatchedBy;
use agentdir_meaning::{DIM, Matrix, Quantized};

use crate::corpus::Rng;
use crate::measure::{self, Run, pct};
use crate::queries::{self, Query, Target};

type Error = Box<dyn std::error::Error + Send + Sync>;

/// Makes the quick encoder's table whole (kept in the data dir for later runs), then computes
/// every missing vector of the targets measured (`only`: one of them); prints how long that
/// took.
pub fn fill(app: &App, runtime: &tokio::runtime::Runtime, only: Option<Target>) -> Result<(), Error> {
    if !app.model().enabled() {
        return Err("--meaning needs the model: this build or its model path has none".into());
    }
    let quick = app.model_status().quick_encoder.ok_or("no quick encoder")?;
    if quick.tokens_distilled < quick.tokens {
        let started = Instant::now();
        let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
        if !app.model().fill_quick_encoder(threads) {
            return Err("the quick encoder's table could not be filled".into());
        }
        println!(
            "\nquick encoder: distilled {} tokens in {:.0} s on {threads} threads (kept in the data dir)",
            quick.tokens - quick.tokens_distilled,
            started.elapsed().as_secs_f64()
        );
    }
    if only != Some(Target::Agents) {
        fill_calls(app, runtime)?;
    }
    if only == Some(Target::Calls) {
        return Ok(());
    }
    let started = Instant::now();
    let mut done = 0;
    loop {
        let n = runtime.block_on(app.fill_vectors())?;
        if n == 0 {
            break;
        }
        done += n;
    }
    let secs = started.elapsed().as_secs_f64();
    let status = app.model_status();
    if done == 0 {
        println!("\nmeaning: every one of the {} agents already has its vector", status.agents);
        return Ok(());
    }
    println!(
        "\nmeaning: computed {done} profile vectors in {secs:.1} s ({:.1} ms each, all cores); \
         {} of {} agents have one; at this rate 100,000 agents take {:.0} min",
        secs * 1e3 / done.max(1) as f64,
        status.agents_with_vectors,
        status.agents,
        secs / done.max(1) as f64 * 100_000.0 / 60.0
    );
    Ok(())
}

/// Computes every missing call vector the way the call worker does (a round of a few calls on
/// one thread at a time, without its rest); prints what it took.
fn fill_calls(app: &App, runtime: &tokio::runtime::Runtime) -> Result<(), Error> {
    let started = Instant::now();
    let mut done = 0;
    loop {
        let n = runtime.block_on(app.fill_call_vectors())?;
        if n == 0 {
            break;
        }
        done += n;
    }
    let status = app.model_status();
    if done == 0 {
        println!("\nmeaning: every one of the {} visible calls already has its vector", status.calls);
        return Ok(());
    }
    let secs = started.elapsed().as_secs_f64();
    let each = secs / done as f64;
    println!(
        "\nmeaning: computed {done} call vectors in {secs:.1} s ({:.1} ms each, one thread, as the call \
         worker reads them); at this rate, and the worker's half of one core, 1,000,000 calls take {:.1} h",
        each * 1e3,
        each * 2.0 * 1_000_000.0 / 3600.0
    );
    Ok(())
}

/// How the searches of a row are issued: the distinct needs once each (back to back, or at a
/// fixed rate in searches per second), or the fixed set again and again.
#[derive(Clone, Copy)]
enum Order {
    OnceEach,
    Paced(f64),
    Repeat(usize),
}

async fn run<F, Fut>(qs: &Arc<Vec<Query>>, clients: usize, order: Order, search: F) -> Run
where
    F: Fn(Query) -> Fut + Clone + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<u64, agentdir::error::Error>> + Send,
{
    match order {
        Order::OnceEach => measure::run_once_each(qs, clients, None, search).await,
        Order::Paced(rate) => measure::run_once_each(qs, clients, Some(rate), search).await,
        Order::Repeat(rounds) => measure::run(qs, clients, rounds, search).await,
    }
}

async fn words(app: &App, qs: &Arc<Vec<Query>>, clients: usize, order: Order) -> Run {
    let app = app.clone();
    run(qs, clients, order, move |q| {
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

/// How the searches of a row were read, each with its latency: by the full model, by the quick
/// encoder, or by words alone.
#[derive(Default)]
struct Reads {
    full: Vec<Duration>,
    quick: Vec<Duration>,
    busy: usize,
}

impl Reads {
    fn total(&self) -> usize {
        self.full.len() + self.quick.len() + self.busy
    }
}

/// Searches with meaning; each call comes from the next of `clients` clients, each in a network
/// (/24) of its own, so each has its own share of the model. Each search is timed around the
/// call and filed by how its need was read (`matched_by`).
async fn meaning(app: &App, qs: &Arc<Vec<Query>>, clients: usize, order: Order) -> (Run, Reads) {
    let app = app.clone();
    let next = Arc::new(AtomicUsize::new(0));
    let reads = Arc::new(Mutex::new(Reads::default()));
    let filed = reads.clone();
    let run = run(qs, clients, order, move |q| {
        let (app, next, reads) = (app.clone(), next.clone(), reads.clone());
        async move {
            let network = (next.fetch_add(1, Ordering::Relaxed) % clients) as u8;
            let client = std::net::IpAddr::from([10, 0, network, 1]);
            let started = Instant::now();
            let (matched_by, total) = match q.target {
                Some(Target::Calls) => {
                    let list = app.find_calls(q.call_search(), client).await?;
                    (list.matched_by, list.total)
                }
                _ => {
                    let list = app.find_agents(q.agent_search(), client).await?;
                    (list.matched_by, list.total)
                }
            };
            let took = started.elapsed();
            let mut reads = reads.lock().unwrap_or_else(|e| e.into_inner());
            match matched_by {
                MatchedBy::Combined | MatchedBy::Meaning => reads.full.push(took),
                MatchedBy::CombinedQuick | MatchedBy::MeaningQuick => reads.quick.push(took),
                _ => reads.busy += 1,
            }
            Ok(total)
        }
    })
    .await;
    let mut reads = std::mem::take(&mut *filed.lock().unwrap_or_else(|e| e.into_inner()));
    reads.full.sort_unstable();
    reads.quick.sort_unstable();
    (run, reads)
}

/// Distinct needs per client of each uncached row.
const NEEDS_ONE_CLIENT: usize = 300;
const NEEDS_PER_CLIENT_16: usize = 100;
/// Searches per second offered by the paced rows (all 16 clients together): a directory busy
/// with people and agents stating needs, below what two cores can embed.
const PACED_RATES: [f64; 2] = [100.0, 200.0];

pub async fn measure(app: &App, fixed: &Arc<Vec<Query>>, rounds16: usize, target: Target) {
    let per_row = 16 * NEEDS_PER_CLIENT_16;
    let needs = queries::distinct_needs(NEEDS_ONE_CLIENT + per_row * (2 + PACED_RATES.len()), target);
    let name = target.name();
    let (one, rest) = needs.split_at(NEEDS_ONE_CLIENT);
    let rows: Vec<Arc<Vec<Query>>> = rest.chunks(per_row).map(|c| Arc::new(c.to_vec())).collect();
    let one = Arc::new(one.to_vec());
    caches_off(app, fixed).await;
    header(name, needs.len());
    side_by_side(app, &one, 1, Order::OnceEach, "1", name).await;
    side_by_side(app, &rows[0], 16, Order::OnceEach, "16", name).await;
    for (rate, needs) in PACED_RATES.iter().zip(&rows[1..]) {
        side_by_side(app, needs, 16, Order::Paced(*rate), &format!("16 @{rate}/s"), name).await;
    }
    quick(app, &rows[1 + PACED_RATES.len()], 1, name).await;
    caches_on(app);
    side_by_side(app, fixed, 16, Order::Repeat(rounds16.max(3)), "16 cache", name).await;
    scan_cost(100_000);
}

/// Distinct needs of each row of `--quick-rows`: three rows' worth of the full benchmark, so a
/// row lasts long enough to be steady.
const NEEDS_QUICK_ROW: usize = 3 * 16 * NEEDS_PER_CLIENT_16;

/// `--quick-rows N`: the "16 quick" row alone, `rows` times over the same distinct needs (no
/// cache serves them: results and remembered needs are off), for comparing builds run in turn.
pub async fn measure_quick(app: &App, fixed: &Arc<Vec<Query>>, rows: usize, target: Target) {
    let needs = Arc::new(queries::distinct_needs(NEEDS_QUICK_ROW, target));
    caches_off(app, fixed).await;
    header(target.name(), needs.len());
    quick(app, &needs, rows, target.name()).await;
    caches_on(app);
}

/// Result cache and remembered needs off, then a warm-up pass of each search over the fixed
/// set (never searched with the caches off).
async fn caches_off(app: &App, fixed: &Arc<Vec<Query>>) {
    app.index().set_result_cache_capacity(0);
    app.needs().set_capacity(0);
    words(app, fixed, 1, Order::Repeat(1)).await;
    meaning(app, fixed, 1, Order::Repeat(1)).await;
}

/// Both caches as the server has them.
fn caches_on(app: &App) {
    app.index().set_result_cache_capacity(agentdir_search_index::DEFAULT_CACHE_ENTRIES);
    app.needs().set_capacity(agentdir::app::needs::NEEDS_REMEMBERED);
}

fn header(name: &str, needs: usize) {
    println!(
        "\n-- {name}: words only vs with meaning, {needs} distinct needs searched once each \
         (English, Chinese, mixed; keywords and sentences; half with filters), result cache \
         and remembered needs off, each client in a /24 of its own: back to back, then at a \
         fixed rate (@N/s, timed from when each search was due); last, the fixed set repeated \
         with both caches on; \"full\": the share of the needs the model read, \"by meaning\" \
         with those the quick encoder read (the rest by words alone), each timed around the call --"
    );
    println!(
        "{:<11} | {:>17} | {:>8} | {:>17} | {:>8} | {:>10} | {:>6} | {:>17} | {:>17} | {:>12}",
        "clients",
        "words p50/p99 ms",
        "q/s",
        "meaning p50/p99",
        "q/s",
        "by meaning",
        "full",
        "full p50/p99",
        "quick p50/p99",
        "load average"
    );
}

/// Every need past its share: what the quick encoder serves on its own, `rows` times over
/// `needs`.
async fn quick(app: &App, needs: &Arc<Vec<Query>>, rows: usize, name: &str) {
    let size = app.shares().size();
    app.shares().resize(ShareSize { tokens_per_second: 0.0, burst_tokens: 0.0 });
    for _ in 0..rows {
        side_by_side(app, needs, 16, Order::OnceEach, "16 quick", name).await;
    }
    app.shares().resize(size);
}

/// One row: words only, then with meaning, at `clients` clients.
async fn side_by_side(
    app: &App,
    qs: &Arc<Vec<Query>>,
    clients: usize,
    order: Order,
    label: &str,
    name: &str,
) {
    let w = words(app, qs, clients, order).await;
    let (m, reads) = meaning(app, qs, clients, order).await;
    let (wa, ma) = (w.all(name), m.all(name));
    let n = reads.total().max(1) as f64;
    let by_meaning = 100.0 * (reads.full.len() + reads.quick.len()) as f64 / n;
    let full = 100.0 * reads.full.len() as f64 / n;
    let p = |d: &[Duration]| {
        if d.is_empty() { "—".to_owned() } else { format!("{:.2} / {:.2}", pct(d, 0.5), pct(d, 0.99)) }
    };
    println!(
        "{label:<11} | {:>17} | {:>8.0} | {:>17} | {:>8.0} | {:>9.0}% | {:>5.0}% | {:>17} | {:>17} | {:>12}",
        format!("{:.2} / {:.2}", pct(&wa, 0.5), pct(&wa, 0.99)),
        w.throughput(),
        format!("{:.2} / {:.2}", pct(&ma, 0.5), pct(&ma, 0.99)),
        m.throughput(),
        by_meaning,
        full,
        p(&reads.full),
        p(&reads.quick),
        measure::load_average()
    );
    println!(
        "{:<11}   CPU per search: words {:.2} ms, with meaning {:.2} ms; distinct needs matched by meaning: {:.0} a second",
        "",
        w.cpu_per_query_ms(),
        m.cpu_per_query_ms(),
        m.throughput() * by_meaning / 100.0
    );
}

/// The brute-force scan alone over `rows` vectors (random unit vectors: the scan reads every
/// row whatever they hold).
fn scan_cost(rows: u64) {
    let mut rng = Rng::new(7);
    let mut random_unit = || {
        let v: Vec<f32> = (0..DIM).map(|_| rng.below(2001) as f32 / 1000.0 - 1.0).collect();
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        Quantized::new(&v.iter().map(|x| x / norm).collect::<Vec<_>>())
    };
    let mut matrix = Matrix::default();
    for key in 0..rows {
        matrix.upsert(key, &random_unit(), ());
    }
    let query = random_unit();
    let mut times: Vec<Duration> = (0..30)
        .map(|_| {
            let t = Instant::now();
            std::hint::black_box(matrix.search(&query, agentdir::service::finding::NEAREST_FLOOR, |_| true));
            t.elapsed()
        })
        .collect();
    times.sort();
    println!(
        "vector scan alone over {rows} rows × {DIM} int8: p50 {:.2} ms, max {:.2} ms (one thread)",
        pct(&times, 0.5),
        pct(&times, 1.0)
    );
}
