//! Closed-loop clients and their statistics: N tasks on the async runtime, each issuing the query
//! set back to back and timing every search from the client side (queueing for a blocking thread
//! included, as a REST handler would see it), plus the process CPU time the run cost.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::corpus::Rng;
use crate::queries::{CLASSES, Query};

/// One run's samples and cost.
pub struct Run {
    /// Latencies per class index (sorted), and the totals the searches reported.
    pub classes: Vec<(Vec<Duration>, Vec<u64>)>,
    pub wall: Duration,
    pub cpu: Duration,
    pub errors: usize,
}

impl Run {
    pub fn queries(&self) -> usize {
        self.classes.iter().map(|(l, _)| l.len()).sum()
    }

    pub fn throughput(&self) -> f64 {
        self.queries() as f64 / self.wall.as_secs_f64().max(1e-9)
    }

    /// Process CPU per query: unaffected by other processes competing for the cores.
    pub fn cpu_per_query_ms(&self) -> f64 {
        self.cpu.as_secs_f64() * 1e3 / self.queries().max(1) as f64
    }

    /// Every sample of the classes whose names start with `prefix`, sorted.
    pub fn all(&self, prefix: &str) -> Vec<Duration> {
        let mut all: Vec<Duration> = self
            .classes
            .iter()
            .enumerate()
            .filter(|(i, _)| CLASSES[*i].starts_with(prefix))
            .flat_map(|(_, (l, _))| l.iter().copied())
            .collect();
        all.sort_unstable();
        all
    }
}

/// `clients` tasks each run the whole set `rounds` times, each from its own starting point so
/// they don't move in lockstep; `search` returns the total hits of one query.
pub async fn run<F, Fut, E>(queries: &Arc<Vec<Query>>, clients: usize, rounds: usize, search: F) -> Run
where
    F: Fn(Query) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Result<u64, E>> + Send,
    E: std::fmt::Display,
{
    let queries = queries.clone();
    drive(clients, search, None, move |c| {
        let queries = queries.clone();
        let mut r = Rng::new(c as u64 * 31 + 5);
        let n = queries.len();
        (0..rounds).flat_map(move |_| {
            let start = if clients == 1 { 0 } else { r.below(n) };
            let queries = queries.clone();
            (0..n).map(move |i| queries[(start + i) % n].clone())
        })
    })
    .await
}

/// `clients` tasks share the set: each query is searched once, by whichever client is free, so
/// no search repeats an earlier one. With a `rate` (searches per second, all clients
/// together) the clients do not search back to back but on a schedule, and each search is timed
/// from the moment it was due, so a search held up by the one before it counts its wait.
pub async fn run_once_each<F, Fut, E>(
    queries: &Arc<Vec<Query>>,
    clients: usize,
    rate: Option<f64>,
    search: F,
) -> Run
where
    F: Fn(Query) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Result<u64, E>> + Send,
    E: std::fmt::Display,
{
    let next = Arc::new(AtomicUsize::new(0));
    let queries = queries.clone();
    let pace = rate.map(|r| Duration::from_secs_f64(clients as f64 / r));
    drive(clients, search, pace, move |_| {
        let (queries, next) = (queries.clone(), next.clone());
        std::iter::from_fn(move || queries.get(next.fetch_add(1, Ordering::Relaxed)).cloned())
    })
    .await
}

/// `clients` tasks, client `c` searching what `order(c)` gives, each search timed: back to
/// back, or `pace` apart when given (the clients evenly offset).
async fn drive<F, Fut, E, O, I>(clients: usize, search: F, pace: Option<Duration>, order: O) -> Run
where
    F: Fn(Query) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Result<u64, E>> + Send,
    E: std::fmt::Display,
    O: Fn(usize) -> I,
    I: Iterator<Item = Query> + Send + 'static,
{
    let cpu0 = process_cpu();
    let started = Instant::now();
    let tasks: Vec<_> = (0..clients)
        .map(|c| {
            let queries = order(c);
            let search = search.clone();
            tokio::spawn(async move {
                let mut out = Vec::new();
                let mut errors = 0;
                let first = started + pace.map_or(Duration::ZERO, |p| p.mul_f64(c as f64 / clients as f64));
                for (k, q) in queries.enumerate() {
                    let class = q.class;
                    let t = match pace {
                        // Behind schedule (the search before ran long): timed from when it was
                        // due. Ahead: timed from the wake-up, not charging the timer's lateness.
                        Some(p) if Instant::now() >= first + p * k as u32 => first + p * k as u32,
                        Some(p) => {
                            tokio::time::sleep_until((first + p * k as u32).into()).await;
                            Instant::now()
                        }
                        None => Instant::now(),
                    };
                    match search(q).await {
                        Ok(total) => out.push((class, t.elapsed(), total)),
                        Err(e) => {
                            if errors == 0 {
                                eprintln!("search failed: {e}");
                            }
                            errors += 1;
                        }
                    }
                }
                (out, errors)
            })
        })
        .collect();
    let mut classes: Vec<(Vec<Duration>, Vec<u64>)> = vec![(Vec::new(), Vec::new()); CLASSES.len()];
    let mut errors = 0;
    for t in tasks {
        let (samples, e) = t.await.unwrap_or_default();
        errors += e;
        for (class, d, total) in samples {
            classes[class].0.push(d);
            classes[class].1.push(total);
        }
    }
    let wall = started.elapsed();
    for (l, _) in &mut classes {
        l.sort_unstable();
    }
    Run { classes, wall, cpu: process_cpu().saturating_sub(cpu0), errors }
}

/// The p-th percentile in milliseconds (nearest rank).
pub fn pct(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i].as_secs_f64() * 1e3
}

/// User + system CPU time of this process, from /proc (10 ms resolution; runs last seconds).
pub fn process_cpu() -> Duration {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return Duration::ZERO;
    };
    // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    Duration::from_millis((ticks(11) + ticks(12)) * 10)
}

/// A `/proc/self/status` value in MB (`VmHWM` is the peak resident set, `VmRSS` the current).
pub fn status_mb(field: &str) -> f64 {
    proc_mb("/proc/self/status", field)
}

/// A `/proc/self/smaps_rollup` value in MB. `Pss` shares each page among the mappings that hold
/// it, so the database file mapped by every pooled connection counts once.
pub fn rollup_mb(field: &str) -> f64 {
    proc_mb("/proc/self/smaps_rollup", field)
}

/// The `field:  <n> kB` line of a `/proc` file, in MB (0 when absent).
fn proc_mb(path: &str, field: &str) -> f64 {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|kb| kb.parse::<f64>().ok()))
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

static PEAK_ANON_KB: AtomicU64 = AtomicU64::new(0);

/// Notes the anonymous resident memory now (the process's own heap and stacks, without the
/// files it maps: the index's, the model's, the binary).
fn sample_anon() {
    let kb = (status_mb("RssAnon:") * 1024.0) as u64;
    PEAK_ANON_KB.fetch_max(kb, Ordering::Relaxed);
}

/// Samples the anonymous memory every 50 ms for the rest of the process, so short peaks (the
/// index writer's buffers during the rebuild) are seen too.
pub fn start_sampler() {
    std::thread::spawn(|| {
        loop {
            sample_anon();
            std::thread::sleep(Duration::from_millis(50));
        }
    });
}

/// The largest anonymous resident memory [`sample_anon`] saw, in MB.
pub fn peak_anon_mb() -> f64 {
    PEAK_ANON_KB.load(Ordering::Relaxed) as f64 / 1024.0
}

/// The 1-minute load average, as /proc/loadavg reports it.
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().map(str::to_string))
        .unwrap_or_else(|| "?".into())
}
