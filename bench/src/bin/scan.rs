//! The vector side of a search by meaning, alone, at 100k and 1M agents: today's exact scan of
//! every int8 row followed by the core's selection of the nearest (`old.rs`), against
//! `Matrix::nearest` (a first pass over the rows' high nibbles, exact similarities for the rows
//! that can still count), both applying the rule of docs/search.md ("Search by meaning") the way
//! `rank_agents` does. Checks on every query that both give the same meaning-only matches in
//! the same order with the same similarities (so the same `total`), then times both side by
//! side in one process: 1 client, and 16 clients back to back; CPU per query; memory; the time
//! to build the matrix (the codes) from loaded vectors.
//!
//! The vectors are synthetic but shaped like the real ones: unit vectors around 2,000 topic
//! centres grouped in 40 areas, plus what every profile shares, so a broad need is at ≥ 0.18 to
//! tens of thousands of 100k profiles and a need that means nothing is near almost none. Every
//! row carries random filter attributes (a copy of the core's `Row`); one need in ten filters by
//! trust level, language, capability or verified mailbox.
//!
//! ```text
//! cargo run -p agentdir-bench --bin scan \
//!   --config 'profile.dev.package.agentdir-bench.opt-level=3' \
//!   --config 'profile.dev.package.agentdir-bench.overflow-checks=false' \
//!   -- [--queries 200] [--rounds 3] [ROWS ...]        # default rows: 100000 1000000
//! ```
//! (`agentdir-meaning` is built with opt-level 3 in every profile; a release build gives the
//! same figures.)

// A binary's root looks for modules beside it; this one lives in a folder named after the binary.
#[path = "scan/old.rs"]
mod old;

use std::time::{Duration, Instant};

use agentdir::service::finding::{MEANING_CANDIDATES, MEANING_THRESHOLD, NEAREST_FILL, NEAREST_FLOOR};
use agentdir_meaning::{DIM, Hit, Matrix, NearestStats, Quantized};

const CENTRES: usize = 2_000;
const AREAS: usize = 40;
const CLIENTS: usize = 16;
const CAPABILITIES: [&str; 12] = [
    // named for the reader; rows hold their bits
    "translation",
    "ocr",
    "legal",
    "seo",
    "python",
    "design",
    "audit",
    "subtitles",
    "tax",
    "scraping",
    "research",
    "writing",
];

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn gaussian(&mut self) -> f32 {
        let u = ((self.next() >> 11) as f64 + 1.0) / (1u64 << 53) as f64;
        let v = (self.next() >> 11) as f64 / (1u64 << 53) as f64;
        ((-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()) as f32
    }

    /// A random direction, components of deviation 1/√DIM.
    fn direction(&mut self) -> Vec<f32> {
        let s = 1.0 / (DIM as f32).sqrt();
        (0..DIM).map(|_| self.gaussian() * s).collect()
    }
}

/// `Σ weight × part`, made unit length.
fn mix(parts: &[(f32, &[f32])]) -> Vec<f32> {
    let mut v = vec![0f32; DIM];
    for (w, p) in parts {
        v.iter_mut().zip(p.iter()).for_each(|(x, y)| *x += w * y);
    }
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.iter_mut().for_each(|x| *x /= norm);
    v
}

struct Space {
    shared: Vec<f32>,
    areas: Vec<Vec<f32>>,
    centres: Vec<Vec<f32>>,
}

impl Space {
    fn new(r: &mut Rng) -> Space {
        let shared = r.direction();
        let areas: Vec<Vec<f32>> = (0..AREAS).map(|_| r.direction()).collect();
        let centres = (0..CENTRES)
            .map(|i| {
                let own = r.direction();
                mix(&[(0.75, &areas[i % AREAS]), (0.66, &own)])
            })
            .collect();
        Space { shared, areas, centres }
    }

    fn profile(&self, r: &mut Rng) -> Quantized {
        let noise = r.direction();
        let centre = &self.centres[r.below(CENTRES)];
        Quantized::new(&mix(&[(0.5, &self.shared), (0.6, centre), (0.62, &noise)]))
    }

    /// Needs of four kinds in turn: broad (an area), between two topics, one topic, and one that
    /// means nothing.
    fn need(&self, r: &mut Rng, i: usize) -> (Quantized, &'static str) {
        let noise = r.direction();
        let (c1, c2) = (&self.centres[r.below(CENTRES)], &self.centres[r.below(CENTRES)]);
        let area = &self.areas[r.below(AREAS)];
        let s = &self.shared;
        let (v, kind) = match i % 4 {
            0 => (mix(&[(0.3, s), (0.5, area), (0.3, c1), (0.8, &noise)]), "broad"),
            1 => (mix(&[(0.2, s), (0.45, c1), (0.3, c2), (0.8, &noise)]), "two topics"),
            2 => (mix(&[(0.1, s), (0.4, c1), (0.9, &noise)]), "one topic"),
            _ => (mix(&[(0.05, s), (1.0, &noise)]), "gibberish"),
        };
        (Quantized::new(&v), kind)
    }
}

/// What the scan checks of each agent: the layout and the check of the core's
/// `meaning::row::Row` and `RowFilter`, copied so that they are compiled as the server has them
/// (the core is built without optimisation in a dev build, this binary with it).
#[derive(Debug, Clone, Copy, Default)]
struct Row {
    level: u8,
    verified: bool,
    live: bool,
    joined_at: i64,
    capabilities: u64,
    languages: u64,
}

#[derive(Default)]
struct RowFilter {
    min_level: u8,
    verified: Option<bool>,
    live: Option<bool>,
    joined_since: Option<i64>,
    capability: u64,
    language: u64,
}

impl RowFilter {
    fn admits(&self, r: &Row) -> bool {
        r.level >= self.min_level
            && self.verified.is_none_or(|v| v == r.verified)
            && self.live.is_none_or(|v| v == r.live)
            && self.joined_since.is_none_or(|t| r.joined_at >= t)
            && r.capabilities & self.capability == self.capability
            && r.languages & self.language == self.language
    }
}

/// One bit of 64 per capability or language, as the core hashes them.
fn bit(i: usize) -> u64 {
    1 << ((i * 37) % 64)
}

/// Random attributes for the filters.
fn row(r: &mut Rng, now: i64) -> Row {
    let capabilities = (0..1 + r.below(3)).fold(0, |bits, _| bits | bit(r.below(CAPABILITIES.len())));
    let languages = match r.below(4) {
        0 => bit(100),
        1 => bit(100) | bit(101),
        _ => bit(101),
    };
    Row {
        level: [0, 0, 1, 2][r.below(4)],
        verified: r.below(3) == 0,
        live: r.below(5) == 0,
        joined_at: now - r.below(365) as i64 * 86_400_000,
        capabilities,
        languages,
    }
}

/// A sampled search: its need, its filters, how many word matches it has (0: the nearest may
/// fill; 40: they may not), and which keys its words match (refused by the meaning side).
struct Search {
    need: Quantized,
    kind: &'static str,
    filter: RowFilter,
    words_total: usize,
    word_seed: u64,
}

impl Search {
    fn accept(&self, key: &u64) -> bool {
        // About one agent in ten near a need also holds its words.
        !(key.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ self.word_seed).is_multiple_of(10)
    }

    fn floor(&self) -> f32 {
        if self.words_total < NEAREST_FILL { NEAREST_FLOOR } else { MEANING_THRESHOLD }
    }
}

fn searches(space: &Space, r: &mut Rng, n: usize) -> Vec<Search> {
    (0..n)
        .map(|i| {
            let (need, kind) = space.need(r, i);
            let mut filter = RowFilter::default();
            match i % 10 {
                3 => filter.min_level = 1,
                5 => filter.language = bit(100),
                7 => filter.capability = bit(r.below(CAPABILITIES.len())),
                9 => filter.verified = Some(true),
                _ => {}
            }
            Search { need, kind, filter, words_total: if i % 3 == 0 { 0 } else { 40 }, word_seed: r.next() }
        })
        .collect()
}

/// The meaning-only matches as `rank_agents` takes them today: one exact scan, then the nearest.
fn old_rule(m: &old::Matrix<Row>, s: &Search) -> Vec<Hit> {
    let accept = |k: &u64| s.accept(k);
    let (mut strong, mut near): (Vec<Hit>, Vec<Hit>) = m
        .search(&s.need, s.floor(), |row| s.filter.admits(row))
        .into_iter()
        .partition(|hit| hit.similarity >= MEANING_THRESHOLD);
    let mut only = old::nearest_first(&mut strong, MEANING_CANDIDATES, accept);
    let precise = s.words_total > 0 && only.is_empty();
    let found = s.words_total + only.len();
    if !precise && found < NEAREST_FILL {
        only.extend(old::nearest_first(&mut near, NEAREST_FILL - found, accept));
    }
    only
}

/// The same with `Matrix::nearest`, as `rank_agents` would take them (see meaning/SCAN.md).
fn new_rule(m: &Matrix<Row>, s: &Search, threads: Option<usize>) -> (Vec<Hit>, NearestStats) {
    let mut stream =
        m.nearest_on(threads, &s.need, s.floor(), MEANING_CANDIDATES, |row| s.filter.admits(row));
    let mut only = Vec::new();
    let mut first_near = None;
    while only.len() < MEANING_CANDIDATES {
        match stream.next() {
            None => break,
            Some(hit) if hit.similarity < MEANING_THRESHOLD => {
                first_near = Some(hit);
                break;
            }
            Some(hit) => {
                if s.accept(&hit.key) {
                    only.push(hit);
                }
            }
        }
    }
    let precise = s.words_total > 0 && only.is_empty();
    let found = s.words_total + only.len();
    if !precise && found < NEAREST_FILL {
        let fill = NEAREST_FILL - found;
        let near: Vec<Hit> =
            first_near.into_iter().chain(stream.by_ref()).filter(|h| s.accept(&h.key)).take(fill).collect();
        only.extend(near);
    }
    (only, stream.stats())
}

/// CPU time of the whole process (every thread, ended ones too).
fn process_cpu() -> Duration {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `t` is a valid timespec for the call to write.
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut t) };
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

fn pct(sorted: &[Duration], p: f64) -> f64 {
    let i = ((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i].as_secs_f64() * 1e3
}

/// One timed run: latencies (sorted), wall time, process CPU.
struct Run {
    latencies: Vec<Duration>,
    wall: Duration,
    cpu: Duration,
}

impl Run {
    fn p50(&self) -> f64 {
        pct(&self.latencies, 0.5)
    }
    fn p99(&self) -> f64 {
        pct(&self.latencies, 0.99)
    }
    fn cpu_ms(&self) -> f64 {
        self.cpu.as_secs_f64() * 1e3 / self.latencies.len() as f64
    }
    fn qps(&self) -> f64 {
        self.latencies.len() as f64 / self.wall.as_secs_f64()
    }
}

/// `clients` threads, each running `per_client` searches back to back from its own start.
fn run(clients: usize, per_client: usize, searches: &[Search], f: &(dyn Fn(&Search) -> usize + Sync)) -> Run {
    let (cpu0, wall0) = (process_cpu(), Instant::now());
    let mut latencies: Vec<Duration> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..clients)
            .map(|c| {
                scope.spawn(move || {
                    (0..per_client)
                        .map(|i| {
                            let s = &searches[(c * 7919 + i) % searches.len()];
                            let t = Instant::now();
                            std::hint::black_box(f(s));
                            t.elapsed()
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().unwrap_or_default()).collect()
    });
    latencies.sort_unstable();
    Run { latencies, wall: wall0.elapsed(), cpu: process_cpu() - cpu0 }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let mut args = std::env::args().skip(1);
    let (mut queries, mut rounds, mut sizes) = (200usize, 3usize, Vec::new());
    while let Some(a) = args.next() {
        match a.as_str() {
            "--queries" => queries = args.next().and_then(|v| v.parse().ok()).unwrap_or(queries),
            "--rounds" => rounds = args.next().and_then(|v| v.parse().ok()).unwrap_or(rounds),
            n => sizes.extend(n.parse::<usize>().ok()),
        }
    }
    if sizes.is_empty() {
        sizes = vec![100_000, 1_000_000];
    }
    println!(
        "vector scan benchmark: {queries} sampled needs, {rounds} rounds, {} cores",
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    for rows in sizes {
        bench(rows, queries, rounds);
    }
}

fn bench(rows: usize, queries: usize, rounds: usize) {
    let now = 1_800_000_000_000i64;
    let mut r = Rng(0x2545_f491_4f6c_dd1d);
    let space = Space::new(&mut r);
    let t = Instant::now();
    let vectors: Vec<(Quantized, Row)> =
        (0..rows).map(|_| (space.profile(&mut r), row(&mut r, now))).collect();
    println!("\n== {rows} rows (generated in {:.1} s)", t.elapsed().as_secs_f64());

    // Start-up: building each matrix from loaded vectors (the new one encodes its planes).
    let t = Instant::now();
    let mut old_m = old::Matrix::new();
    for (k, (v, a)) in vectors.iter().enumerate() {
        old_m.upsert(k as u64, v, *a);
    }
    let old_build = t.elapsed();
    let t = Instant::now();
    let mut new_m = Matrix::default();
    for (k, (v, a)) in vectors.iter().enumerate() {
        new_m.upsert(k as u64, v, *a);
    }
    let new_build = t.elapsed();
    drop(vectors);
    println!(
        "build: old {:.2} s, new {:.2} s (the codes cost {:.2} s); memory: old {:.0} MB, new {:.0} MB",
        old_build.as_secs_f64(),
        new_build.as_secs_f64(),
        (new_build.saturating_sub(old_build)).as_secs_f64(),
        old_m.bytes() as f64 / 1e6,
        new_m.bytes() as f64 / 1e6
    );

    let searches = searches(&space, &mut r, queries);
    // Exactness: every sampled need, the new search on one thread and on the default.
    let mut same = 0;
    let (mut cands, mut rescored, mut passes, mut dev) = (0usize, 0usize, 0u32, 0f32);
    let mut by_kind: Vec<(&str, usize, usize)> = Vec::new();
    for s in &searches {
        let expected = old_rule(&old_m, s);
        let (one, stats) = new_rule(&new_m, s, Some(1));
        let (auto, _) = new_rule(&new_m, s, None);
        let (two, _) = new_rule(&new_m, s, Some(2));
        if one == expected && auto == expected && two == expected {
            same += 1;
        } else {
            println!(
                "  MISMATCH ({}): expected {} hits, got {} / {} / {}",
                s.kind,
                expected.len(),
                one.len(),
                auto.len(),
                two.len()
            );
        }
        cands += stats.candidates;
        rescored += stats.rescored;
        passes += stats.passes;
        dev = dev.max(stats.max_deviations);
        match by_kind.iter_mut().find(|(k, _, _)| *k == s.kind) {
            Some(e) => {
                e.1 += 1;
                e.2 += expected.len();
            }
            None => by_kind.push((s.kind, 1, expected.len())),
        }
    }
    let n = searches.len() as f64;
    println!(
        "exact: {same}/{} needs give the same meaning-only matches, order and similarities (so the same total) \
         on 1 thread, 2 threads and the default; per need: {:.0} candidates, {:.0} rescored ({:.2} % of rows), \
         {:.2} passes; largest first-pass error among rescored rows {dev:.2} σ",
        searches.len(),
        cands as f64 / n,
        rescored as f64 / n,
        100.0 * rescored as f64 / n / rows as f64,
        passes as f64 / n
    );
    let kinds: Vec<String> =
        by_kind.iter().map(|(k, c, h)| format!("{k}: {:.0}", *h as f64 / *c as f64)).collect();
    println!("meaning-only matches per need by kind: {}", kinds.join(", "));
    // The first-pass error over every row, for a few needs (rescores everything).
    let sample = if rows >= 500_000 { 4 } else { 20 };
    let mut worst = 0f32;
    for s in searches.iter().take(sample) {
        let mut all = new_m.nearest_on(Some(1), &s.need, -2.0, usize::MAX, |_| true);
        let count = all.by_ref().count();
        assert_eq!(count, rows);
        worst = worst.max(all.stats().max_deviations);
    }
    println!(
        "first-pass error over all rows of {sample} needs ({} pairs): largest {worst:.2} σ (the margin is {} σ); \
         rescored rows past {} σ in this run: {}",
        sample * rows,
        agentdir_meaning::MARGIN_SIGMAS,
        agentdir_meaning::SURPRISE_SIGMAS,
        agentdir_meaning::surprises()
    );

    let old_f = |s: &Search| old_rule(&old_m, s).len();
    let new_f = |s: &Search| new_rule(&new_m, s, None).0.len();
    let new_one = |s: &Search| new_rule(&new_m, s, Some(1)).0.len();
    let one_client = searches.len().min(if rows >= 500_000 { 100 } else { 200 });
    let per16 = if rows >= 500_000 { 8 } else { 25 };
    type Row3 = (&'static str, usize, usize);
    let plans: [Row3; 2] = [("1 client", 1, one_client), ("16 clients", CLIENTS, per16)];
    println!("| rows | load | search | p50 ms | p99 ms | CPU ms/search | searches/s |");
    println!("|---|---|---|---|---|---|---|");
    for (label, clients, per) in plans {
        let mut sides: Vec<(&str, Vec<Run>)> = vec![("exact scan (today)", vec![]), ("nearest", vec![])];
        if clients == 1 {
            sides.push(("nearest, 1 thread", vec![]));
        }
        for round in 0..rounds {
            // Alternate which side goes first, so neither always runs on a warmer cache.
            let mut order: Vec<usize> = (0..sides.len()).collect();
            if round % 2 == 1 {
                order.reverse();
            }
            for i in order {
                let f: &(dyn Fn(&Search) -> usize + Sync) = match i {
                    0 => &old_f,
                    1 => &new_f,
                    _ => &new_one,
                };
                sides[i].1.push(run(clients, per, &searches, f));
            }
        }
        for (name, runs) in &sides {
            println!(
                "| {rows} | {label} | {name} | {:.2} | {:.2} | {:.3} | {:.0} |",
                median(runs.iter().map(Run::p50).collect()),
                median(runs.iter().map(Run::p99).collect()),
                median(runs.iter().map(Run::cpu_ms).collect()),
                median(runs.iter().map(Run::qps).collect()),
            );
        }
    }
}
