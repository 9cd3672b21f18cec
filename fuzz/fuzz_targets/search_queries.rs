//! Free-text search (English and Chinese, jieba) and the exact filters, through the public API
//! of `agentdir_search_index` over a small index built once per process. Every search must
//! answer, and paging must hold: a page is the slice of the full order its offset names, and
//! `total` counts every match.
//!
//! Input: 6 header bytes, then lossy UTF-8 text fields separated by U+001F:
//! `flags, limit, offset (u16 LE), min_level, joined` then `text ␟ filter ␟ filter ␟ filter`.
//! Flags: bit 0 calls instead of agents; bit 1 `verified` given, bit 2 its value; bit 3 offset
//! counts back from `usize::MAX`; bit 4 `min_level` given; bit 5 `joined_since` given, bit 6
//! it is `i64::MIN`/`i64::MAX` instead of a day near the documents' dates.

#![no_main]

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::OnceLock;

use agentdir_search_index::{AgentDoc, AgentQuery, CallDoc, CallQuery, Change, MAX_LIMIT, Page, SearchIndex};
use libfuzzer_sys::fuzz_target;

const DAY: i64 = 86_400_000;
const BASE: i64 = 1_780_000_000_000;

struct Fixture {
    index: SearchIndex,
    agents: HashSet<u64>,
    calls: HashSet<u64>,
}

static DIR: OnceLock<PathBuf> = OnceLock::new();
static FIXTURE: OnceLock<Fixture> = OnceLock::new();

extern "C" fn remove_dir() {
    if let Some(dir) = DIR.get() {
        let _ = std::fs::remove_dir_all(dir);
    }
}

fn fixture() -> &'static Fixture {
    FIXTURE.get_or_init(|| {
        let dir =
            tempfile::Builder::new().prefix("agentdir-fuzz-search-").tempdir().expect("temp dir").keep();
        let dir = DIR.get_or_init(|| dir);
        // Statics are never dropped; remove the index when the fuzzer exits.
        // SAFETY: registers a plain `extern "C"` function that only touches a `OnceLock`.
        unsafe { libc::atexit(remove_dir) };
        let index = SearchIndex::open(dir).expect("open the search index");
        let (agents, calls) = documents();
        let mut changes: Vec<Change> = agents.iter().cloned().map(Change::UpsertAgent).collect();
        changes.extend(calls.iter().cloned().map(Change::UpsertCall));
        index.apply(changes, 1).expect("apply");
        // A second commit: updated documents and removals leave deletions and a second segment.
        let mut later = vec![Change::RemoveAgent(7), Change::RemoveCall(7)];
        later.extend(agents.iter().filter(|a| a.key % 5 == 0).cloned().map(|mut a| {
            a.last_active_at += DAY;
            Change::UpsertAgent(a)
        }));
        later.extend(calls.iter().filter(|c| c.key % 5 == 0).cloned().map(Change::UpsertCall));
        index.apply(later, 2).expect("apply");
        let agents = agents.iter().map(|a| a.key).filter(|k| *k != 7).collect();
        let calls = calls.iter().map(|c| c.key).filter(|k| *k != 7).collect();
        Fixture { index, agents, calls }
    })
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

fn documents() -> (Vec<AgentDoc>, Vec<CallDoc>) {
    let mut agents = vec![
        AgentDoc {
            key: 1,
            handle: "zh-translator-01".into(),
            name: "中文翻译助手".into(),
            tagline: "English ↔ 中文 translation".into(),
            description_en: "Careful translation of technical documents between English and Chinese.".into(),
            description_zh: "我们提供中文翻译和本地化服务".into(),
            capabilities: strings(&["translation", "localisation"]),
            languages: strings(&["en", "zh-CN"]),
            offering_titles: strings(&["README 翻译"]),
            offering_deliverables: strings(&["A Chinese README"]),
            offering_tags: strings(&["docs", "翻译"]),
            observed: Vec::new(),
            model: "GPT-4o".into(),
            level: 2,
            mailbox_verified: true,
            live: true,
            joined_at: BASE - 40 * DAY,
            last_active_at: BASE,
        },
        AgentDoc {
            key: 2,
            handle: "lexi".into(),
            name: "Lexi".into(),
            tagline: "Legal proofreading".into(),
            description_en: "We translate legal documents from German and proofread contracts.".into(),
            capabilities: strings(&["proofreading", "Translation"]),
            languages: strings(&["de", "en"]),
            level: 1,
            mailbox_verified: true,
            joined_at: BASE - 2 * DAY,
            last_active_at: BASE - DAY,
            ..Default::default()
        },
        AgentDoc {
            key: 3,
            handle: "data-miner".into(),
            name: "数据分析师".into(),
            description_zh: "擅长机器学习、数据分析与人工智能应用开发".into(),
            capabilities: strings(&["数据分析", "machine learning"]),
            languages: strings(&["zh"]),
            offering_titles: strings(&["数据清洗"]),
            offering_tags: strings(&["data"]),
            observed: Vec::new(),
            joined_at: BASE - 400 * DAY,
            last_active_at: BASE - 3 * DAY,
            ..Default::default()
        },
        AgentDoc {
            key: 4,
            handle: "subtitle-bot".into(),
            name: "Subtitle bot".into(),
            tagline: "Video subtitles, fast".into(),
            description_en: "Subtitles for video in 12 languages; SRT and VTT.".into(),
            capabilities: strings(&["subtitles", "video"]),
            languages: strings(&["en", "pt-BR", "ja"]),
            level: 1,
            mailbox_verified: true,
            joined_at: BASE,
            last_active_at: BASE,
            ..Default::default()
        },
    ];
    let words = ["translation", "review", "翻译", "审校", "data", "legal", "video", "本地化服务", "code"];
    for key in 10..130u64 {
        let w = |i: u64| words[((key * 7 + i * 3) % words.len() as u64) as usize];
        agents.push(AgentDoc {
            key,
            handle: format!("agent-{key}"),
            name: format!("Agent {key} {}", w(0)),
            tagline: format!("{} and {}", w(1), w(2)),
            description_en: format!("Paging fixture number {key}: {} {}", w(3), w(4)),
            description_zh: format!("第{key}号 {}", w(5)),
            capabilities: vec![w(6).into()],
            languages: vec![["en", "zh", "de"][(key % 3) as usize].into()],
            level: key % 3,
            mailbox_verified: key % 2 == 0,
            joined_at: BASE - (key as i64 % 60) * DAY,
            // Ties on purpose: the key breaks them.
            last_active_at: BASE - (key as i64 % 10) * DAY,
            ..Default::default()
        });
    }

    let mut calls = vec![
        CallDoc {
            key: 1,
            title: "Need a reviewer for a Chinese glossary".into(),
            body: "Looking for a careful reviewer of 200 terms.".into(),
            deliverable: "A reviewed glossary".into(),
            tags: strings(&["review", "glossary"]),
            kind: "seeking".into(),
            lang: "en".into(),
            author_handle: "lexi".into(),
            created_at: BASE - DAY,
            ..Default::default()
        },
        CallDoc {
            key: 2,
            title: "免费翻译开源项目文档".into(),
            body: "我们可以帮忙审校。".into(),
            constraints: "两周内".into(),
            tags: strings(&["翻译", "docs"]),
            kind: "offering".into(),
            lang: "zh".into(),
            author_handle: "zh-translator-01".into(),
            created_at: BASE,
            ..Default::default()
        },
        CallDoc {
            key: 3,
            title: "Hello".into(),
            body: "First call".into(),
            kind: "announce".into(),
            lang: "en".into(),
            author_handle: "subtitle-bot".into(),
            created_at: BASE - 2 * DAY,
            ..Default::default()
        },
    ];
    for key in 10..130u64 {
        let w = |i: u64| words[((key * 5 + i) % words.len() as u64) as usize];
        calls.push(CallDoc {
            key,
            title: format!("Call {key}: {} {}", w(0), w(1)),
            body: format!("{} — {} {}", w(2), w(3), w(4)),
            tags: vec![w(5).into(), "even".into()],
            kind: ["seeking", "offering", "announce"][(key % 3) as usize].into(),
            lang: ["en", "zh", "other"][(key % 3) as usize].into(),
            author_handle: format!("agent-{}", 10 + key % 7),
            created_at: BASE - (key as i64 % 9) * DAY,
            ..Default::default()
        });
    }
    (agents, calls)
}

fuzz_target!(|data: &[u8]| {
    let Some((header, rest)) = data.split_first_chunk::<6>() else {
        return;
    };
    let [flags, limit, off_lo, off_hi, min_level, joined] = *header;
    let bit = |n: u8| flags & (1 << n) != 0;
    let limit = usize::from(limit);
    let offset = usize::from(u16::from_le_bytes([off_lo, off_hi]));
    let offset = if bit(3) { usize::MAX - offset } else { offset };
    let rest = String::from_utf8_lossy(rest);
    let mut fields = rest.split('\u{1f}');
    let (text, f1, f2, f3) = (fields.next(), fields.next(), fields.next(), fields.next());
    let f = fixture();

    if bit(0) {
        let q = CallQuery { text, kind: f1, tag: f2, author_handle: f3, limit, offset };
        let run = |q: &CallQuery| f.index.search_calls(q).unwrap_or_else(|e| panic!("{q:?}: {e:?}"));
        let reference = run(&CallQuery { offset: 0, limit: MAX_LIMIT, ..q });
        check(&q, offset, limit, &run(&q), &run(&q), &reference, &f.calls);
    } else {
        let joined_since = match (bit(5), bit(6)) {
            (false, _) => None,
            (true, false) => Some(BASE + (i64::from(joined) - 128) * DAY),
            (true, true) => Some(if joined % 2 == 0 { i64::MIN } else { i64::MAX }),
        };
        // As the core derives it: the text read as a whole handle, when it is one.
        let handle = text.and_then(agentdir::domain::agent::as_handle);
        let q = AgentQuery {
            text,
            handle: handle.as_deref(),
            capability: f1,
            language: f2,
            mailbox_verified: bit(1).then_some(bit(2)),
            live: None,
            min_level: bit(4).then_some(u64::from(min_level)),
            joined_since,
            limit,
            offset,
        };
        let run = |q: &AgentQuery| f.index.search_agents(q).unwrap_or_else(|e| panic!("{q:?}: {e:?}"));
        let reference = run(&AgentQuery { offset: 0, limit: MAX_LIMIT, ..q });
        check(&q, offset, limit, &run(&q), &run(&q), &reference, &f.agents);
    }
});

fn check<Q: std::fmt::Debug>(
    q: &Q,
    offset: usize,
    limit: usize,
    page: &Page,
    again: &Page,
    first: &Page,
    live: &HashSet<u64>,
) {
    let limit = limit.min(MAX_LIMIT);
    assert!(page.keys.len() <= limit, "{q:?}: {page:?}");
    assert!(page.total >= page.keys.len() as u64, "{q:?}: {page:?}");
    assert!(page.total <= live.len() as u64, "{q:?}: {page:?}");
    // Exactly the rest of the matches, up to the limit.
    let left = page.total.saturating_sub(offset as u64);
    assert_eq!(page.keys.len() as u64, left.min(limit as u64), "{q:?}: {page:?}");
    let distinct: HashSet<u64> = page.keys.iter().copied().collect();
    assert_eq!(distinct.len(), page.keys.len(), "a key repeats: {q:?}: {page:?}");
    assert!(page.keys.iter().all(|k| live.contains(k)), "a removed or unknown key: {q:?}: {page:?}");
    // Asking again (now from the result cache) gives the same page.
    assert_eq!(page, again, "{q:?}");
    // The page is the slice of the full order its offset names.
    assert_eq!(first.total, page.total, "{q:?}");
    if let Some(slice) = first.keys.get(offset..offset.saturating_add(page.keys.len())) {
        assert_eq!(slice, page.keys.as_slice(), "{q:?}: first page {first:?}");
    }
}
