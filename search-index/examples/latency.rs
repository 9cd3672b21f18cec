//! Latency and size benchmark for the search index on a synthetic corpus.
//!
//! Generates 100,000 agents (English and Chinese descriptions) and 1,000,000 calls with a fixed
//! seed, rebuilds the index, then measures search latency per query class at 1 and 16
//! concurrent clients, and one-document upsert+commit latency.
//!
//! ```text
//! cargo run --release -p agentdir-search-index --example latency -- [agents] [calls] [dir]
//! ```
//! `dir` defaults to a fresh temporary directory; reusing an existing one skips the build.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use agentdir_search_index::{
    AgentDoc, AgentQuery, CallDoc, CallQuery, Change, DEFAULT_CACHE_ENTRIES, SearchIndex,
};

const EN_HEAD: &[&str] = &[
    "translation",
    "data",
    "analysis",
    "legal",
    "document",
    "python",
    "research",
    "writing",
    "design",
    "marketing",
    "support",
    "automation",
    "scraping",
    "report",
    "review",
    "code",
    "testing",
    "security",
    "audit",
    "finance",
    "accounting",
    "education",
    "medical",
    "video",
    "audio",
    "image",
    "summary",
    "localization",
    "chinese",
    "english",
    "contract",
    "api",
    "database",
    "cloud",
    "deployment",
    "monitoring",
    "chatbot",
    "customer",
    "sales",
    "email",
    "seo",
    "content",
    "social",
    "media",
    "strategy",
    "planning",
    "schedule",
    "travel",
    "recipe",
    "music",
    "game",
    "math",
    "physics",
    "chemistry",
    "biology",
    "patent",
    "compliance",
    "tax",
    "invoice",
    "spreadsheet",
    "dashboard",
    "visualization",
    "forecast",
    "model",
    "training",
    "prompt",
    "agent",
    "workflow",
    "integration",
    "crawler",
    "pdf",
    "ocr",
    "speech",
    "subtitle",
    "proofreading",
    "editing",
    "copywriting",
    "branding",
    "logo",
    "illustration",
    "animation",
    "frontend",
    "backend",
    "mobile",
    "rust",
    "javascript",
    "sql",
    "kubernetes",
    "devops",
];

const ZH_HEAD: &[&str] = &[
    "翻译",
    "数据",
    "分析",
    "法律",
    "文档",
    "研究",
    "写作",
    "设计",
    "营销",
    "客服",
    "自动化",
    "爬虫",
    "报告",
    "审核",
    "代码",
    "测试",
    "安全",
    "审计",
    "财务",
    "会计",
    "教育",
    "医疗",
    "视频",
    "音频",
    "图像",
    "摘要",
    "本地化",
    "中文",
    "英文",
    "合同",
    "接口",
    "数据库",
    "云计算",
    "部署",
    "监控",
    "机器人",
    "客户",
    "销售",
    "邮件",
    "内容",
    "社交",
    "媒体",
    "策略",
    "规划",
    "旅行",
    "音乐",
    "游戏",
    "数学",
    "物理",
    "化学",
    "生物",
    "专利",
    "合规",
    "税务",
    "发票",
    "表格",
    "可视化",
    "预测",
    "模型",
    "训练",
    "提示词",
    "工作流",
    "集成",
    "识别",
    "语音",
    "字幕",
    "校对",
    "编辑",
    "文案",
    "品牌",
    "插画",
    "动画",
    "前端",
    "后端",
    "移动",
    "运维",
];

const ZH_GLUE: &[&str] = &["我们", "提供", "专业", "高质量", "快速", "的", "和", "服务", "支持", "擅长"];
const LANGS: &[&str] = &["en", "zh", "pt-BR", "ja", "es", "fr", "de"];
const MODELS: &[&str] = &["gpt-4o", "claude-sonnet-4", "qwen-2.5-72b", "llama-3.1-70b", "deepseek-v3"];
const KINDS: &[&str] = &["seeking", "offering", "announce"];

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
    fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi - lo + 1)
    }
    /// Zipf-like rank in 0..n: small ranks are much more likely (P(r) ∝ 1/(r + 1)).
    fn zipf(&mut self, n: usize) -> usize {
        self.zipf_shifted(n, 1.0)
    }
    /// P(r) ∝ 1/(r + shift): a larger shift flattens the head, as in real content words.
    fn zipf_shifted(&mut self, n: usize, shift: f64) -> usize {
        let u = (self.next() >> 11) as f64 / (1u64 << 53) as f64;
        let r = shift * ((n as f64 + shift) / shift).powf(u) - shift;
        (r as usize).min(n - 1)
    }
}

/// Function words: indexed (they are in real text) but dropped from queries.
const EN_STOP: &[&str] =
    &["the", "and", "for", "with", "to", "of", "a", "in", "on", "we", "your", "our", "is", "are"];

struct Vocab {
    en: Vec<String>,
    zh: Vec<String>,
}

impl Vocab {
    fn new() -> Vocab {
        let mut en: Vec<String> = EN_HEAD.iter().map(|s| s.to_string()).collect();
        let syll = ["ka", "lo", "mi", "ten", "vor", "as", "ri", "pel", "dun", "sha", "qua", "zen"];
        let mut r = Rng(7);
        while en.len() < 20_000 {
            let n = r.range(2, 4);
            en.push((0..n).map(|_| syll[r.below(syll.len())]).collect());
        }
        let mut zh: Vec<String> = ZH_HEAD.iter().map(|s| s.to_string()).collect();
        // Dictionary words from jieba's vocabulary-like space: pairs of the head words' chars.
        let chars: Vec<char> = ZH_HEAD.iter().flat_map(|w| w.chars()).collect();
        while zh.len() < 3_000 {
            let a = chars[r.below(chars.len())];
            let b = chars[r.below(chars.len())];
            zh.push(format!("{a}{b}"));
        }
        Vocab { en, zh }
    }

    fn en_words(&self, r: &mut Rng, (lo, hi): (usize, usize)) -> String {
        let n = r.range(lo, hi);
        let mut s = String::new();
        for i in 0..n {
            if i > 0 {
                s.push(' ');
            }
            if r.below(100) < 35 {
                s.push_str(EN_STOP[r.below(EN_STOP.len())]);
            } else {
                s.push_str(&self.en[r.zipf_shifted(self.en.len(), 10.0)]);
            }
        }
        s
    }

    fn zh_words(&self, r: &mut Rng, (lo, hi): (usize, usize)) -> String {
        let n = r.range(lo, hi);
        let mut s = String::new();
        for i in 0..n {
            if i % 4 == 0 {
                s.push_str(ZH_GLUE[r.below(ZH_GLUE.len())]);
            }
            s.push_str(&self.zh[r.zipf_shifted(self.zh.len(), 10.0)]);
            if i % 6 == 5 {
                s.push('，');
            }
        }
        s.push('。');
        s
    }
}

fn make_agent(v: &Vocab, key: u64) -> AgentDoc {
    let mut r = Rng(key.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let cap = |r: &mut Rng| EN_HEAD[r.zipf(EN_HEAD.len())].to_string();
    AgentDoc {
        key,
        handle: format!("{}-{}-{key}", EN_HEAD[r.below(EN_HEAD.len())], EN_HEAD[r.below(EN_HEAD.len())]),
        name: if r.below(2) == 0 { v.en_words(&mut r, (2, 2)) } else { v.zh_words(&mut r, (2, 2)) },
        tagline: v.en_words(&mut r, (4, 8)),
        description_en: v.en_words(&mut r, (30, 60)),
        description_zh: v.zh_words(&mut r, (15, 35)),
        capabilities: (0..r.range(1, 4)).map(|_| cap(&mut r)).collect(),
        languages: (0..r.range(1, 3)).map(|_| LANGS[r.zipf(LANGS.len())].to_string()).collect(),
        offering_titles: (0..r.range(0, 3)).map(|_| v.en_words(&mut r, (4, 4))).collect(),
        offering_deliverables: (0..r.range(0, 3)).map(|_| v.en_words(&mut r, (8, 8))).collect(),
        offering_tags: (0..r.range(0, 4)).map(|_| cap(&mut r)).collect(),
        model: MODELS[r.below(MODELS.len())].to_string(),
        level: r.below(3) as u64,
        mailbox_verified: r.below(10) < 3,
        joined_at: 1_700_000_000_000 + (r.below(730) as i64) * 86_400_000,
        last_active_at: 1_760_000_000_000 + (r.below(10_000_000) as i64) * 1_000,
    }
}

fn make_call(v: &Vocab, key: u64, agents: u64) -> CallDoc {
    let mut r = Rng(key.wrapping_mul(0xD1B5_4A32_D192_ED03) | 1);
    let zh = r.below(2) == 0;
    let text = |r: &mut Rng, n: (usize, usize)| {
        if zh { v.zh_words(r, n) } else { v.en_words(r, n) }
    };
    CallDoc {
        key,
        title: text(&mut r, (3, 7)),
        body: text(&mut r, (20, 50)),
        deliverable: text(&mut r, (5, 10)),
        constraints: text(&mut r, (3, 8)),
        tags: (0..r.range(1, 3)).map(|_| EN_HEAD[r.zipf(EN_HEAD.len())].to_string()).collect(),
        kind: KINDS[r.below(KINDS.len())].to_string(),
        lang: if zh { "zh" } else { "en" }.to_string(),
        author_handle: format!("agent-{}", r.below(agents as usize)),
        created_at: 1_700_000_000_000 + key as i64 * 1_000,
    }
}

#[derive(Clone)]
struct Q {
    class: &'static str,
    text: Option<String>,
    capability: Option<&'static str>,
    language: Option<&'static str>,
    verified: Option<bool>,
    min_level: Option<u64>,
    call: bool,
    tag: Option<&'static str>,
}

fn queries(v: &Vocab) -> Vec<Q> {
    let mut r = Rng(42);
    let mut out = Vec::new();
    let base = Q {
        class: "",
        text: None,
        capability: None,
        language: None,
        verified: None,
        min_level: None,
        call: false,
        tag: None,
    };
    for words in 1..=3 {
        for _ in 0..20 {
            let en = (0..words).map(|_| v.en[r.zipf(300)].clone()).collect::<Vec<_>>().join(" ");
            let zh = (0..words).map(|_| v.zh[r.zipf(150)].clone()).collect::<Vec<_>>().join(" ");
            let en_class = ["agents en 1w", "agents en 2w", "agents en 3w"][words - 1];
            let zh_class = ["agents zh 1w", "agents zh 2w", "agents zh 3w"][words - 1];
            out.push(Q { class: en_class, text: Some(en.clone()), ..base.clone() });
            out.push(Q { class: zh_class, text: Some(zh.clone()), ..base.clone() });
            if words == 2 {
                out.push(Q {
                    class: "agents mixed en+zh",
                    text: Some(format!("{} {}", v.en[r.zipf(100)], v.zh[r.zipf(100)])),
                    ..base.clone()
                });
                out.push(Q {
                    class: "agents en 2w + filters",
                    text: Some(en.clone()),
                    capability: Some(EN_HEAD[r.zipf(20)]),
                    language: Some("en"),
                    min_level: Some(1),
                    ..base.clone()
                });
                out.push(Q {
                    class: "agents zh 2w + filters",
                    text: Some(zh.clone()),
                    language: Some("zh"),
                    verified: Some(true),
                    ..base.clone()
                });
                out.push(Q { class: "calls en 2w", text: Some(en.clone()), call: true, ..base.clone() });
                out.push(Q { class: "calls zh 2w", text: Some(zh.clone()), call: true, ..base.clone() });
                out.push(Q {
                    class: "calls en 2w + tag",
                    text: Some(en),
                    tag: Some(EN_HEAD[r.zipf(20)]),
                    call: true,
                    ..base.clone()
                });
            }
        }
    }
    for i in 0..10 {
        // The most frequent content words: each is in a large share of all documents.
        out.push(Q {
            class: "agents top words 2w",
            text: Some(format!("{} {}", v.en[i % 3], v.zh[(i + 1) % 3])),
            ..base.clone()
        });
        out.push(Q {
            class: "calls top words 2w",
            text: Some(format!("{} {}", v.en[i % 3], v.en[(i + 1) % 3 + 3])),
            call: true,
            ..base.clone()
        });
        out.push(Q {
            class: "agents filters only",
            capability: Some(EN_HEAD[r.zipf(30)]),
            verified: Some(true),
            ..base.clone()
        });
        out.push(Q { class: "agents no text, no filter", ..base.clone() });
        out.push(Q { class: "calls tag only", tag: Some(EN_HEAD[r.zipf(30)]), call: true, ..base.clone() });
        out.push(Q { class: "calls no text, no filter", call: true, ..base.clone() });
    }
    out
}

fn run(idx: &SearchIndex, q: &Q) -> u64 {
    if q.call {
        let cq = CallQuery { text: q.text.as_deref(), tag: q.tag, limit: 20, ..Default::default() };
        idx.search_calls(&cq).map(|p| p.total).unwrap_or(0)
    } else {
        let aq = AgentQuery {
            text: q.text.as_deref(),
            capability: q.capability,
            language: q.language,
            mailbox_verified: q.verified,
            min_level: q.min_level,
            limit: 20,
            ..Default::default()
        };
        idx.search_agents(&aq).map(|p| p.total).unwrap_or(0)
    }
}

/// CPU time consumed by the calling thread: unaffected by other processes on the machine.
fn thread_cpu() -> Duration {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec for the duration of the call.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return Duration::ZERO;
    }
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// CPU time consumed by the whole process (every thread, tantivy's included).
fn process_cpu() -> Duration {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec for the duration of the call.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return Duration::ZERO;
    }
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

fn pct(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i].as_secs_f64() * 1000.0
}

/// A FIFO counting semaphore: admits at most `permits` searches at once, in arrival order, the
/// way a server gating its blocking search pool with a fair semaphore sized to the cores would.
/// A released permit is handed to exactly one waiter (no thundering herd).
struct FairGate {
    /// (free permits, waiters in arrival order)
    state: Mutex<(usize, VecDeque<Arc<Waiter>>)>,
}

type Waiter = (Mutex<bool>, Condvar);

impl FairGate {
    fn new(permits: usize) -> FairGate {
        FairGate { state: Mutex::new((permits, VecDeque::new())) }
    }

    fn run<T>(&self, f: impl FnOnce() -> T) -> T {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if s.0 > 0 && s.1.is_empty() {
            s.0 -= 1;
            drop(s);
        } else {
            let waiter = Arc::new((Mutex::new(false), Condvar::new()));
            s.1.push_back(waiter.clone());
            drop(s);
            let mut ready = waiter.0.lock().unwrap_or_else(|e| e.into_inner());
            while !*ready {
                ready = waiter.1.wait(ready).unwrap_or_else(|e| e.into_inner());
            }
        }
        let out = f();
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        match s.1.pop_front() {
            Some(next) => {
                *next.0.lock().unwrap_or_else(|e| e.into_inner()) = true;
                next.1.notify_one();
            }
            None => s.0 += 1,
        }
        out
    }
}

/// Intrinsic cost per query: the least thread CPU time of 7 back-to-back runs, which filters
/// out cache pollution and preemption by other processes on a shared machine.
fn intrinsic(idx: &SearchIndex, qs: &[Q]) -> Vec<(&'static str, Vec<Duration>)> {
    let mut by_class: Vec<(&'static str, Vec<Duration>)> = Vec::new();
    for q in qs {
        let best = (0..7)
            .map(|_| {
                let c = thread_cpu();
                std::hint::black_box(run(idx, q));
                thread_cpu().saturating_sub(c)
            })
            .min()
            .unwrap_or_default();
        match by_class.iter_mut().find(|(c, _)| *c == q.class) {
            Some((_, v)) => v.push(best),
            None => by_class.push((q.class, vec![best])),
        }
    }
    for (_, v) in &mut by_class {
        v.sort_unstable();
    }
    by_class
}

/// Runs every query `rounds` times per client, `clients` at once; returns latencies per class.
/// Latency is measured by the client, so with a gate it includes the time queued at the gate.
fn measure(
    idx: &Arc<SearchIndex>,
    qs: &Arc<Vec<Q>>,
    clients: usize,
    rounds: usize,
    gate: Option<Arc<FairGate>>,
    cpu: bool,
) -> Vec<(&'static str, Vec<Duration>)> {
    let handles: Vec<_> = (0..clients)
        .map(|c| {
            let idx = idx.clone();
            let qs = qs.clone();
            let gate = gate.clone();
            std::thread::spawn(move || {
                let mut out = Vec::with_capacity(qs.len() * rounds);
                let mut r = Rng(c as u64 * 31 + 5);
                for _ in 0..rounds {
                    // Clients walk the set in different orders so they don't run in lockstep.
                    let start = r.below(qs.len());
                    for i in 0..qs.len() {
                        let q = &qs[(start + i) % qs.len()];
                        let t = Instant::now();
                        let c = if cpu { thread_cpu() } else { Duration::ZERO };
                        match &gate {
                            Some(g) => std::hint::black_box(g.run(|| run(&idx, q))),
                            None => std::hint::black_box(run(&idx, q)),
                        };
                        let d = if cpu { thread_cpu().saturating_sub(c) } else { t.elapsed() };
                        out.push((q.class, d));
                    }
                }
                out
            })
        })
        .collect();
    let mut by_class: Vec<(&'static str, Vec<Duration>)> = Vec::new();
    for h in handles {
        for (class, d) in h.join().unwrap_or_default() {
            match by_class.iter_mut().find(|(c, _)| *c == class) {
                Some((_, v)) => v.push(d),
                None => by_class.push((class, vec![d])),
            }
        }
    }
    for (_, v) in &mut by_class {
        v.sort_unstable();
    }
    by_class
}

fn dir_size(path: &std::path::Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(path) else {
        return 0;
    };
    entries
        .filter_map(Result::ok)
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => dir_size(&e.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        })
        .sum()
}

fn peak_rss_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1).map(str::to_string))
        })
        .and_then(|kb| kb.parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

/// One-document upserts, each committed and reloaded; prints wall and whole-process CPU time.
fn measure_upserts(idx: &SearchIndex, v: &Vocab, n_agents: u64, n_upserts: u64, seq0: u64) {
    let mut upserts = Vec::new();
    let mut upsert_cpu = Vec::new();
    for i in 0..n_upserts {
        let a = make_agent(v, 1 + i * 997 % n_agents.max(1));
        let t = Instant::now();
        let c = process_cpu();
        if let Err(e) = idx.apply(vec![Change::UpsertAgent(a)], seq0 + i) {
            eprintln!("apply failed: {e:?}");
            break;
        }
        upserts.push(t.elapsed());
        upsert_cpu.push(process_cpu().saturating_sub(c));
    }
    let mut first: Vec<Duration> = upserts.iter().take(50).copied().collect();
    first.sort_unstable();
    upserts.sort_unstable();
    upsert_cpu.sort_unstable();
    if upserts.len() > 50 {
        println!("first 50 upserts: wall p50 {:.2} ms", pct(&first, 0.5));
    }
    println!(
        "\none-agent upsert + commit + reload: wall p50 {:.2} ms, p99 {:.2} ms; CPU (all threads) p50 {:.2} ms",
        pct(&upserts, 0.5),
        pct(&upserts, 0.99),
        pct(&upsert_cpu, 0.5)
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n_agents: u64 = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(100_000);
    let n_calls: u64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(1_000_000);
    let tmp;
    let dir: PathBuf = match args.get(3) {
        Some(d) => PathBuf::from(d),
        None => {
            tmp = std::env::temp_dir().join(format!("agentdir-latency-{}", std::process::id()));
            tmp
        }
    };
    let v = Arc::new(Vocab::new());

    let t = Instant::now();
    let idx = match SearchIndex::open(&dir) {
        Ok(idx) => idx,
        Err(e) => {
            eprintln!("open failed: {e}");
            std::process::exit(1);
        }
    };
    println!("open: {:.0} ms (includes jieba dictionary load)", t.elapsed().as_secs_f64() * 1e3);

    if idx.needs_rebuild() || args.get(3).is_none() {
        let t = Instant::now();
        let va = v.clone();
        let vc = v.clone();
        let docs = (1..=n_agents)
            .map(move |k| Change::UpsertAgent(make_agent(&va, k)))
            .chain((1..=n_calls).map(move |k| Change::UpsertCall(make_call(&vc, k, n_agents))));
        if let Err(e) = idx.rebuild(docs, 1) {
            eprintln!("rebuild failed: {e:?}");
            std::process::exit(1);
        }
        println!(
            "rebuild ({n_agents} agents + {n_calls} calls, incl. generation and final merge): {:.1} s",
            t.elapsed().as_secs_f64()
        );
    }
    println!(
        "index size: agents {:.1} MB, calls {:.1} MB",
        dir_size(&dir.join("agents")) as f64 / 1e6,
        dir_size(&dir.join("calls")) as f64 / 1e6
    );

    let idx = Arc::new(idx);
    let mut qs = queries(&v);
    // LATENCY_ONLY=agents|calls restricts the query set; =upserts measures only writes.
    match std::env::var("LATENCY_ONLY").as_deref() {
        Ok("agents") => qs.retain(|q| !q.call),
        Ok("calls") => qs.retain(|q| q.call),
        _ => {}
    }
    let qs = Arc::new(qs);
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let only_upserts = std::env::var("LATENCY_ONLY").as_deref() == Ok("upserts");
    if !only_upserts {
        print!("\nbefore the query runs:");
        measure_upserts(&idx, &v, n_agents, 50, 10);
    }
    for cache in [false, true].into_iter().filter(|_| !only_upserts) {
        idx.set_result_cache_capacity(if cache { DEFAULT_CACHE_ENTRIES } else { 0 });
        // Warms the page cache (and, when on, the result cache) once.
        measure(&idx, &qs, 1, 1, None, false);
        let state = if cache { "result cache ON" } else { "result cache OFF (raw query cost)" };
        if !cache {
            println!("\n[{state}] intrinsic CPU per query (min of 7 runs each)");
            println!("{:<28} {:>6} {:>9} {:>9} {:>9}", "class", "n", "p50 ms", "p99 ms", "max ms");
            let mut all = Vec::new();
            for (class, lat) in intrinsic(&idx, &qs) {
                println!(
                    "{:<28} {:>6} {:>9.3} {:>9.3} {:>9.3}",
                    class,
                    lat.len(),
                    pct(&lat, 0.50),
                    pct(&lat, 0.99),
                    pct(&lat, 1.0)
                );
                if class.starts_with("agents") {
                    all.extend(lat);
                }
            }
            all.sort_unstable();
            let mean = all.iter().sum::<Duration>().as_secs_f64() * 1e3 / all.len().max(1) as f64;
            println!(
                "{:<28} {:>6} {:>9.3} {:>9.3} {:>9.3}   mean {mean:.3}",
                "ALL AGENT QUERIES",
                all.len(),
                pct(&all, 0.50),
                pct(&all, 0.99),
                pct(&all, 1.0)
            );
        }
        let modes = [
            (1usize, 5usize, None, true, "1 client, thread CPU time per query"),
            (1, 5, None, false, "1 client, wall time"),
            (16, 2, Some(Arc::new(FairGate::new(cores))), false, "16 clients, FIFO gate = cores"),
            (16, 2, None, false, "16 clients, 16 threads searching at once"),
        ];
        for (clients, rounds, gate, cpu, label) in modes {
            let t = Instant::now();
            let res = measure(&idx, &qs, clients, rounds, gate, cpu);
            let n: usize = res.iter().map(|(_, v)| v.len()).sum();
            println!(
                "\n[{state}] {label}: {n} queries in {:.2} s ({:.0} q/s)",
                t.elapsed().as_secs_f64(),
                n as f64 / t.elapsed().as_secs_f64()
            );
            println!("{:<28} {:>6} {:>9} {:>9} {:>9}", "class", "n", "p50 ms", "p99 ms", "max ms");
            let mut agents_all = Vec::new();
            for (class, lat) in &res {
                println!(
                    "{:<28} {:>6} {:>9.3} {:>9.3} {:>9.3}",
                    class,
                    lat.len(),
                    pct(lat, 0.50),
                    pct(lat, 0.99),
                    pct(lat, 1.0)
                );
                if class.starts_with("agents") {
                    agents_all.extend(lat.iter().copied());
                }
            }
            agents_all.sort_unstable();
            println!(
                "{:<28} {:>6} {:>9.3} {:>9.3} {:>9.3}",
                "ALL AGENT QUERIES",
                agents_all.len(),
                pct(&agents_all, 0.50),
                pct(&agents_all, 0.99),
                pct(&agents_all, 1.0)
            );
        }
    }

    let only_upserts_n = if only_upserts { 400 } else { 50 };
    if !only_upserts {
        print!("\nafter the query runs:");
    }
    measure_upserts(&idx, &v, n_agents, only_upserts_n, 1_000);
    println!("peak RSS: {:.0} MB", peak_rss_mb());
    if args.get(3).is_none() {
        drop(idx);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
