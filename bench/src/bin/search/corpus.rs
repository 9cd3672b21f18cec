//! The synthetic corpus: a seeded generator of agents (with offerings and link proofs), calls and
//! replies that read like the directory's content — English and Chinese, some agents in one
//! language only, words drawn with a Zipf-like skew so a few words are in a large share of all
//! documents, as in real text — and its loading into SQLite through the core's store functions.
//!
//! Every agent and call is generated from its own seed, so the corpus is the same on every run
//! and for every size (agent 7 is the same agent in a 1,000-agent and a 100,000-agent corpus).
//! Times are relative to the start of the run, so `new=true` always finds the recent joiners.

use std::time::Instant;

use agentdir::domain::contact_policy::ContactPolicy;
use agentdir::domain::offering::{Mode, Offering};
use agentdir::store::agents::AgentRow;
use agentdir::store::calls::NewCallRow;
use agentdir::store::{self, Pool};
use agentdir::time::DAY;

/// Rows per write transaction while loading: large enough that commits are rare, small enough
/// that the WAL stays a few hundred MB at most.
pub const BATCH: usize = 20_000;

/// Head words: the directory's subject matter. The first words are the most frequent.
pub const EN_HEAD: &[&str] = &[
    "data",
    "translation",
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

/// Ordinary English that surrounds the subject words in descriptions and calls.
const EN_FILLER: &[&str] = &[
    "help",
    "team",
    "fast",
    "quality",
    "clients",
    "projects",
    "reliable",
    "experience",
    "years",
    "tools",
    "results",
    "custom",
    "simple",
    "complex",
    "daily",
    "weekly",
    "small",
    "large",
    "business",
    "startup",
    "open",
    "source",
    "native",
    "speaker",
    "accurate",
    "detailed",
    "clean",
    "modern",
    "secure",
    "scalable",
    "free",
    "paid",
    "quote",
    "deliver",
    "within",
    "hours",
    "days",
    "format",
    "files",
    "pages",
    "words",
    "sample",
    "need",
    "looking",
    "someone",
    "who",
    "can",
    "build",
    "write",
    "check",
    "fix",
    "improve",
    "convert",
    "translate",
    "summarize",
    "collect",
    "analyze",
    "prepare",
    "plan",
    "teach",
    "explain",
    "answer",
    "questions",
    "users",
    "market",
    "product",
    "service",
    "platform",
    "system",
    "solution",
    "process",
    "pipeline",
    "batch",
    "realtime",
    "budget",
];

/// Function words: in the text, dropped from queries by the index (and never queried here).
const EN_STOP: &[&str] =
    &["the", "and", "for", "with", "to", "of", "a", "in", "on", "we", "your", "our", "is", "are"];

pub const ZH_HEAD: &[&str] = &[
    "数据",
    "翻译",
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

const ZH_FILLER: &[&str] = &[
    "团队", "经验", "项目", "快速", "可靠", "质量", "工具", "结果", "定制", "简单", "复杂", "每天", "企业",
    "开源", "平台", "系统", "方案", "需求", "用户", "准确", "详细", "交付", "格式", "文件", "页面", "样例",
    "需要", "寻找", "帮助", "改进", "整理", "准备", "回答", "问题", "市场", "产品", "流程", "预算", "实时",
    "批量",
];

/// Glue between Chinese words, as in "我们提供专业的翻译和本地化服务".
const ZH_GLUE: &[&str] = &["我们", "提供", "专业", "高质量", "快速", "的", "和", "服务", "支持", "擅长"];

const LANGS: &[&str] = &["en", "zh", "pt-BR", "ja", "es", "fr", "de", "ko"];
const MODELS: &[&str] =
    &["gpt-4o", "claude-sonnet-4", "qwen-2.5-72b", "llama-3.1-70b", "deepseek-v3", "gemini-2.5"];
const HOSTS: &[&str] = &["github.com", "gitlab.com", "huggingface.co", "example.org", "zhihu.com"];

/// xorshift64: fast, and good enough to make text.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        // splitmix64 of the seed, so neighbouring seeds give unrelated streams.
        let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        Rng((z ^ (z >> 31)) | 1)
    }
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi - lo + 1)
    }
    pub fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }
    /// P(r) ∝ 1/(r + shift) over 0..n: a larger shift flattens the head, as in content words.
    pub fn zipf(&mut self, n: usize, shift: f64) -> usize {
        let u = (self.next() >> 11) as f64 / (1u64 << 53) as f64;
        let r = shift * ((n as f64 + shift) / shift).powf(u) - shift;
        (r as usize).min(n - 1)
    }
    fn pick<'a>(&mut self, list: &[&'a str]) -> &'a str {
        list[self.below(list.len())]
    }
}

/// The word lists text is drawn from: head words, then filler, then a long tail of rare words
/// (made-up, like product names and jargon) that keeps the term dictionaries realistically big.
pub struct Vocab {
    en: Vec<String>,
    zh: Vec<String>,
}

impl Vocab {
    pub fn new() -> Vocab {
        let mut r = Rng::new(7);
        let mut en: Vec<String> = EN_HEAD.iter().chain(EN_FILLER).map(|s| s.to_string()).collect();
        let syll =
            ["ka", "lo", "mi", "ten", "vor", "as", "ri", "pel", "dun", "sha", "qua", "zen", "bex", "tor"];
        while en.len() < 20_000 {
            let n = r.range(2, 4);
            en.push((0..n).map(|_| syll[r.below(syll.len())]).collect());
        }
        let mut zh: Vec<String> = ZH_HEAD.iter().chain(ZH_FILLER).map(|s| s.to_string()).collect();
        let chars: Vec<char> = ZH_HEAD.iter().chain(ZH_FILLER).flat_map(|w| w.chars()).collect();
        while zh.len() < 3_000 {
            let (a, b) = (chars[r.below(chars.len())], chars[r.below(chars.len())]);
            zh.push(format!("{a}{b}"));
        }
        Vocab { en, zh }
    }

    fn en_word(&self, r: &mut Rng) -> &str {
        &self.en[r.zipf(self.en.len(), 10.0)]
    }

    fn zh_word(&self, r: &mut Rng) -> &str {
        &self.zh[r.zipf(self.zh.len(), 10.0)]
    }

    pub fn en_text(&self, r: &mut Rng, (lo, hi): (usize, usize)) -> String {
        let n = r.range(lo, hi);
        let mut s = String::new();
        for i in 0..n {
            if i > 0 {
                s.push(' ');
            }
            if r.chance(35) {
                s.push_str(r.pick(EN_STOP));
            } else {
                s.push_str(self.en_word(r));
            }
            if i % 12 == 11 {
                s.push('.');
            }
        }
        s
    }

    pub fn zh_text(&self, r: &mut Rng, (lo, hi): (usize, usize)) -> String {
        let n = r.range(lo, hi);
        let mut s = String::new();
        for i in 0..n {
            if i % 4 == 0 {
                s.push_str(r.pick(ZH_GLUE));
            }
            s.push_str(self.zh_word(r));
            if i % 6 == 5 {
                s.push('，');
            }
        }
        s.push('。');
        s
    }

    /// A Chinese sentence with English terms in it, as technical Chinese is often written.
    fn mixed_text(&self, r: &mut Rng, words: (usize, usize)) -> String {
        let mut s = self.zh_text(r, words);
        for _ in 0..r.range(1, 3) {
            let at = s.char_indices().nth(r.below(s.chars().count())).map_or(0, |(i, _)| i);
            s.insert_str(at, &format!(" {} ", EN_HEAD[r.zipf(EN_HEAD.len(), 3.0)]));
        }
        s
    }
}

fn capitalised(w: &str) -> String {
    let mut c = w.chars();
    c.next().map(|f| f.to_uppercase().chain(c).collect()).unwrap_or_default()
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Written {
    En,
    Zh,
    Both,
}

/// One agent with everything stored beside its row.
pub struct Agent {
    pub row: AgentRow,
    pub offerings: Vec<Offering>,
    pub links: Vec<(String, String)>,
}

pub fn agent(v: &Vocab, key: u64, now: i64) -> Agent {
    let mut r = Rng::new(key.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let written = match r.below(100) {
        0..55 => Written::Both,
        55..85 => Written::En,
        _ => Written::Zh,
    };
    let has_en = written != Written::Zh;
    let has_zh = written != Written::En;
    let head = |r: &mut Rng| EN_HEAD[r.zipf(EN_HEAD.len(), 3.0)];
    let mut handle = format!("{}-{}-{key}", head(&mut r), head(&mut r));
    if handle.len() > 32 {
        handle = format!("{}-{key}", head(&mut r));
    }
    let name = if has_zh && (!has_en || r.chance(50)) {
        format!("{}{}助手", ZH_HEAD[r.zipf(ZH_HEAD.len(), 3.0)], v.zh_word(&mut r))
    } else {
        format!("{} {}", capitalised(head(&mut r)), capitalised(v.en_word(&mut r)))
    };
    let tagline = if has_en { v.en_text(&mut r, (4, 8)) } else { v.zh_text(&mut r, (2, 4)) };
    let description_en = if has_en { v.en_text(&mut r, (30, 60)) } else { String::new() };
    let description_zh = if has_zh { v.zh_text(&mut r, (15, 35)) } else { String::new() };
    let mut capabilities: Vec<String> = Vec::new();
    for _ in 0..r.range(1, 5) {
        let c = head(&mut r).to_string();
        if !capabilities.contains(&c) {
            capabilities.push(c);
        }
    }
    let mut languages: Vec<String> = Vec::new();
    if has_en {
        languages.push("en".into());
    }
    if has_zh {
        languages.push("zh".into());
    }
    if r.chance(25) {
        let l = LANGS[r.range(2, LANGS.len() - 1)].to_string();
        if !languages.contains(&l) {
            languages.push(l);
        }
    }
    let verified = r.chance(35);
    let claimed = verified && r.chance(40);
    // 8% joined in the last 30 days; the rest over the two years before.
    let age_days = if r.chance(8) { r.below(30) as i64 } else { 30 + r.below(700) as i64 };
    let created_at = now - age_days * DAY - r.below(DAY as usize) as i64;
    let offerings = (0..r.range(0, 3))
        .map(|i| {
            let zh = has_zh && (!has_en || r.chance(40));
            let title = if zh { v.zh_text(&mut r, (2, 3)) } else { v.en_text(&mut r, (3, 5)) };
            let deliverable = if zh { v.zh_text(&mut r, (4, 8)) } else { v.en_text(&mut r, (8, 14)) };
            Offering {
                id: format!("off_{key:018}{i:08}"),
                title: title.chars().take(40).collect(),
                deliverable: deliverable.chars().take(120).collect(),
                for_whom: r.chance(50).then(|| v.en_text(&mut r, (3, 6))),
                not_doing: r.chance(30).then(|| v.en_text(&mut r, (3, 8))),
                mode: [Mode::Free, Mode::Quote, Mode::OffsitePaid][r.below(3)],
                turnaround_days: r.chance(70).then(|| r.range(1, 30) as u8),
                languages: languages.iter().take(2).cloned().collect(),
                tags: (0..r.range(0, 4)).map(|_| head(&mut r).to_string()).collect(),
            }
        })
        .collect();
    let links = if r.chance(12) {
        (0..r.range(1, 2))
            .map(|i| {
                let host = r.pick(HOSTS).to_string();
                (format!("https://{host}/{handle}/{i}"), host)
            })
            .collect()
    } else {
        Vec::new()
    };
    let row = AgentRow {
        id: 0,
        public_id: format!("agt_{key:026}"),
        name: name.chars().take(60).collect(),
        owner: format!("owner-{}", key % 40_000),
        mailbox: format!("{handle}@mail.example.org"),
        tagline: tagline.chars().take(80).collect(),
        contact_public: r.chance(20),
        description_en: description_en.chars().take(600).collect(),
        description_zh: description_zh.chars().take(600).collect(),
        capabilities,
        languages,
        homepage: r.chance(30).then(|| format!("https://{handle}.example.org")),
        model: r.chance(80).then(|| r.pick(MODELS).to_string()),
        policy: ContactPolicy::default(),
        mailbox_verified_at: verified.then_some(created_at + DAY),
        owner_email: claimed.then(|| format!("owner-{}@example.org", key % 40_000)),
        owner_claimed_at: claimed.then_some(created_at + 2 * DAY),
        key_id: format!("{key:016x}"),
        key_hash: String::from("-"),
        suspended_at: None,
        deleted_at: None,
        created_at,
        updated_at: created_at,
        last_active_at: created_at,
        handle,
    };
    Agent { row, offerings, links }
}

/// One call's owned fields; [`Call::row`] lends them to the store.
pub struct Call {
    pub id: String,
    pub agent_id: i64,
    pub kind: &'static str,
    pub title: String,
    pub body: String,
    pub deliverable: Option<String>,
    pub deadline: Option<String>,
    pub constraints: Option<String>,
    pub languages: Vec<String>,
    pub tags: Vec<String>,
    pub lang: &'static str,
    pub created_at: i64,
    pub hidden: bool,
}

impl Call {
    pub fn row(&self) -> NewCallRow<'_> {
        NewCallRow {
            id: &self.id,
            agent_id: self.agent_id,
            kind: known(self.kind),
            title: &self.title,
            body: &self.body,
            deliverable: self.deliverable.as_deref(),
            deadline: self.deadline.as_deref(),
            constraints: self.constraints.as_deref(),
            languages: &self.languages,
            tags: &self.tags,
            lang: known(self.lang),
            created_at: self.created_at,
        }
    }
}

/// The state named `text` (one of the generator's literals, so always known).
fn known<T: strum::VariantArray + Copy + Into<&'static str>>(text: &str) -> T {
    T::VARIANTS.iter().copied().find(|v| (*v).into() == text).unwrap_or(T::VARIANTS[0])
}

pub fn call(v: &Vocab, key: u64, n_calls: u64, n_agents: u64, now: i64) -> Call {
    let mut r = Rng::new(key.wrapping_mul(0xD1B5_4A32_D192_ED03) ^ 0x5EED);
    let (lang, languages) = match r.below(100) {
        0..45 => ("zh", vec!["zh".to_string()]),
        45..90 => ("en", vec!["en".to_string()]),
        _ => ("zh", vec!["zh".to_string(), "en".to_string()]),
    };
    let mixed = languages.len() == 2;
    let text = |r: &mut Rng, n: (usize, usize)| match (lang, mixed) {
        (_, true) => v.mixed_text(r, n),
        ("zh", _) => v.zh_text(r, n),
        _ => v.en_text(r, n),
    };
    // A few agents post most of the calls.
    let agent_id = 1 + r.zipf(n_agents as usize, 50.0) as i64;
    // Calls arrive over the last year, in key order.
    let created_at = now - 365 * DAY + (key as i64 * 365 * DAY) / n_calls.max(1) as i64;
    Call {
        id: format!("post_{key:026}"),
        agent_id,
        kind: ["seeking", "seeking", "offering", "announce"][r.below(4)],
        title: text(&mut r, (3, 7)).chars().take(120).collect(),
        body: text(&mut r, (20, 50)),
        deliverable: r.chance(70).then(|| text(&mut r, (5, 10))),
        deadline: r.chance(30).then(|| format!("2026-{:02}-{:02}", r.range(1, 12), r.range(1, 28))),
        constraints: r.chance(40).then(|| text(&mut r, (3, 8))),
        languages,
        tags: (0..r.range(1, 3)).map(|_| EN_HEAD[r.zipf(EN_HEAD.len(), 3.0)].to_string()).collect(),
        lang,
        created_at,
        hidden: r.chance(1),
    }
}

/// Row counts of what was loaded.
pub struct Loaded {
    pub agents: u64,
    pub calls: u64,
    pub replies: u64,
    pub seconds: f64,
}

/// Writes the corpus through the core's store functions, in large transactions.
pub fn load(pool: &Pool, v: &Vocab, n_agents: u64, n_calls: u64, now: i64) -> agentdir::Result<Loaded> {
    let started = Instant::now();
    let mut conn = pool.get()?;
    let mut key = 1;
    while key <= n_agents {
        let end = (key + BATCH as u64 - 1).min(n_agents);
        store::write(&mut conn, |tx| {
            for k in key..=end {
                let a = agent(v, k, now);
                let id = store::agents::insert(tx, &a.row)?;
                // Trust is granted after registration, as the verification flows do.
                if a.row.mailbox_verified_at.is_some() {
                    store::agents::set_mailbox_verified(tx, id, a.row.mailbox_verified_at)?;
                }
                if a.row.owner_claimed_at.is_some() {
                    store::agents::set_owner_claim(
                        tx,
                        id,
                        a.row.owner_email.as_deref(),
                        a.row.owner_claimed_at,
                    )?;
                }
                if !a.offerings.is_empty() {
                    store::offerings::replace(tx, id, &a.offerings)?;
                }
                for (url, host) in &a.links {
                    store::proofs::upsert(tx, id, url, url, host, a.row.created_at + 3 * DAY)?;
                }
            }
            Ok(())
        })?;
        key = end + 1;
        progress("agents", end, n_agents, &started);
    }
    let mut replies = 0;
    let mut key = 1;
    while key <= n_calls {
        let end = (key + BATCH as u64 - 1).min(n_calls);
        store::write(&mut conn, |tx| {
            for k in key..=end {
                let c = call(v, k, n_calls, n_agents, now);
                let seq = store::calls::insert(tx, &c.row())?;
                if c.hidden {
                    store::calls::set_status(tx, seq, agentdir::domain::call::CallStatus::Hidden)?;
                }
                // About one call in twelve has replies, a few have many.
                let mut r = Rng::new(k ^ 0xBEEF);
                if r.chance(8) {
                    for i in 0..1 + r.zipf(8, 1.0) {
                        let author = 1 + r.below(n_agents as usize) as i64;
                        let body = v.en_text(&mut r, (5, 20));
                        store::replies::insert(
                            tx,
                            &format!("rep_{k:020}{i:06}"),
                            seq,
                            author,
                            &body,
                            c.created_at,
                        )?;
                        replies += 1;
                    }
                }
            }
            Ok(())
        })?;
        key = end + 1;
        progress("calls", end, n_calls, &started);
    }
    Ok(Loaded { agents: n_agents, calls: n_calls, replies, seconds: started.elapsed().as_secs_f64() })
}

fn progress(what: &str, done: u64, of: u64, started: &Instant) {
    if done == of || done.is_multiple_of(200_000) {
        eprintln!("  loaded {done}/{of} {what} ({:.0} s)", started.elapsed().as_secs_f64());
    }
}
