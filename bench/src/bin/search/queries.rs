//! The fixed query set: 1–3-word searches in English, Chinese and both, each also run with the
//! filters a client would add (capability, language, verified, min_level, new for agents; tag
//! and kind for calls). Both engines run exactly these, so the classes compare like for like.
//!
//! The words are the corpus's subject words at different frequencies: "data" and "数据" are in a
//! large share of all documents (the expensive case for any engine that must count every match),
//! "kubernetes" or "字幕" in few.

use agentdir::domain::agent::AgentSearch;
use agentdir::domain::call::{CallKind, CallSearch};

/// Page size of every query, as a client's default page.
pub const LIMIT: u32 = 20;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    Agents,
    Calls,
}

impl Target {
    /// As the benchmark's output names it.
    pub fn name(self) -> &'static str {
        match self {
            Target::Agents => "agents",
            Target::Calls => "calls",
        }
    }
}

/// Class names, indexed by [`Query::class`]; the first six are agent classes.
pub const CLASSES: &[&str] = &[
    "agents en",
    "agents zh",
    "agents mixed",
    "agents en + filters",
    "agents zh + filters",
    "agents mixed + filters",
    "calls en",
    "calls zh",
    "calls mixed",
    "calls en + filters",
    "calls zh + filters",
    "calls mixed + filters",
];

const EN: &[&str] = &[
    "translation",
    "legal",
    "python",
    "chatbot",
    "kubernetes",
    "data analysis",
    "security audit",
    "seo content",
    "contract review",
    "pdf ocr",
    "video subtitle",
    "customer support chatbot",
    "finance report summary",
    "rust backend deployment",
    "medical document translation",
    "tax invoice spreadsheet",
];

const ZH: &[&str] = &[
    "翻译",
    "法律",
    "爬虫",
    "字幕",
    "数据分析",
    "法律 合同",
    "客服 机器人",
    "财务 报告",
    "视频 字幕",
    "营销 策略",
    "代码 审核",
    "医疗 翻译",
    "本地化",
    "前端 设计 动画",
    "税务 发票 表格",
    "数据库 运维",
];

const MIXED: &[&str] = &[
    "python 数据",
    "seo 营销",
    "legal 合同",
    "翻译 pdf",
    "ocr 识别",
    "api 接口",
    "chatbot 客服",
    "video 字幕",
    "rust 后端",
    "translation 本地化",
    "data 可视化 dashboard",
    "python 爬虫 scraping",
];

const CAPABILITIES: &[&str] =
    &["translation", "data", "python", "legal", "security", "seo", "design", "marketing"];
const TAGS: &[&str] = &["data", "translation", "python", "legal", "video", "finance", "design", "seo"];

#[derive(Debug, Clone, Default)]
pub struct Query {
    pub target: Option<Target>,
    pub class: usize,
    pub text: &'static str,
    pub capability: Option<&'static str>,
    pub language: Option<&'static str>,
    pub verified: Option<bool>,
    pub min_level: Option<u8>,
    pub new: Option<bool>,
    pub tag: Option<&'static str>,
    pub kind: Option<CallKind>,
}

impl Query {
    pub fn agent_search(&self) -> AgentSearch {
        AgentSearch {
            q: Some(self.text.to_string()),
            capability: self.capability.map(str::to_string),
            language: self.language.map(str::to_string),
            verified: self.verified,
            live: None,
            min_level: self.min_level,
            new: self.new,
            limit: Some(LIMIT),
            offset: Some(0),
            explain: None,
        }
    }

    pub fn call_search(&self) -> CallSearch {
        CallSearch {
            q: Some(self.text.to_string()),
            kind: self.kind,
            tag: self.tag.map(str::to_string),
            limit: Some(LIMIT),
            offset: Some(0),
        }
    }

    /// The filters, written as query parameters (for printing).
    pub fn describe(&self) -> String {
        let mut s = format!("q={}", self.text);
        let mut add = |k: &str, v: Option<String>| {
            if let Some(v) = v {
                s.push_str(&format!("&{k}={v}"));
            }
        };
        add("capability", self.capability.map(str::to_string));
        add("language", self.language.map(str::to_string));
        add("verified", self.verified.map(|v| v.to_string()));
        add("min_level", self.min_level.map(|v| v.to_string()));
        add("new", self.new.map(|v| v.to_string()));
        add("tag", self.tag.map(str::to_string));
        add("kind", self.kind.map(|k| k.as_str().to_string()));
        s
    }
}

/// The agent filters, in turn: every filter alone, then common pairs.
fn agent_filters(i: usize, q: &mut Query, zh: bool) {
    let cap = CAPABILITIES[i % CAPABILITIES.len()];
    let lang = if zh { "zh" } else { "en" };
    match i % 8 {
        0 => q.capability = Some(cap),
        1 => q.language = Some(lang),
        2 => q.verified = Some(true),
        3 => q.min_level = Some(1),
        4 => q.new = Some(true),
        5 => (q.capability, q.language) = (Some(cap), Some(lang)),
        6 => (q.language, q.min_level) = (Some(lang), Some(2)),
        _ => (q.verified, q.new) = (Some(true), Some(true)),
    }
}

fn call_filters(i: usize, q: &mut Query) {
    let tag = TAGS[i % TAGS.len()];
    let kind = [CallKind::Seeking, CallKind::Offering, CallKind::Announce][i % 3];
    match i % 3 {
        0 => q.tag = Some(tag),
        1 => q.kind = Some(kind),
        _ => (q.tag, q.kind) = (Some(tag), Some(kind)),
    }
}

/// Every query of one target, grouped by class in [`CLASSES`] order.
pub fn fixed(target: Target) -> Vec<Query> {
    let base = match target {
        Target::Agents => 0,
        Target::Calls => 6,
    };
    let mut out = Vec::new();
    for (lang, texts) in [EN, ZH, MIXED].into_iter().enumerate() {
        for filtered in [false, true] {
            for (i, text) in texts.iter().enumerate() {
                let mut q = Query {
                    target: Some(target),
                    class: base + lang + 3 * filtered as usize,
                    text,
                    ..Default::default()
                };
                if filtered {
                    match target {
                        Target::Agents => agent_filters(i, &mut q, lang == 1),
                        Target::Calls => call_filters(i, &mut q),
                    }
                }
                out.push(q);
            }
        }
    }
    out.sort_by_key(|q| q.class);
    out
}

/// Needs stated as clients of search by meaning state them, in English and Chinese sentences
/// built from the corpus's subject words (`{a}`, `{b}`: two different head words).
const EN_NEEDS: &[&str] = &[
    "{a} {b}",
    "someone who can help with {a} and {b}",
    "I need an agent for {a} {b} for my small business",
    "looking for help with {a}: mostly {b}",
    "who can do {a} {b} in Chinese?",
    "we need {a} and {b} done this week",
    "an agent that handles {a} for a {b} project",
];
const ZH_NEEDS: &[&str] = &[
    "{a}{b}",
    "找一个能做{a}和{b}的智能体",
    "需要{a}方面的帮助，最好懂{b}",
    "有没有人会做{a}{b}",
    "我们公司要做{a}，预算有限，还涉及{b}",
];
const MIXED_NEEDS: &[&str] = &["{a} {b}", "need {a} 和 {b}", "找人做 {a} {b}"];
/// Head words the needs are built from: the corpus's most common subjects.
const NEED_WORDS: usize = 40;

/// `count` different needs for the meaning measurement, none repeated, so that no cache of
/// results or of needs could answer one: English, Chinese and mixed in turn, from the
/// templates above; every other need carries the filters of the fixed set.
pub fn distinct_needs(count: usize, target: Target) -> Vec<Query> {
    use crate::corpus::{EN_HEAD, Rng, ZH_HEAD};
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::with_capacity(count);
    let mut r = Rng::new(27);
    while out.len() < count {
        let lang = out.len() % 3;
        let (templates, words): (&[&str], [&[&str]; 2]) = match lang {
            0 => (EN_NEEDS, [EN_HEAD, EN_HEAD]),
            1 => (ZH_NEEDS, [ZH_HEAD, ZH_HEAD]),
            _ => (MIXED_NEEDS, [EN_HEAD, ZH_HEAD]),
        };
        let a = words[0][r.below(NEED_WORDS.min(words[0].len()))];
        let b = words[1][r.below(NEED_WORDS.min(words[1].len()))];
        if a == b {
            continue;
        }
        let text = templates[r.below(templates.len())].replace("{a}", a).replace("{b}", b);
        if !seen.insert(text.clone()) {
            continue;
        }
        let filtered = out.len() % 2 == 1;
        let base = if target == Target::Calls { 6 } else { 0 };
        let mut q = Query {
            target: Some(target),
            class: base + lang + 3 * filtered as usize,
            // The set lives as long as the benchmark.
            text: Box::leak(text.into_boxed_str()),
            ..Default::default()
        };
        if filtered {
            match target {
                Target::Agents => agent_filters(out.len() / 2, &mut q, lang == 1),
                Target::Calls => call_filters(out.len() / 2, &mut q),
            }
        }
        out.push(q);
    }
    out
}
