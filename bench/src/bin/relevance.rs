//! Relevance benchmark: how well `GET /api/agents?q=` finds the agents that meet a need, on a
//! judged set (`bench/relevance/`: realistic agents in English, Chinese or both, needs of twelve
//! kinds, made-up ones among them whose right answer is an empty page, grades 0-3 given by
//! reading what each agent does). One release server per search
//! mode (`words`, `meaning`, `combined`), each over a fresh data dir seeded with the same
//! agents and evidence; every need runs as `q` with `limit=10`; nDCG@10, Recall@10 and MRR
//! per kind of need print side by side for the three modes, with the trust measures (stuffed
//! sign-ups against verified agents, evidence order among equal fits).
//!
//! A build whose `serve` has no `--search-mode` runs words only and says so.
//!
//! ```text
//! cargo run --release -p agentdir-bench --bin relevance -- [OPTIONS]
//!   --set DIR        the judged set (default: bench/relevance); another set in the same
//!                    format runs the same way
//!   --modes LIST     comma-separated modes to run (default: words,meaning,combined)
//!   --per-need       print each need's nDCG@10 per mode
//!   --pool           print the unjudged agents each mode puts in a need's first ten, to
//!                    read and judge (how the set's judgements are kept complete)
//!   --show IDS       print the first page of these needs (comma-separated ids) per mode,
//!                    each agent with its grade
//!   --stuffed N      a spam wave: register each keyword-stuffed agent N times (default 1)
//!   --load LIST      under load (combined mode): for each N of the comma-separated list (e.g.
//!                    0,2,16,64), a fresh server, the judged needs searched from one client
//!                    while N connections flood it with distinct needs from many networks;
//!                    nDCG@10 per N, and how each search was matched (relevance/load.rs)
//!   --quick          every need read by the quick encoder (a share of 0 tokens): its quality,
//!                    and the thresholds of its similarities
//!   --quick-table P  the quick encoder's whole table the servers start with (default:
//!                    need-encoder.table in the target dir; distilled first when missing)
//! ```

// A binary's root looks for modules beside it; these live in a folder named after the binary.
#[path = "relevance/judged.rs"]
mod judged;
#[path = "relevance/load.rs"]
mod load;
#[path = "relevance/metrics.rs"]
mod metrics;
#[path = "relevance/report.rs"]
mod report;
#[path = "relevance/seed.rs"]
mod seed;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

use agentdir_bench::{http_client, server_binary, start_server};
use serde_json::Value;

use judged::JudgedSet;

type Error = Box<dyn std::error::Error + Send + Sync>;

/// A search mode of `agentdir serve --search-mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Words only: no model.
    Words,
    /// Vectors only.
    Meaning,
    /// What the product does.
    Combined,
}

impl Mode {
    pub const ALL: [Mode; 3] = [Mode::Words, Mode::Meaning, Mode::Combined];

    pub fn name(self) -> &'static str {
        match self {
            Mode::Words => "words",
            Mode::Meaning => "meaning",
            Mode::Combined => "combined",
        }
    }
}

struct Options {
    set: PathBuf,
    modes: Vec<Mode>,
    per_need: bool,
    pool: bool,
    show: Vec<String>,
    stuffed: usize,
    load: Option<Vec<usize>>,
    quick: bool,
    quick_table: PathBuf,
}

fn options() -> Result<Options, Error> {
    let mut o = Options {
        set: PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/relevance")),
        modes: Mode::ALL.to_vec(),
        per_need: false,
        pool: false,
        show: Vec::new(),
        stuffed: 1,
        load: None,
        quick: false,
        quick_table: PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../target/need-encoder.table")),
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--set" => o.set = value()?.into(),
            "--modes" => {
                o.modes = value()?
                    .split(',')
                    .map(|m| {
                        Mode::ALL
                            .into_iter()
                            .find(|x| x.name() == m.trim())
                            .ok_or_else(|| format!("--modes takes words, meaning and combined, not {m}"))
                    })
                    .collect::<Result<_, _>>()?
            }
            "--per-need" => o.per_need = true,
            "--pool" => o.pool = true,
            "--stuffed" => o.stuffed = value()?.parse::<usize>()?.max(1),
            "--show" => o.show = value()?.split(',').map(|id| id.trim().to_owned()).collect(),
            "--load" => {
                o.load =
                    Some(value()?.split(',').map(|n| n.trim().parse::<usize>()).collect::<Result<_, _>>()?)
            }
            "--quick" => o.quick = true,
            "--quick-table" => o.quick_table = value()?.into(),
            "-h" | "--help" => {
                println!("see the header of bench/src/bin/relevance.rs for the options");
                std::process::exit(0);
            }
            other => return Err(format!("unknown option {other}").into()),
        }
    }
    Ok(o)
}

/// What one mode's server answered.
pub struct ModeRun {
    pub mode: Mode,
    /// Per need (in the set's order), the handles of the first page, best first.
    pub ranked: Vec<Vec<String>>,
    pub seed_seconds: f64,
    pub query_ms: f64,
    /// What `/readyz` says about search, for the record.
    pub readiness: String,
    /// How the judged searches were matched (`matched_by`), and how many.
    pub matched: BTreeMap<String, usize>,
    /// The flood beside them, under load.
    pub flood: Option<load::Flood>,
}

/// How one server of a run is set up beside its mode.
#[derive(Clone, Copy)]
struct Pass<'a> {
    /// Connections flooding it while the judged needs are searched.
    load: usize,
    /// Every need read by the quick encoder.
    quick: bool,
    table: &'a std::path::Path,
}

/// Why a mode has no figures.
pub struct Skipped {
    pub mode: Mode,
    pub why: String,
}

#[tokio::main]
async fn main() {
    if let Err(e) = run().await {
        eprintln!("relevance benchmark failed: {e}");
        std::process::exit(1);
    }
}

async fn run() -> Result<(), Error> {
    let o = options()?;
    let mut set = judged::load(&o.set)?;
    set.multiply_stuffed(o.stuffed);
    if let Some(unknown) = o.show.iter().find(|id| !set.needs.iter().any(|n| &n.id == *id)) {
        return Err(format!("--show: no need {unknown} in the set").into());
    }
    let bin = server_binary()?;
    let has_modes = supports_search_modes(&bin)?;
    let site = seed::proof_site(&set)?;
    let http = http_client()?;
    load::ensure_table(&o.quick_table)?;
    if let Some(loads) = &o.load {
        let mut runs = Vec::new();
        for &n in loads {
            eprintln!("relevance: combined mode, {n} flood connections: a fresh server");
            let pass = Pass { load: n, quick: o.quick, table: &o.quick_table };
            runs.push((n, run_mode(&http, &bin, &set, &site, Mode::Combined, has_modes, pass).await?));
        }
        report::under_load(&set, &runs, &o.set, o.quick);
        return Ok(());
    }
    let mut runs = Vec::new();
    let mut skipped = Vec::new();
    for &mode in &o.modes {
        if !has_modes && mode != Mode::Words {
            skipped.push(Skipped {
                mode,
                why: "this build's `agentdir serve` has no --search-mode: it searches by words only".into(),
            });
            continue;
        }
        eprintln!(
            "relevance: {} mode: starting a server and seeding {} agents",
            mode.name(),
            set.agents.len()
        );
        let pass = Pass { load: 0, quick: o.quick, table: &o.quick_table };
        match run_mode(&http, &bin, &set, &site, mode, has_modes, pass).await {
            Ok(r) => runs.push(r),
            Err(e) => skipped.push(Skipped { mode, why: e.to_string() }),
        }
    }
    if runs.is_empty() {
        let why: Vec<String> = skipped.iter().map(|s| format!("{}: {}", s.mode.name(), s.why)).collect();
        return Err(format!("no mode ran ({})", why.join("; ")).into());
    }
    report::print(&set, &runs, &skipped, &o.set);
    if o.quick {
        println!("- every need was read by the quick encoder (a share of 0 tokens)");
    }
    if o.per_need {
        report::per_need(&set, &runs);
    }
    if o.pool {
        report::pool(&set, &runs);
    }
    report::pages(&set, &runs, &o.show);
    Ok(())
}

/// Whether `agentdir serve` takes `--search-mode` (clap refuses flags it does not know).
fn supports_search_modes(bin: &std::path::Path) -> Result<bool, Error> {
    let out = Command::new(bin).args(["serve", "--help"]).output()?;
    Ok(String::from_utf8_lossy(&out.stdout).contains("--search-mode"))
}

async fn run_mode(
    http: &reqwest::Client,
    bin: &std::path::Path,
    set: &JudgedSet,
    site: &str,
    mode: Mode,
    has_modes: bool,
    pass: Pass<'_>,
) -> Result<ModeRun, Error> {
    let mut env = seed::SERVER_ENV.to_vec();
    if has_modes {
        env.push(("AGENTDIR_SEARCH_MODE", mode.name()));
    }
    // Behind a trusted proxy that names each client; the table is whole, so nothing distils.
    env.extend([("AGENTDIR_TRUSTED_PROXIES", "127.0.0.1"), ("AGENTDIR_QUICK_ENCODER_FILL", "0")]);
    if pass.quick {
        env.extend([("AGENTDIR_SHARE_TOKENS_PER_SECOND", "0"), ("AGENTDIR_SHARE_BURST_TOKENS", "0")]);
    }
    let dir = load::data_dir_with(pass.table)?;
    let mut server = start_server(Some(&dir), &env)?;
    let result = search_judged(http, bin, set, site, mode, &server, pass).await;
    server.kill();
    let _ = std::fs::remove_dir_all(&dir);
    result
}

async fn search_judged(
    http: &reqwest::Client,
    bin: &std::path::Path,
    set: &JudgedSet,
    site: &str,
    mode: Mode,
    server: &agentdir_bench::OwnServer,
    pass: Pass<'_>,
) -> Result<ModeRun, Error> {
    let (base, data_dir) = (server.base.as_str(), server.data_dir.as_path());
    let seeded = seed::seed(http, base, bin, data_dir, set, site).await?;
    let readyz: Value = http.get(format!("{base}/readyz")).send().await?.json().await.unwrap_or(Value::Null);
    let flood = (pass.load > 0).then(|| load::start(http, base, pass.load));
    if flood.is_some() {
        // The flood fills the model's places before the judged client asks.
        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    }
    let mut ranked = Vec::with_capacity(set.needs.len());
    let mut matched = BTreeMap::new();
    let start = Instant::now();
    for need in &set.needs {
        let r = http
            .get(format!("{base}/api/agents"))
            .query(&[("q", need.q.as_str()), ("limit", &metrics::DEPTH.to_string())])
            .header("x-forwarded-for", load::JUDGED_CLIENT)
            .send()
            .await?;
        let status = r.status();
        let v: Value = r.json().await.unwrap_or(Value::Null);
        if !status.is_success() {
            return Err(format!("need {}: {status}: {v}", need.id).into());
        }
        let handles = v["agents"]
            .as_array()
            .ok_or_else(|| format!("need {}: no agents in {v}", need.id))?
            .iter()
            .filter_map(|a| a["handle"].as_str().map(str::to_owned))
            .collect();
        *matched.entry(v["matched_by"].as_str().unwrap_or("none").to_owned()).or_default() += 1;
        ranked.push(handles);
    }
    let query_ms = start.elapsed().as_secs_f64() * 1000.0 / set.needs.len().max(1) as f64;
    let flood = match flood {
        Some(f) => Some(f.stop().await),
        None => None,
    };
    Ok(ModeRun {
        mode,
        ranked,
        seed_seconds: seeded.seconds,
        query_ms,
        readiness: search_readiness(&readyz),
        matched,
        flood,
    })
}

/// The scalar fields of `/readyz` that speak of search, the model or meaning, as `key=value`.
fn search_readiness(v: &Value) -> String {
    fn walk(v: &Value, path: &str, out: &mut Vec<String>) {
        match v {
            Value::Object(map) => {
                for (k, x) in map {
                    let p = if path.is_empty() { k.clone() } else { format!("{path}.{k}") };
                    walk(x, &p, out);
                }
            }
            Value::Array(_) | Value::Null => {}
            scalar => {
                let p = path.to_ascii_lowercase();
                if ["search", "model", "meaning", "embed", "vector"].iter().any(|w| p.contains(w)) {
                    out.push(format!("{path}={scalar}"));
                }
            }
        }
    }
    let mut out = Vec::new();
    walk(v, "", &mut out);
    if out.is_empty() { "nothing about search".into() } else { out.join(", ") }
}
