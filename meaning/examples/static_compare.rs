//! The need encoder against the full model, on the judged sets of `bench/relevance` and
//! `bench/relevance-heldout` (figures in meaning/STATIC.md):
//!
//! `cargo run --release -p agentdir-meaning --example static_compare -- [--fill THREADS]
//! [--table PATH] [--variants]`
//!
//! Profiles (the core's `profile_text`: name, tagline, capabilities, descriptions, offerings) are
//! embedded once by the full model as the server stores them (centred, int8); every agent of a
//! set is ranked by its similarity to the need alone (no words, no evidence) and the first ten
//! are scored by nDCG@10 as `bench/src/bin/relevance/metrics.rs` does, per kind of need.
//!
//! - `--table PATH`: the need encoder's table to use and keep (default: [`TABLE_FILE`] beside
//!   the pinned weights); a missing table starts empty and fills as needs use it.
//! - `--fill THREADS`: first distil the whole vocabulary on that many threads, timed, and save.
//! - `--variants`: also score the other ways of distilling, weighting, centring and storing the
//!   table (each distilled here for the tokens the needs use).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use agentdir_meaning::{
    DIM, Model, NeedEncoder, Prefix, Quantized, TABLE_FILE, built_in_weights, centred, chinese_share,
};
use serde_json::Value;

#[path = "common/calibration.rs"]
mod calibration;
#[path = "common/judged.rs"]
mod judged;
use judged::{field, profile_text};

/// The core's threshold of meaning (`src/meaning/rank.rs` `MEANING_THRESHOLD`): an agent at or
/// above it matches by meaning.
const MEANING_THRESHOLD: f32 = 0.18;
/// The kinds of need, in the order of the relevance benchmark's table.
const KINDS: [&str; 5] = ["keyword", "paraphrase", "chinese", "cross", "problem"];
/// Timed runs of each need per encoder (each need's time is the median of its runs).
const FULL_RUNS: usize = 5;
const STATIC_RUNS: usize = 21;

struct Need {
    kind: String,
    q: String,
    judged: HashMap<String, u8>,
}

struct Set {
    name: String,
    handles: Vec<String>,
    profiles: Vec<Vec<f32>>,
    needs: Vec<Need>,
}

/// The vector as the server keeps it: int8 with a scale.
fn stored(v: &[f32]) -> Vec<f32> {
    let q = Quantized::new(v);
    q.values.iter().map(|x| f32::from(*x) * q.scale).collect()
}

fn load_set(m: &Model, dir: &Path) -> Set {
    let mut files: Vec<PathBuf> =
        std::fs::read_dir(dir.join("agents")).expect("agents/").map(|e| e.expect("entry").path()).collect();
    files.sort();
    let (mut handles, mut texts) = (Vec::new(), Vec::new());
    for f in files {
        let agents: Value = serde_json::from_str(&std::fs::read_to_string(&f).expect("read")).expect("json");
        for a in agents.as_array().expect("a list of agents") {
            handles.push(field(a, "handle"));
            texts.push(profile_text(a));
        }
    }
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let profiles =
        refs.chunks(8).flat_map(|c| m.embed_passages(c).expect("embeds")).map(|v| stored(&v)).collect();
    let needs: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("needs.json")).expect("needs.json"))
            .expect("json");
    let needs = needs
        .as_array()
        .expect("a list of needs")
        .iter()
        .map(|n| Need {
            kind: field(n, "type"),
            // The server embeds the trimmed need.
            q: field(n, "q").trim().to_string(),
            judged: n["judged"]
                .as_object()
                .expect("judged")
                .iter()
                .map(|(h, g)| (h.clone(), g.as_u64().expect("a grade") as u8))
                .collect(),
        })
        .collect();
    Set { name: dir.file_name().expect("a folder").to_string_lossy().into(), handles, profiles, needs }
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn unit(mut v: Vec<f32>) -> Vec<f32> {
    let n = dot(&v, &v).sqrt();
    if n > 0.0 {
        v.iter_mut().for_each(|x| *x /= n);
    }
    v
}

/// `bench/src/bin/relevance/metrics.rs` `ndcg`.
fn ndcg(need: &Need, ranked: &[&str]) -> f64 {
    let gain = |g: u8| f64::from((1u32 << g) - 1);
    let discount = |i: usize| ((i + 2) as f64).log2();
    let grade = |h: &str| need.judged.get(h).copied().unwrap_or(0);
    let dcg = ranked.iter().take(10).enumerate().fold(0.0, |s, (i, h)| s + gain(grade(h)) / discount(i));
    let mut ideal: Vec<u8> = need.judged.values().copied().filter(|g| *g > 0).collect();
    ideal.sort_unstable_by(|a, b| b.cmp(a));
    let idcg = ideal.iter().take(10).enumerate().fold(0.0, |s, (i, g)| s + gain(*g) / discount(i));
    if idcg == 0.0 { 0.0 } else { dcg / idcg }
}

/// nDCG@10 per kind of need and overall (the last), ranking the set's agents by similarity.
fn score(set: &Set, needs: &[Vec<f32>]) -> [f64; 6] {
    let (mut sums, mut counts) = ([0f64; 6], [0usize; 6]);
    for (need, v) in set.needs.iter().zip(needs) {
        let v = stored(v);
        let mut scored: Vec<(f32, &str)> =
            set.profiles.iter().zip(&set.handles).map(|(p, h)| (dot(p, &v), h.as_str())).collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0));
        let ranked: Vec<&str> = scored.iter().take(10).map(|x| x.1).collect();
        let n = ndcg(need, &ranked);
        let k = KINDS.iter().position(|k| *k == need.kind).expect("a known kind");
        for i in [k, 5] {
            sums[i] += n;
            counts[i] += 1;
        }
    }
    std::array::from_fn(|i| sums[i] / counts[i].max(1) as f64)
}

/// One markdown row: the nDCG@10 of each set per kind and overall.
fn row(name: &str, sets: &[Set], vectors: &[Vec<Vec<f32>>]) -> String {
    let mut line = format!("| {name} |");
    for (set, v) in sets.iter().zip(vectors) {
        let s = score(set, v);
        line += &s.iter().map(|x| format!(" {x:.3} |")).collect::<String>();
    }
    line
}

fn header(sets: &[Set]) {
    let mut h = "| encoder |".to_string();
    let mut rule = "|---|".to_string();
    for set in sets {
        for k in KINDS.iter().chain(&["all"]) {
            h += &format!(" {} {k} |", if set.name.contains("heldout") { "H" } else { "M" });
            rule += "---:|";
        }
    }
    println!("{h}\n{rule}");
}

/// Median and 99th percentile of per-need times, in µs.
fn spread(mut us: Vec<f64>) -> (f64, f64) {
    us.sort_by(f64::total_cmp);
    let at = |p: f64| us[((us.len() - 1) as f64 * p).round() as usize];
    (at(0.5), at(0.99))
}

#[repr(C)]
struct Timespec {
    sec: i64,
    nsec: i64,
}

unsafe extern "C" {
    fn clock_gettime(clock: i32, ts: *mut Timespec) -> i32;
}

/// CPU time this thread has run, in ns (POSIX's thread CPU clock, 64-bit Linux): on a machine
/// shared with other work, wall time also counts the waits for a core.
fn thread_cpu_ns() -> u64 {
    const CLOCK_THREAD_CPUTIME_ID: i32 = 3;
    let mut ts = Timespec { sec: 0, nsec: 0 };
    // SAFETY: `ts` is a valid timespec for the call to write.
    if unsafe { clock_gettime(CLOCK_THREAD_CPUTIME_ID, &mut ts) } != 0 {
        return 0;
    }
    ts.sec as u64 * 1_000_000_000 + ts.nsec as u64
}

/// CPU time of the whole process (every thread), in seconds (Linux's /proc, 100 ticks a second).
fn process_cpu_s() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name (which may hold spaces) end with ')'.
    let fields: Vec<&str> = stat.rsplit(')').next().unwrap_or("").split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<f64>().ok()).unwrap_or(0.0);
    (ticks(11) + ticks(12)) / 100.0
}

/// Each need's cost in µs, wall and CPU (this thread's): the median of `rounds` runs, the
/// needs taken in turn so that each run finds the caches as other needs left them, as distinct
/// needs do.
fn time_each(texts: &[&str], rounds: usize, mut f: impl FnMut(&str)) -> (Vec<f64>, Vec<f64>) {
    let mut runs = vec![(Vec::new(), Vec::new()); texts.len()];
    for _ in 0..rounds {
        for (t, (wall, cpu)) in texts.iter().zip(runs.iter_mut()) {
            let (start, cpu_start) = (Instant::now(), thread_cpu_ns());
            f(t);
            cpu.push((thread_cpu_ns() - cpu_start) as f64 / 1e3);
            wall.push(start.elapsed().as_secs_f64() * 1e6);
        }
    }
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    runs.into_iter().map(|(wall, cpu)| (median(wall), median(cpu))).unzip()
}

/// How the similarity of needs to agents is spread: the mean for agents judged 3, 2 and 0, and
/// the share of those above the core's threshold of meaning.
fn similarity_scale(name: &str, sets: &[Set], vectors: &[Vec<Vec<f32>>]) {
    let mut by_grade: [Vec<f32>; 4] = Default::default();
    for (set, needs) in sets.iter().zip(vectors) {
        for (need, v) in set.needs.iter().zip(needs) {
            let v = stored(v);
            for (p, h) in set.profiles.iter().zip(&set.handles) {
                let g = need.judged.get(h).copied().unwrap_or(0) as usize;
                by_grade[g].push(dot(p, &v));
            }
        }
    }
    let mut line = format!("| {name} |");
    for g in [3, 2, 1, 0] {
        let s = &by_grade[g];
        let mean = s.iter().sum::<f32>() / s.len() as f32;
        let above = s.iter().filter(|x| **x >= MEANING_THRESHOLD).count() as f32 / s.len() as f32;
        line += &format!(" {mean:.3} ({:.0} %) |", above * 100.0);
    }
    println!("{line}");
}

/// Least squares of the full model's similarity on the static one over every need and agent:
/// slope, intercept, correlation.
fn fit(sets: &[Set], fast: &[Vec<Vec<f32>>], full: &[Vec<Vec<f32>>]) -> (f32, f32, f32) {
    let mut pairs = Vec::new();
    for ((set, fast), full) in sets.iter().zip(fast).zip(full) {
        for (s, f) in fast.iter().zip(full) {
            let (s, f) = (stored(s), stored(f));
            pairs.extend(set.profiles.iter().map(|p| (f64::from(dot(p, &s)), f64::from(dot(p, &f)))));
        }
    }
    let n = pairs.len() as f64;
    let (mx, my) = (pairs.iter().map(|p| p.0).sum::<f64>() / n, pairs.iter().map(|p| p.1).sum::<f64>() / n);
    let sxy = pairs.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum::<f64>();
    let sxx = pairs.iter().map(|p| (p.0 - mx).powi(2)).sum::<f64>();
    let syy = pairs.iter().map(|p| (p.1 - my).powi(2)).sum::<f64>();
    let a = sxy / sxx;
    ((a) as f32, (my - a * mx) as f32, (sxy / (sxx * syy).sqrt()) as f32)
}

/// Needs encoded a second by `threads` threads, each going through `texts` over and over for
/// about two seconds.
fn throughput(texts: &[&str], threads: usize, encode: &(dyn Fn(&str) + Sync)) -> f64 {
    let start = Instant::now();
    let done: usize = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|i| {
                s.spawn(move || {
                    let mut n = 0;
                    while start.elapsed().as_secs_f64() < 2.0 {
                        encode(texts[(n * threads + i) % texts.len()]);
                        n += 1;
                    }
                    n
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().expect("a worker")).sum()
    });
    done as f64 / start.elapsed().as_secs_f64()
}

/// The share of grade-0 pairs and of grade-2-or-3 pairs at or above `threshold`.
fn shares(sets: &[Set], vectors: &[Vec<Vec<f32>>], threshold: f32) -> (f32, f32) {
    let (mut zero, mut zero_above, mut fit, mut fit_above) = (0usize, 0usize, 0usize, 0usize);
    for (set, needs) in sets.iter().zip(vectors) {
        for (need, v) in set.needs.iter().zip(needs) {
            let v = stored(v);
            for (p, h) in set.profiles.iter().zip(&set.handles) {
                let above = usize::from(dot(p, &v) >= threshold);
                match need.judged.get(h).copied().unwrap_or(0) {
                    0 => (zero, zero_above) = (zero + 1, zero_above + above),
                    1 => {}
                    _ => (fit, fit_above) = (fit + 1, fit_above + above),
                }
            }
        }
    }
    (zero_above as f32 / zero as f32, fit_above as f32 / fit as f32)
}

fn main() {
    let mut table_path = None;
    let mut fill_threads = None;
    let mut variants = false;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--table" => table_path = args.next().map(PathBuf::from),
            "--fill" => fill_threads = args.next().and_then(|n| n.parse::<usize>().ok()),
            "--variants" => variants = true,
            other => panic!("unknown argument {other}"),
        }
    }
    let weights = built_in_weights().expect("this build has the weights");
    let table_path = table_path.unwrap_or_else(|| weights.with_file_name(TABLE_FILE));
    let m = Model::load(weights).expect("the model loads");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../bench");
    let start = Instant::now();
    let sets = [load_set(&m, &root.join("relevance")), load_set(&m, &root.join("relevance-heldout"))];
    eprintln!("profiles of both sets embedded in {:.1} s", start.elapsed().as_secs_f64());

    let encoder = match NeedEncoder::load(&m, &table_path) {
        Ok(e) => e,
        Err(e) => {
            eprintln!("no table at {} ({e}): starting empty", table_path.display());
            NeedEncoder::new(&m)
        }
    };
    println!(
        "Table: {} of {} tokens distilled.\n",
        encoder.vocab_len() - encoder.missing(),
        encoder.vocab_len()
    );
    if let Some(threads) = fill_threads {
        let missing = encoder.missing();
        let (start, cpu) = (Instant::now(), process_cpu_s());
        let complete = encoder.fill(&m, threads, &AtomicBool::new(false)).expect("distils");
        let (s, cpu) = (start.elapsed().as_secs_f64(), process_cpu_s() - cpu);
        println!(
            "Distilled {missing} tokens on {threads} thread(s) in {s:.1} s of wall time and {cpu:.1} s of CPU time \
             ({:.0} µs of CPU a token); complete: {complete}.\n",
            cpu * 1e6 / missing.max(1) as f64,
        );
        let start = Instant::now();
        encoder.save(&table_path).expect("saves the table");
        let saved = start.elapsed().as_secs_f64();
        let start = Instant::now();
        NeedEncoder::load(&m, &table_path).expect("loads the table");
        println!(
            "Saved to {} in {saved:.2} s ({} bytes); loaded again in {:.2} s.\n",
            table_path.display(),
            std::fs::metadata(&table_path).map(|f| f.len()).unwrap_or(0),
            start.elapsed().as_secs_f64()
        );
    }

    let full: Vec<Vec<Vec<f32>>> =
        sets.iter().map(|s| s.needs.iter().map(|n| m.embed_query(&n.q).expect("embeds")).collect()).collect();
    let fast: Vec<Vec<Vec<f32>>> = sets
        .iter()
        .map(|s| s.needs.iter().map(|n| encoder.embed(&m, &n.q).expect("embeds")).collect())
        .collect();
    if fill_threads.is_none() && !table_path.exists() {
        // Keeps what the needs distilled for the next run.
        let _ = encoder.save(&table_path);
    }

    println!("## nDCG@10 by meaning alone (M: bench/relevance, H: bench/relevance-heldout)\n");
    header(&sets);
    println!("{}", row("full e5 need (reference)", &sets, &full));
    println!("{}", row("static need (NeedEncoder)", &sets, &fast));
    let uncentred: Vec<Vec<Vec<f32>>> = sets
        .iter()
        .map(|s| s.needs.iter().flat_map(|n| m.embed_raw(&[n.q.as_str()], true).expect("embeds")).collect())
        .collect();
    println!("{}", row("full e5 need, not centred (for scale)", &sets, &uncentred));
    let agreement: Vec<f32> =
        full.iter().flatten().zip(fast.iter().flatten()).map(|(a, b)| dot(a, b)).collect();
    println!(
        "\nCosine of a need's static vector to its full vector: mean {:.3}, lowest {:.3}.\n",
        agreement.iter().sum::<f32>() / agreement.len() as f32,
        agreement.iter().copied().fold(f32::INFINITY, f32::min)
    );

    println!("## Similarity to the agents judged 3, 2, 1 and 0 (share at or above {MEANING_THRESHOLD})\n");
    println!("| encoder | grade 3 | grade 2 | grade 1 | grade 0 |\n|---|---:|---:|---:|---:|");
    similarity_scale("full e5", &sets, &full);
    similarity_scale("static", &sets, &fast);
    let (grade0_full, _) = shares(&sets, &full, MEANING_THRESHOLD);
    let matched = (0..=400)
        .map(|i| i as f32 / 1000.0)
        .find(|t| shares(&sets, &fast, *t).0 <= grade0_full)
        .unwrap_or(MEANING_THRESHOLD);
    let (grade0, fitting) = shares(&sets, &fast, matched);
    let (_, fitting_full) = shares(&sets, &full, MEANING_THRESHOLD);
    println!(
        "\nThe static threshold that lets as many unjudged/0 agents through as the full model's {MEANING_THRESHOLD} \
         ({:.1} %): {matched:.3}, which keeps {:.0} % of the agents judged 2 or 3 (the full model at {MEANING_THRESHOLD}: {:.0} %; grade 0 at it: {:.1} %).\n",
        grade0_full * 100.0,
        fitting * 100.0,
        fitting_full * 100.0,
        grade0 * 100.0
    );

    let (a, b, r) = fit(&sets, &fast, &full);
    println!(
        "Over every need and agent, full ≈ {a:.2} × static + {b:.3} (correlation {r:.2}): a rule of the core stated as a \
         similarity of the full model reads as ({MEANING_THRESHOLD} - {b:.3}) / {a:.2} = {:.3} for static needs.",
        (MEANING_THRESHOLD - b) / a
    );

    println!("\n## Cost of encoding a need, one thread (µs)\n");
    println!(
        "Per need the median of its runs (the needs taken in turn, so that caches hold what other needs left); \
         wall time and this thread's CPU time.\n"
    );
    let texts: Vec<&str> = sets.iter().flat_map(|s| s.needs.iter().map(|n| n.q.as_str())).collect();
    let (full_wall, full_cpu) = time_each(&texts, FULL_RUNS, |t| drop(m.embed_query(t).expect("embeds")));
    let (static_wall, static_cpu) =
        time_each(&texts, STATIC_RUNS, |t| drop(encoder.embed(&m, t).expect("embeds")));
    let (token_wall, token_cpu) =
        time_each(&texts, STATIC_RUNS, |t| drop(m.tokens(t, Prefix::None).expect("tokens")));
    println!(
        "| encoder | median (wall) | p99 (wall) | median (CPU) | p99 (CPU) |\n|---|---:|---:|---:|---:|"
    );
    for (name, wall, cpu) in [
        ("full e5", full_wall, full_cpu),
        ("static", static_wall, static_cpu),
        ("(static: of which tokenizing)", token_wall, token_cpu),
    ] {
        let ((wm, wp), (cm, cp)) = (spread(wall), spread(cpu));
        println!("| {name} | {wm:.1} | {wp:.1} | {cm:.1} | {cp:.1} |");
    }
    println!("\n{} needs; tokens per need (with prefix and specials): median {}.\n", texts.len(), {
        let mut n: Vec<usize> = texts.iter().map(|t| m.token_count(t, true).expect("counts")).collect();
        n.sort_unstable();
        n[n.len() / 2]
    });
    let long = |s: &str| -> String { s.repeat(1_500 / s.chars().count() + 1).chars().take(1_500).collect() };
    println!(
        "| a 1,500-character need | tokens | full e5 (CPU µs) | static (CPU µs) |\n|---|---:|---:|---:|"
    );
    for (name, text) in [
        (
            "English",
            long("I run a small online shop and need someone to translate our product pages into Chinese. "),
        ),
        ("Chinese", long("我在网上开了一家小店，需要有人把我们的商品页面翻译成英文并做好本地化。")),
    ] {
        let (_, full) = time_each(&[text.as_str()], FULL_RUNS, |t| drop(m.embed_query(t).expect("embeds")));
        let (_, fast) =
            time_each(&[text.as_str()], STATIC_RUNS, |t| drop(encoder.embed(&m, t).expect("embeds")));
        println!(
            "| {name} | {} | {:.0} | {:.0} |",
            m.token_count(&text, true).expect("counts"),
            full[0],
            fast[0]
        );
    }
    println!();

    println!(
        "| distinct needs a second, every thread encoding the 197 needs over and over | 1 thread | 2 threads |\n|---|---:|---:|"
    );
    for (name, per_need) in [
        ("full e5", &(|t: &str| drop(m.embed_query(t).expect("embeds"))) as &(dyn Fn(&str) + Sync)),
        ("static", &|t: &str| drop(encoder.embed(&m, t).expect("embeds"))),
    ] {
        let rates: Vec<f64> = [1, 2].iter().map(|threads| throughput(&texts, *threads, per_need)).collect();
        println!("| {name} | {:.0} | {:.0} |", rates[0], rates[1]);
    }
    println!();

    let lab = Lab::new(&m, &sets);
    let product = Spec {
        reading: Reading::BareOwn,
        weight: Weight::Sif(1e-4),
        centring: Centring::Static,
        rows: Rows::Int8,
    };
    let same = lab.vectors(&m, &sets, product, &|_| true);
    let worst = same
        .iter()
        .flatten()
        .zip(fast.iter().flatten())
        .map(|(a, b)| dot(a, b))
        .fold(f32::INFINITY, f32::min);
    println!("(This tool's own sum over the same rows agrees with NeedEncoder: lowest cosine {worst:.6}.)\n");

    println!("## A table of part of the vocabulary (ids past the cut not distilled)\n");
    println!(
        "Left out: the need is the mean of its other tokens. Full model: a need with a token past the cut is embedded by the full model.\n"
    );
    header(&sets);
    for cut in [50_000u32, 100_000, 150_000, 200_000] {
        let left_out = lab.vectors(&m, &sets, product, &|id| id < cut);
        let mut touched = 0;
        let fallback: Vec<Vec<Vec<f32>>> = sets
            .iter()
            .zip(&full)
            .zip(&left_out)
            .map(|((s, full), partial)| {
                s.needs
                    .iter()
                    .zip(full)
                    .zip(partial)
                    .map(|((n, f), p)| {
                        if m.tokens(&n.q, Prefix::None).expect("tokens").iter().any(|id| *id >= cut) {
                            touched += 1;
                            f.clone()
                        } else {
                            p.clone()
                        }
                    })
                    .collect()
            })
            .collect();
        println!("{}", row(&format!("ids < {cut}: left out"), &sets, &left_out));
        println!(
            "{}",
            row(&format!("ids < {cut}: full model for {touched} of {} needs", texts.len()), &sets, &fallback)
        );
    }

    if variants {
        println!("\n## Variants (int8 rows, own centres unless said)\n");
        lab.grid(&m, &sets, &full);
    }
}

/// Static centring as the encoder does it (`NeedEncoder::embed`), from the calibration needs'
/// raw vectors under `raw`.
fn static_centres(raw: &dyn Fn(&str) -> Vec<f32>) -> (Vec<f32>, Vec<f32>) {
    let (en, zh) = calibration::calibration_needs();
    let mean = |texts: &[String]| {
        let mut m = vec![0f32; DIM];
        for t in texts {
            for (m, x) in m.iter_mut().zip(raw(t)) {
                *m += x / texts.len() as f32;
            }
        }
        m
    };
    (mean(&en), mean(&zh))
}

fn centre_with(v: Vec<f32>, text: &str, en: &[f32], zh: &[f32]) -> Vec<f32> {
    if v.iter().all(|x| *x == 0.0) {
        return v;
    }
    let w = chinese_share(text);
    unit(v.iter().enumerate().map(|(d, x)| x - (1.0 - w) * en[d] - w * zh[d]).collect())
}

/// The last hidden states of one token read four ways.
struct States {
    /// `<s> t </s>`: the token's own position (the product), and the mean of the three.
    bare_own: Vec<f32>,
    bare_mean: Vec<f32>,
    /// `<s> query: t </s>`: the token's own position, and the mean of all (what the full model
    /// gives the one-token need).
    query_own: Vec<f32>,
    query_mean: Vec<f32>,
    /// The tokenizer's log-probability of the piece.
    score: f32,
}

fn distil_states(m: &Model, ids: &[u32], out: &mut HashMap<u32, States>) {
    let vocab = m.vocabulary();
    let sp = vocab.specials();
    let with = m.tokens("a", Prefix::Query).expect("tokens");
    let prefix = &with[..with.len() - m.tokens("a", Prefix::None).expect("tokens").len()];
    let mean = |rows: &[f32]| -> Vec<f32> {
        let n = rows.len() / DIM;
        (0..DIM).map(|d| (0..n).map(|r| rows[r * DIM + d]).sum::<f32>() / n as f32).collect()
    };
    let ql = prefix.len() + 3;
    for chunk in ids.chunks(agentdir_meaning::DISTIL_BATCH) {
        let bare: Vec<Vec<u32>> = chunk.iter().map(|t| vec![sp.bos, *t, sp.eos]).collect();
        let query: Vec<Vec<u32>> =
            chunk.iter().map(|t| [&[sp.bos], prefix, &[*t, sp.eos]].concat()).collect();
        let bh = m.hidden_states(&bare.iter().map(Vec::as_slice).collect::<Vec<_>>()).expect("runs");
        let qh = m.hidden_states(&query.iter().map(Vec::as_slice).collect::<Vec<_>>()).expect("runs");
        for (i, t) in chunk.iter().enumerate() {
            let b = &bh[i * 3 * DIM..(i + 1) * 3 * DIM];
            let q = &qh[i * ql * DIM..(i + 1) * ql * DIM];
            out.insert(
                *t,
                States {
                    bare_own: b[DIM..2 * DIM].to_vec(),
                    bare_mean: mean(b),
                    query_own: q[(ql - 2) * DIM..(ql - 1) * DIM].to_vec(),
                    query_mean: mean(q),
                    score: vocab.piece(*t).expect("a piece").1,
                },
            );
        }
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Reading {
    BareOwn,
    BareMean,
    QueryOwn,
    QueryMean,
    QueryMeanAndBareOwn,
}

#[derive(Clone, Copy, PartialEq)]
enum Weight {
    Uniform,
    /// model2vec's: log of the rank (ids are in frequency order).
    Zipf,
    Sif(f32),
}

#[derive(Clone, Copy, PartialEq)]
enum Centring {
    /// Own centres from the calibration needs (the product).
    Static,
    /// Own centres from the 48 sentences of `calibrate.rs`.
    StaticPairs,
    /// The full model's query centres (`centres.rs`), as full vectors get.
    FullQuery,
    None,
}

#[derive(Clone, Copy, PartialEq)]
enum Rows {
    F32,
    /// int8 with a scale per row (the product).
    Int8,
    /// 4-bit with a scale per 32 (as the model's own weights).
    Q4,
}

fn stored_row(v: &[f32], rows: Rows) -> Vec<f32> {
    match rows {
        Rows::F32 => v.to_vec(),
        Rows::Int8 => stored(v),
        Rows::Q4 => v
            .chunks(32)
            .flat_map(|b| {
                let max = b.iter().fold(0f32, |m, x| m.max(x.abs()));
                let d = if max > 0.0 { max / 7.0 } else { 1.0 };
                b.iter().map(move |x| (x / d).round().clamp(-8.0, 7.0) * d)
            })
            .collect(),
    }
}

#[derive(Clone, Copy)]
struct Spec {
    reading: Reading,
    weight: Weight,
    centring: Centring,
    rows: Rows,
}

/// Every token the needs and the calibration use, read four ways.
struct Lab {
    states: HashMap<u32, States>,
    pairs: Vec<String>,
}

impl Lab {
    fn new(m: &Model, sets: &[Set]) -> Lab {
        let (en, zh) = calibration::calibration_needs();
        let pairs_src = include_str!("calibrate.rs");
        let pairs: Vec<String> = pairs_src[pairs_src.find("const PAIRS").expect("PAIRS")..]
            .split("];")
            .next()
            .expect("PAIRS")
            .split('"')
            .skip(1)
            .step_by(2)
            .map(String::from)
            .collect();
        let mut ids: Vec<u32> = sets
            .iter()
            .flat_map(|s| s.needs.iter().map(|n| n.q.clone()))
            .chain(en)
            .chain(zh)
            .chain(pairs.iter().cloned())
            .flat_map(|t| m.tokens(&t, Prefix::None).expect("tokens"))
            .collect();
        ids.sort_unstable();
        ids.dedup();
        let start = Instant::now();
        let mut states = HashMap::new();
        distil_states(m, &ids, &mut states);
        eprintln!("{} tokens distilled four ways in {:.1} s", ids.len(), start.elapsed().as_secs_f64());
        Lab { states, pairs }
    }

    /// The need's raw static vector under `spec`, of its tokens that `keep` keeps.
    fn raw(&self, m: &Model, spec: Spec, keep: &dyn Fn(u32) -> bool, text: &str) -> Vec<f32> {
        let mut acc = vec![0f32; DIM];
        for id in m.tokens(text, Prefix::None).expect("tokens").into_iter().filter(|id| keep(*id)) {
            let s = &self.states[&id];
            let v = match spec.reading {
                Reading::BareOwn => unit(s.bare_own.clone()),
                Reading::BareMean => unit(s.bare_mean.clone()),
                Reading::QueryOwn => unit(s.query_own.clone()),
                Reading::QueryMean => unit(s.query_mean.clone()),
                Reading::QueryMeanAndBareOwn => unit(s.query_mean.clone())
                    .iter()
                    .zip(unit(s.bare_own.clone()))
                    .map(|(a, b)| a + b)
                    .collect(),
            };
            let w = match spec.weight {
                Weight::Uniform => 1.0,
                Weight::Zipf => (id as f32 + 1.0).ln(),
                Weight::Sif(a) => a / (a + s.score.exp()),
            };
            for (x, r) in acc.iter_mut().zip(stored_row(&v, spec.rows)) {
                *x += w * r;
            }
        }
        unit(acc)
    }

    /// The needs' vectors of every set under `spec`.
    fn vectors(&self, m: &Model, sets: &[Set], spec: Spec, keep: &dyn Fn(u32) -> bool) -> Vec<Vec<Vec<f32>>> {
        let all = |_: u32| true;
        let (ce, cz) = match spec.centring {
            Centring::Static => static_centres(&|t| self.raw(m, spec, &all, t)),
            Centring::StaticPairs => {
                let mean = |zh: bool| {
                    let pick: Vec<&String> =
                        self.pairs.iter().filter(|t| (chinese_share(t) > 0.5) == zh).collect();
                    let mut c = vec![0f32; DIM];
                    for t in &pick {
                        for (c, x) in c.iter_mut().zip(self.raw(m, spec, &all, t)) {
                            *c += x / pick.len() as f32;
                        }
                    }
                    c
                };
                (mean(false), mean(true))
            }
            Centring::FullQuery | Centring::None => (vec![0.0; DIM], vec![0.0; DIM]),
        };
        sets.iter()
            .map(|s| {
                s.needs
                    .iter()
                    .map(|n| {
                        let v = self.raw(m, spec, keep, &n.q);
                        match spec.centring {
                            Centring::FullQuery => centred(v, &n.q, true),
                            Centring::None => v,
                            Centring::Static | Centring::StaticPairs => centre_with(v, &n.q, &ce, &cz),
                        }
                    })
                    .collect()
            })
            .collect()
    }

    fn grid(&self, m: &Model, sets: &[Set], full: &[Vec<Vec<f32>>]) {
        let run = |name: &str, spec: Spec| {
            let vectors = self.vectors(m, sets, spec, &|_| true);
            let agreement: Vec<f32> =
                full.iter().flatten().zip(vectors.iter().flatten()).map(|(a, b)| dot(a, b)).collect();
            println!(
                "{} {:.3} |",
                row(name, sets, &vectors),
                agreement.iter().sum::<f32>() / agreement.len() as f32
            );
        };
        let mut h = String::new();
        let mut rule = String::new();
        for set in sets {
            for k in KINDS.iter().chain(&["all"]) {
                h += &format!(" {} {k} |", if set.name.contains("heldout") { "H" } else { "M" });
                rule += "---:|";
            }
        }
        println!("| variant |{h} cos to full |\n|---|{rule}---:|");
        let readings = [
            ("bare, own position", Reading::BareOwn),
            ("bare, mean", Reading::BareMean),
            ("query:, own position", Reading::QueryOwn),
            ("query:, mean", Reading::QueryMean),
            ("query: mean + bare own", Reading::QueryMeanAndBareOwn),
        ];
        let weights = [
            ("uniform", Weight::Uniform),
            ("zipf", Weight::Zipf),
            ("sif 1e-3", Weight::Sif(1e-3)),
            ("sif 1e-4", Weight::Sif(1e-4)),
            ("sif 1e-5", Weight::Sif(1e-5)),
        ];
        for (rname, reading) in readings {
            for (wname, weight) in weights {
                let spec = Spec { reading, weight, centring: Centring::Static, rows: Rows::Int8 };
                run(&format!("{rname}, {wname}"), spec);
            }
        }
        let product = Spec {
            reading: Reading::BareOwn,
            weight: Weight::Sif(1e-4),
            centring: Centring::Static,
            rows: Rows::Int8,
        };
        for (cname, centring) in [
            ("own centres from the 48 pairs of calibrate.rs", Centring::StaticPairs),
            ("the full model's query centres", Centring::FullQuery),
            ("not centred", Centring::None),
        ] {
            run(&format!("bare own, sif 1e-4, {cname}"), Spec { centring, ..product });
        }
        for (sname, rows) in [("f32 rows", Rows::F32), ("4-bit rows", Rows::Q4)] {
            run(&format!("bare own, sif 1e-4, {sname}"), Spec { rows, ..product });
        }
    }
}
