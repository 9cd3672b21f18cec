//! Under load: the judged needs searched from one client while N connections flood the server
//! with distinct needs from many networks (`--load 0,2,16,64`), and the quick encoder's table
//! the servers start with (`--quick`, `--quick-table`).
//!
//! Every server runs behind a trusted proxy (127.0.0.1), as a server behind a load balancer
//! does: the judged client is `192.0.2.1` in `X-Forwarded-For`; each flood search names a
//! random address of `10.0.0.0/8`, so the flood comes from ~65,000 /24 networks, each with a
//! share of its own. Each pass runs on a fresh server, so no need is remembered from another.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

use serde_json::Value;

use super::Error;

/// The judged client's address, behind the trusted proxy.
pub const JUDGED_CLIENT: &str = "192.0.2.1";

/// What the flood did while the judged needs were searched.
#[derive(Default, Clone)]
pub struct Flood {
    pub connections: usize,
    pub searches: u64,
    pub seconds: f64,
    /// Answers by status, and the `200`s by `matched_by`.
    pub statuses: BTreeMap<u16, u64>,
    pub matched: BTreeMap<String, u64>,
}

/// One connection's answers by status, and its `200`s by `matched_by`.
type Tally = (BTreeMap<u16, u64>, BTreeMap<String, u64>);

/// A running flood; `stop` ends it and tells what it did.
pub struct Running {
    stop: Arc<AtomicBool>,
    started: Instant,
    connections: usize,
    tasks: Vec<tokio::task::JoinHandle<Tally>>,
}

/// Starts `connections` connections that each search a new need, from a new address, back to
/// back.
pub fn start(http: &reqwest::Client, base: &str, connections: usize) -> Running {
    let stop = Arc::new(AtomicBool::new(false));
    let seed = AtomicU64::new(0x9e37_79b9_7f4a_7c15);
    let tasks = (0..connections)
        .map(|c| {
            let (http, base, stop) = (http.clone(), base.to_owned(), stop.clone());
            let mut rng = Rng(seed.fetch_add(0x2545_f491_4f6c_dd1d * (c as u64 + 1), Ordering::Relaxed) | 1);
            tokio::spawn(async move {
                let mut statuses = BTreeMap::new();
                let mut matched = BTreeMap::new();
                while !stop.load(Ordering::Relaxed) {
                    let need = rng.need();
                    let client = format!("10.{}.{}.{}", rng.below(256), rng.below(256), 1 + rng.below(254));
                    let answer = http
                        .get(format!("{base}/api/agents"))
                        .query(&[("q", need.as_str()), ("limit", "10")])
                        .header("x-forwarded-for", client)
                        .send()
                        .await;
                    let Ok(answer) = answer else {
                        *statuses.entry(0).or_default() += 1;
                        continue;
                    };
                    let status = answer.status().as_u16();
                    *statuses.entry(status).or_default() += 1;
                    let v: Value = answer.json().await.unwrap_or(Value::Null);
                    if let Some(m) = v["matched_by"].as_str() {
                        *matched.entry(m.to_owned()).or_default() += 1;
                    }
                }
                (statuses, matched)
            })
        })
        .collect();
    Running { stop, started: Instant::now(), connections, tasks }
}

impl Running {
    pub async fn stop(self) -> Flood {
        self.stop.store(true, Ordering::Relaxed);
        let seconds = self.started.elapsed().as_secs_f64();
        let mut flood = Flood { connections: self.connections, seconds, ..Flood::default() };
        for task in self.tasks {
            if let Ok((statuses, matched)) = task.await {
                for (k, v) in statuses {
                    *flood.statuses.entry(k).or_default() += v;
                    flood.searches += v;
                }
                for (k, v) in matched {
                    *flood.matched.entry(k).or_default() += v;
                }
            }
        }
        flood
    }
}

/// A need nobody asked before: a few words of trades, things and situations, in English or
/// Chinese, in one of a few shapes.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn pick<'a>(&mut self, words: &[&'a str]) -> &'a str {
        words[self.below(words.len() as u64) as usize]
    }

    fn need(&mut self) -> String {
        const WHAT: &[&str] = &[
            "translation",
            "subtitles",
            "contract review",
            "tax filing",
            "logo design",
            "data cleaning",
            "web scraping",
            "SEO audit",
            "podcast editing",
            "invoice OCR",
            "code review",
            "unit tests",
            "market research",
            "resume writing",
            "video captions",
            "legal advice",
            "bookkeeping",
            "customer support",
            "social media posts",
            "product photos",
            "price monitoring",
            "UX review",
            "security audit",
            "database tuning",
            "API integration",
            "email campaigns",
            "grant writing",
            "patent search",
            "voice over",
            "illustration",
            "3D modelling",
            "meeting notes",
        ];
        const FOR: &[&str] = &[
            "my startup",
            "a small shop",
            "our app",
            "a podcast",
            "a research lab",
            "my thesis",
            "a restaurant",
            "an online store",
            "a nonprofit",
            "our team",
            "a game studio",
            "a law firm",
        ];
        const ZH: &[&str] = &[
            "翻译",
            "字幕",
            "合同审阅",
            "报税",
            "标志设计",
            "数据清洗",
            "网页抓取",
            "代码评审",
            "市场调研",
            "记账",
            "客服",
            "短视频文案",
            "产品图片",
            "安全审计",
            "专利检索",
            "配音",
            "插画",
            "会议纪要",
        ];
        let n = self.below(1_000_000);
        match self.below(4) {
            0 => format!("{} and {} for {} {n}", self.pick(WHAT), self.pick(WHAT), self.pick(FOR)),
            1 => format!("找人做{}和{} {n}", self.pick(ZH), self.pick(ZH)),
            2 => format!(
                "I need someone who can help with {} for {}, then {} {n}",
                self.pick(WHAT),
                self.pick(FOR),
                self.pick(WHAT)
            ),
            _ => format!("{} {} {} {n}", self.pick(WHAT), self.pick(ZH), self.pick(FOR)),
        }
    }
}

/// The quick encoder's whole table at `path`, distilled now on every core when it is not there
/// yet (a few minutes once; later runs reuse the file).
pub fn ensure_table(path: &Path) -> Result<(), Error> {
    if path.is_file() {
        return Ok(());
    }
    let weights = agentdir_meaning::built_in_weights().ok_or("this build has no model")?;
    let model = agentdir_meaning::Model::load(weights)?;
    let encoder = agentdir_meaning::NeedEncoder::new(&model);
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    eprintln!("relevance: distilling the quick encoder's table on {threads} threads into {}", path.display());
    let started = Instant::now();
    let stop = AtomicBool::new(false);
    if !encoder.fill(&model, threads, &stop)? {
        return Err("the quick encoder's table was not completed".into());
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    encoder.save(path)?;
    eprintln!("relevance: table distilled in {:.0} s", started.elapsed().as_secs_f64());
    Ok(())
}

/// A fresh data dir holding a copy of the table.
pub fn data_dir_with(table: &Path) -> Result<PathBuf, Error> {
    let dir = std::env::temp_dir().join(format!(
        "agentdir-relevance-{}-{}",
        std::process::id(),
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos())
    ));
    std::fs::create_dir_all(&dir)?;
    std::fs::copy(table, dir.join(agentdir_meaning::TABLE_FILE))?;
    Ok(dir)
}
