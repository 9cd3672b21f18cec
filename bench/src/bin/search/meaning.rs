//! `--meaning`: the agent queries with search by meaning on (`App::find_agents`, the REST
//! handler's path: the need embedded by the model within its budget, then words and meaning
//! fused) beside words alone (`App::search_agents`), in the same run, result cache off.
//! The uncached rows remember no need (every query is embedded) and keep no results; the
//! cached row beside them runs with both caches on, as the server does. Before measuring, every agent's vector
//! is computed the way the server's background worker does (its time is the rebuild figure).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use agentdir::App;
use agentdir_meaning::{DIM, Matrix, Quantized};

use crate::measure::{self, Run, pct};
use crate::queries::Query;

type Error = Box<dyn std::error::Error + Send + Sync>;

/// Computes every missing vector; prints how long that took.
pub fn fill(app: &App, runtime: &tokio::runtime::Runtime) -> Result<(), Error> {
    if !app.meaning().enabled() {
        return Err("--meaning needs the model: this build or its model path has none".into());
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
    let status = app.meaning().status();
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

async fn words(app: &App, qs: &Arc<Vec<Query>>, clients: usize, rounds: usize) -> Run {
    let app = app.clone();
    measure::run(qs, clients, rounds, move |q| {
        let app = app.clone();
        async move { app.search_agents(q.agent_search()).await.map(|l| l.total) }
    })
    .await
}

/// Searches with meaning; each call comes from the next of `clients` addresses, and `busy`
/// counts those the budget answered by words alone.
async fn meaning(
    app: &App,
    qs: &Arc<Vec<Query>>,
    clients: usize,
    rounds: usize,
    busy: Arc<AtomicUsize>,
) -> Run {
    let app = app.clone();
    let next = Arc::new(AtomicUsize::new(0));
    measure::run(qs, clients, rounds, move |q| {
        let (app, busy, next) = (app.clone(), busy.clone(), next.clone());
        async move {
            let client = format!("10.0.0.{}", next.fetch_add(1, Ordering::Relaxed) % clients);
            let mut search = q.agent_search();
            search.explain = Some(true);
            let list = app.find_agents(search, &client).await?;
            let by_words = list.agents.first().and_then(|a| a.ranking.as_ref()).map(|r| r.signals.matched_by);
            if by_words == Some("words_busy") {
                busy.fetch_add(1, Ordering::Relaxed);
            }
            Ok::<u64, agentdir::error::Error>(list.total)
        }
    })
    .await
}

pub async fn measure(app: &App, qs: &Arc<Vec<Query>>, rounds: usize, rounds16: usize) {
    app.index().set_result_cache_capacity(0);
    app.meaning().needs.set_capacity(0);
    // Warm-up pass of each.
    words(app, qs, 1, 1).await;
    meaning(app, qs, 1, 1, Arc::default()).await;
    println!("\n-- agents: words only vs with meaning; result cache and remembered needs off, then on --");
    println!(
        "{:<8} | {:>17} | {:>8} | {:>17} | {:>8} | {:>10} | {:>12}",
        "clients", "words p50/p99 ms", "q/s", "meaning p50/p99", "q/s", "by meaning", "load average"
    );
    for clients in [1, 16] {
        let r = if clients == 1 { rounds } else { rounds16 };
        side_by_side(app, qs, clients, r, &clients.to_string()).await;
    }
    // Beside it, a cached run: the index's result cache and the remembered needs on, as the
    // server has them.
    app.index().set_result_cache_capacity(agentdir_search_index::DEFAULT_CACHE_ENTRIES);
    app.meaning().needs.set_capacity(agentdir::meaning::needs::NEEDS_REMEMBERED);
    side_by_side(app, qs, 16, rounds16, "16 cache").await;
    scan_cost(100_000);
}

/// One row: words only, then with meaning, at `clients` clients.
async fn side_by_side(app: &App, qs: &Arc<Vec<Query>>, clients: usize, rounds: usize, label: &str) {
    let w = words(app, qs, clients, rounds).await;
    let busy = Arc::new(AtomicUsize::new(0));
    let m = meaning(app, qs, clients, rounds, busy.clone()).await;
    let (wa, ma) = (w.all("agents"), m.all("agents"));
    let served = 100.0 * (1.0 - busy.load(Ordering::Relaxed) as f64 / m.queries().max(1) as f64);
    println!(
        "{label:<8} | {:>17} | {:>8.0} | {:>17} | {:>8.0} | {:>9.0}% | {:>12}",
        format!("{:.2} / {:.2}", pct(&wa, 0.5), pct(&wa, 0.99)),
        w.throughput(),
        format!("{:.2} / {:.2}", pct(&ma, 0.5), pct(&ma, 0.99)),
        m.throughput(),
        served,
        measure::load_average()
    );
}

/// The brute-force scan alone over `rows` vectors (random unit vectors: the scan reads every
/// row whatever they hold).
fn scan_cost(rows: u64) {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut random_unit = || {
        let v: Vec<f32> = (0..DIM)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                (state % 2001) as f32 / 1000.0 - 1.0
            })
            .collect();
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
            std::hint::black_box(matrix.search(&query, agentdir::meaning::rank::NEAREST_FLOOR, |_| true));
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
