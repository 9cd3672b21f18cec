//! Behaviour tests against a real tantivy index in a temporary directory.

use std::collections::HashSet;
use std::path::Path;

use tempfile::TempDir;

use super::*;

fn agent(key: u64, handle: &str, name: &str) -> AgentDoc {
    AgentDoc {
        key,
        handle: handle.into(),
        name: name.into(),
        languages: vec!["en".into()],
        level: 1,
        joined_at: 1_000,
        last_active_at: 1_000,
        ..Default::default()
    }
}

fn call(key: u64, title: &str) -> CallDoc {
    CallDoc {
        key,
        title: title.into(),
        kind: "seeking".into(),
        lang: "en".into(),
        author_handle: "alice".into(),
        created_at: key as i64 * 10,
        ..Default::default()
    }
}

fn open(dir: &Path) -> SearchIndex {
    SearchIndex::open(dir).expect("open")
}

fn fresh() -> (TempDir, SearchIndex) {
    let dir = TempDir::new().expect("tempdir");
    let idx = open(dir.path());
    (dir, idx)
}

fn with_agents(agents: Vec<AgentDoc>) -> (TempDir, SearchIndex) {
    let (dir, idx) = fresh();
    idx.apply(agents.into_iter().map(Change::UpsertAgent).collect(), 1).expect("apply");
    (dir, idx)
}

/// A query's text read as a handle the way the directory's core reads it (trimmed, without `@`,
/// lower-cased, of handle characters), for queries built here.
fn as_handle(text: &str) -> Option<&'static str> {
    let h = text.trim().trim_start_matches('@').to_lowercase();
    let ok = (3..=32).contains(&h.len())
        && h.bytes().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-');
    ok.then(|| &*Box::leak(h.into_boxed_str()))
}

fn aq(text: &str) -> AgentQuery<'_> {
    AgentQuery { text: Some(text), handle: as_handle(text), limit: 100, ..Default::default() }
}

fn cq(text: &str) -> CallQuery<'_> {
    CallQuery { text: Some(text), limit: 100, ..Default::default() }
}

fn keys(idx: &SearchIndex, q: &AgentQuery) -> Vec<u64> {
    idx.search_agents(q).expect("search").keys
}

fn call_keys(idx: &SearchIndex, q: &CallQuery) -> Vec<u64> {
    idx.search_calls(q).expect("search").keys
}

fn sorted(mut v: Vec<u64>) -> Vec<u64> {
    v.sort_unstable();
    v
}

#[test]
fn new_index_needs_rebuild_and_starts_at_seq_zero() {
    let (_dir, idx) = fresh();
    assert!(idx.needs_rebuild());
    assert_eq!(idx.applied_seq(), 0);
    let page = idx.search_agents(&aq("anything")).expect("search");
    assert_eq!(page, Page::default());
}

#[test]
fn chinese_text_finds_segmented_description() {
    let mut a = agent(1, "zh-translator-01", "Babel");
    a.description_zh = "我们提供中文翻译和本地化服务".into();
    let mut b = agent(2, "coder", "Coder");
    b.description_zh = "我们编写软件".into();
    let (_d, idx) = with_agents(vec![a, b]);
    assert_eq!(keys(&idx, &aq("翻译")), vec![1]);
    assert_eq!(keys(&idx, &aq("本地化")), vec![1]);
    assert_eq!(keys(&idx, &aq("本地")), vec![1]);
    assert_eq!(keys(&idx, &aq("中文翻译")), vec![1]);
    assert_eq!(sorted(keys(&idx, &aq("我们"))), vec![1, 2]);
    assert!(keys(&idx, &aq("翻译 软件")).is_empty());
}

#[test]
fn english_text_is_stemmed_and_case_insensitive() {
    let mut a = agent(1, "docs-bot", "Docs");
    a.description_en = "I translate legal DOCUMENTS quickly.".into();
    let (_d, idx) = with_agents(vec![a]);
    for q in ["translation", "Translating", "document", "LEGAL documents"] {
        assert_eq!(keys(&idx, &aq(q)), vec![1], "query {q}");
    }
}

#[test]
fn mixed_language_query_needs_every_word() {
    let mut both = agent(1, "babel", "Babel");
    both.description_en = "Professional translation".into();
    both.description_zh = "专业翻译".into();
    let mut en_only = agent(2, "en-only", "English");
    en_only.description_en = "Professional translation".into();
    let mut zh_only = agent(3, "zh-only", "Chinese");
    zh_only.tagline = "专业翻译".into();
    let (_d, idx) = with_agents(vec![both, en_only, zh_only]);
    assert_eq!(keys(&idx, &aq("translation 翻译")), vec![1]);
    assert_eq!(keys(&idx, &aq("translation翻译")), vec![1]);
    assert_eq!(sorted(keys(&idx, &aq("翻译"))), vec![1, 3]);
    assert!(keys(&idx, &aq("translation nonexistentword")).is_empty());
}

/// Agents with typical field lengths, none mentioning the words the ranking tests search for,
/// so field statistics look like a real directory's rather than a four-document toy's.
fn filler(from: u64, n: u64) -> Vec<AgentDoc> {
    (from..from + n)
        .map(|k| {
            let mut a = agent(k, &format!("filler-{k}"), "Generic Worker");
            a.tagline = "Reliable help with everyday tasks".into();
            a.capabilities = vec!["writing".into(), "research".into()];
            a.description_en =
                "We answer questions, draft emails, summarise reports and keep schedules tidy for busy teams."
                    .into();
            a.description_zh = "我们帮助团队整理日程、撰写邮件和总结报告。".into();
            a
        })
        .collect()
}

#[test]
fn name_and_handle_matches_rank_above_description_matches() {
    let mut in_desc = agent(9, "helper", "Helper");
    in_desc.description_en =
        "General helper. Also does translation, translation review and more translation.".into();
    in_desc.offering_deliverables = vec!["a translation".into()];
    let in_name = agent(1, "bot-a", "Translation Studio");
    let in_handle = agent(2, "translation-bot", "Studio B");
    let mut in_tagline = agent(3, "bot-c", "Studio C");
    in_tagline.tagline = "Fast translation for contracts".into();
    let mut docs = vec![in_desc, in_name, in_handle, in_tagline];
    docs.extend(filler(100, 40));
    let (_d, idx) = with_agents(docs);
    let got = keys(&idx, &aq("translation"));
    assert_eq!(got.len(), 4);
    assert!(got[..2].contains(&1) && got[..2].contains(&2), "{got:?}");
    assert_eq!(got[3], 9, "description-only match must rank last: {got:?}");

    let mut zh_desc = agent(20, "helper-zh", "助手");
    zh_desc.description_zh = "我们提供翻译服务，翻译质量高".into();
    let zh_name = agent(10, "babel-zh", "翻译工作室");
    let mut docs = vec![zh_desc, zh_name];
    docs.extend(filler(100, 40));
    let (_d, idx) = with_agents(docs);
    assert_eq!(keys(&idx, &aq("翻译")), vec![10, 20]);
}

#[test]
fn handle_matches_whole_and_by_parts() {
    let target = agent(1, "zh-translator-01", "Babel");
    let mut other = agent(2, "other", "Other");
    other.description_en = "zh translator 01".into();
    let mut third = agent(3, "zh-translator-02", "Babel Two");
    third.description_en = "translator".into();
    let (_d, idx) = with_agents(vec![target, other, third]);
    let whole = keys(&idx, &aq("zh-translator-01"));
    assert_eq!(whole[0], 1, "{whole:?}");
    assert_eq!(sorted(whole), vec![1, 2]);
    assert_eq!(keys(&idx, &aq("@ZH-Translator-01"))[0], 1);
    assert_eq!(sorted(keys(&idx, &aq("translator"))), vec![1, 2, 3]);
    assert_eq!(sorted(keys(&idx, &aq("translator 02"))), vec![3]);
}

#[test]
fn free_text_matches_capabilities_and_tags_as_words() {
    let mut a = agent(1, "a", "A");
    a.capabilities = vec!["data-analysis".into()];
    let mut b = agent(2, "b", "B");
    b.offering_tags = vec!["爬虫".into()];
    b.offering_titles = vec!["Web scraping package".into()];
    let (_d, idx) = with_agents(vec![a, b]);
    assert_eq!(keys(&idx, &aq("analysis")), vec![1]);
    assert_eq!(keys(&idx, &aq("data analysis")), vec![1]);
    assert_eq!(keys(&idx, &aq("爬虫")), vec![2]);
    assert_eq!(keys(&idx, &aq("scraping")), vec![2]);
}

fn filter_corpus() -> Vec<AgentDoc> {
    (1..=40u64)
        .map(|k| {
            let mut a = agent(k, &format!("agent-{k}"), "Worker");
            a.description_en = "translation service".into();
            a.capabilities =
                if k % 2 == 0 { vec!["Translation".into(), "OCR".into()] } else { vec!["coding".into()] };
            a.languages = if k % 3 == 0 { vec!["zh".into(), "pt-BR".into()] } else { vec!["en".into()] };
            a.mailbox_verified = k % 5 == 0;
            a.live = k % 7 == 0;
            a.level = k % 3;
            a.joined_at = k as i64 * 100;
            a.last_active_at = 10_000 - k as i64;
            a
        })
        .collect()
}

#[test]
fn every_agent_filter_alone_and_combined() {
    let corpus = filter_corpus();
    let (_d, idx) = with_agents(corpus.clone());
    let expect = |pred: &dyn Fn(&AgentDoc) -> bool| -> Vec<u64> {
        sorted(corpus.iter().filter(|a| pred(a)).map(|a| a.key).collect())
    };
    let base = AgentQuery { limit: 100, ..Default::default() };
    let cases: Vec<(AgentQuery, Vec<u64>)> = vec![
        (AgentQuery { capability: Some("TRANSLATION"), ..base }, expect(&|a| a.key % 2 == 0)),
        (AgentQuery { capability: Some("ocr"), ..base }, expect(&|a| a.key % 2 == 0)),
        (AgentQuery { capability: Some("translat"), ..base }, vec![]),
        (AgentQuery { language: Some("PT-br"), ..base }, expect(&|a| a.key % 3 == 0)),
        (AgentQuery { language: Some("pt"), ..base }, vec![]),
        (AgentQuery { mailbox_verified: Some(true), ..base }, expect(&|a| a.mailbox_verified)),
        (AgentQuery { mailbox_verified: Some(false), ..base }, expect(&|a| !a.mailbox_verified)),
        (AgentQuery { live: Some(true), ..base }, expect(&|a| a.live)),
        (AgentQuery { live: Some(false), ..base }, expect(&|a| !a.live)),
        (
            AgentQuery { text: Some("translation"), live: Some(true), min_level: Some(1), ..base },
            expect(&|a| a.live && a.level >= 1),
        ),
        (AgentQuery { min_level: Some(2), ..base }, expect(&|a| a.level >= 2)),
        (AgentQuery { min_level: Some(0), ..base }, expect(&|_| true)),
        (AgentQuery { joined_since: Some(2_000), ..base }, expect(&|a| a.joined_at >= 2_000)),
        (
            AgentQuery {
                capability: Some("translation"),
                language: Some("zh"),
                mailbox_verified: Some(false),
                min_level: Some(1),
                joined_since: Some(600),
                ..base
            },
            expect(&|a| {
                a.key % 2 == 0 && a.key % 3 == 0 && !a.mailbox_verified && a.level >= 1 && a.joined_at >= 600
            }),
        ),
        (
            AgentQuery { text: Some("translation"), capability: Some("ocr"), min_level: Some(1), ..base },
            expect(&|a| a.key % 2 == 0 && a.level >= 1),
        ),
        (AgentQuery { capability: Some("   "), text: Some("  "), ..base }, expect(&|_| true)),
    ];
    for (i, (q, want)) in cases.iter().enumerate() {
        let page = idx.search_agents(q).expect("search");
        assert_eq!(page.total as usize, want.len(), "case {i}");
        assert_eq!(sorted(page.keys), *want, "case {i}");
    }
}

#[test]
fn filters_do_not_change_scores_or_order() {
    let mut corpus = filter_corpus();
    for (i, a) in corpus.iter_mut().enumerate() {
        // Varying lengths give varying scores.
        a.description_en = format!("translation {}", "filler ".repeat(i % 7));
    }
    let (_d, idx) = with_agents(corpus.clone());
    let unfiltered = keys(&idx, &aq("translation"));
    let filtered = keys(&idx, &AgentQuery { capability: Some("translation"), ..aq("translation") });
    let expected: Vec<u64> = unfiltered.iter().copied().filter(|k| k % 2 == 0).collect();
    assert_eq!(filtered, expected);
}

#[test]
fn without_text_agents_order_by_activity_then_key() {
    let mut docs = Vec::new();
    for k in 1..=10u64 {
        let mut a = agent(k, &format!("a{k}"), "A");
        a.last_active_at = if k <= 5 { 500 } else { k as i64 };
        docs.push(a);
    }
    let (_d, idx) = with_agents(docs);
    let got = keys(&idx, &AgentQuery { limit: 100, ..Default::default() });
    assert_eq!(got, vec![5, 4, 3, 2, 1, 10, 9, 8, 7, 6]);
}

#[test]
fn equal_scores_break_ties_by_key_desc() {
    let docs: Vec<AgentDoc> = (1..=30u64)
        .map(|k| {
            let mut a = agent(k, &format!("same-{k}"), "Same Name");
            a.description_en = "identical words here".into();
            a
        })
        .collect();
    let (_d, idx) = with_agents(docs);
    let got = keys(&idx, &aq("identical"));
    assert_eq!(got, (1..=30u64).rev().collect::<Vec<_>>());
}

/// Pages through `q` with `limit` and checks the pages concatenate to the full order.
fn check_paging(idx: &SearchIndex, q: AgentQuery, limit: usize) -> Vec<u64> {
    let full = idx.search_agents(&AgentQuery { limit: 100, offset: 0, ..q }).expect("search");
    let mut all = full.keys.clone();
    let mut offset = 100;
    while (offset as u64) < full.total {
        let next = idx.search_agents(&AgentQuery { limit: 100, offset, ..q }).expect("search");
        all.extend(next.keys);
        offset += 100;
    }
    assert_eq!(all.len() as u64, full.total);
    let mut paged = Vec::new();
    let mut offset = 0;
    loop {
        let page = idx.search_agents(&AgentQuery { limit, offset, ..q }).expect("search");
        assert_eq!(page.total, full.total, "total must not depend on the page");
        if page.keys.is_empty() {
            break;
        }
        paged.extend(page.keys);
        offset += limit;
    }
    assert_eq!(paged, all, "pages must concatenate to the full order");
    let unique: HashSet<_> = paged.iter().collect();
    assert_eq!(unique.len(), paged.len(), "no duplicates");
    paged
}

#[test]
fn paging_is_stable_through_many_upserts_and_deletes() {
    let (_d, idx) = fresh();
    let mut live = std::collections::BTreeMap::new();
    let mut seq = 0;
    // Many small commits create many segments, and merges run in the background meanwhile.
    for round in 0..40u64 {
        let mut changes = Vec::new();
        for j in 0..15u64 {
            let k = (round * 7 + j * 13) % 300 + 1;
            if (round + j) % 5 == 0 {
                live.remove(&k);
                changes.push(Change::RemoveAgent(k));
            } else {
                let mut a = agent(k, &format!("agent-{k}"), "Worker");
                a.description_en = format!("translation {}", "word ".repeat((k % 4) as usize));
                a.last_active_at = (k % 9) as i64;
                live.insert(k, a.clone());
                changes.push(Change::UpsertAgent(a));
            }
        }
        seq += 1;
        idx.apply(changes, seq).expect("apply");
    }
    let no_text = AgentQuery { limit: 100, ..Default::default() };
    let got = check_paging(&idx, no_text, 7);
    let mut want: Vec<&AgentDoc> = live.values().collect();
    want.sort_by_key(|a| std::cmp::Reverse((a.last_active_at, a.key)));
    assert_eq!(got, want.iter().map(|a| a.key).collect::<Vec<_>>());

    let got = check_paging(&idx, aq("translation"), 9);
    assert_eq!(sorted(got.clone()), live.keys().copied().collect::<Vec<_>>());
    // Within an equal-score group (same description length), keys descend.
    for len in 0..4u64 {
        let group: Vec<u64> = got.iter().copied().filter(|k| k % 4 == len).collect();
        let mut desc = group.clone();
        desc.sort_unstable_by(|a, b| b.cmp(a));
        assert_eq!(group, desc);
    }
    check_paging(&idx, AgentQuery { min_level: Some(1), ..aq("worker") }, 13);
}

#[test]
fn offset_past_the_end_and_limit_clamp() {
    let docs: Vec<AgentDoc> = (1..=150u64).map(|k| agent(k, &format!("a{k}"), "Same")).collect();
    let (_d, idx) = with_agents(docs);
    let page = idx.search_agents(&AgentQuery { limit: 1000, ..Default::default() }).expect("search");
    assert_eq!(page.total, 150);
    assert_eq!(page.keys.len(), MAX_LIMIT);
    for offset in [150, 151, 10_000, usize::MAX] {
        let page = idx.search_agents(&AgentQuery { limit: 10, offset, ..aq("same") }).expect("search");
        assert_eq!(page.total, 150);
        assert!(page.keys.is_empty());
    }
    let page = idx.search_agents(&AgentQuery { limit: 10, offset: 145, ..aq("same") }).expect("search");
    assert_eq!(page.keys, vec![5, 4, 3, 2, 1]);
}

#[test]
fn upsert_replaces_and_remove_removes() {
    let mut a = agent(1, "shifty", "Old Name");
    a.capabilities = vec!["painting".into()];
    let (_d, idx) = with_agents(vec![a.clone(), agent(2, "other", "Other")]);
    assert_eq!(keys(&idx, &aq("old")), vec![1]);

    a.name = "New Name".into();
    a.capabilities = vec!["sculpting".into()];
    idx.apply(vec![Change::UpsertAgent(a)], 2).expect("apply");
    assert!(keys(&idx, &aq("old")).is_empty());
    assert_eq!(keys(&idx, &aq("new")), vec![1]);
    let cap = |c| AgentQuery { capability: Some(c), limit: 10, ..Default::default() };
    assert!(keys(&idx, &cap("painting")).is_empty());
    assert_eq!(keys(&idx, &cap("sculpting")), vec![1]);
    let all = idx.search_agents(&cap("")).expect("search");
    assert_eq!(all.total, 2, "an upsert must not duplicate");

    idx.apply(vec![Change::RemoveAgent(1)], 3).expect("apply");
    assert!(keys(&idx, &aq("new")).is_empty());
    assert_eq!(idx.search_agents(&cap("")).expect("search").keys, vec![2]);
    assert_eq!(idx.applied_seq(), 3);

    // The same key twice in one batch: the last upsert wins.
    let mut x = agent(5, "x", "First");
    idx.apply(vec![Change::UpsertAgent(x.clone())], 4).expect("apply");
    x.name = "Second".into();
    let mut y = x.clone();
    y.name = "Third".into();
    idx.apply(vec![Change::UpsertAgent(x), Change::UpsertAgent(y)], 5).expect("apply");
    assert!(keys(&idx, &aq("second")).is_empty());
    assert_eq!(keys(&idx, &aq("third")), vec![5]);
}

#[test]
fn calls_text_filters_and_order() {
    let mut docs = Vec::new();
    for k in 1..=20u64 {
        let mut c = call(k, if k % 2 == 0 { "Need a translator" } else { "寻找数据分析" });
        c.body = "Details follow. 详细说明".into();
        c.tags = if k % 4 == 0 { vec!["Legal".into(), "urgent".into()] } else { vec!["misc".into()] };
        c.kind = if k % 3 == 0 { "offering" } else { "seeking" }.into();
        c.author_handle = if k <= 10 { "alice" } else { "bob-2" }.into();
        c.created_at = if k > 15 { 5_000 } else { k as i64 * 10 };
        docs.push(c);
    }
    let (_d, idx) = fresh();
    idx.apply(docs.iter().cloned().map(Change::UpsertCall).collect(), 7).expect("apply");
    let all = CallQuery { limit: 100, ..Default::default() };
    let got = call_keys(&idx, &all);
    let mut want: Vec<u64> = (16..=20).rev().collect();
    want.extend((1..=15).rev());
    assert_eq!(got, want);

    let expect = |pred: &dyn Fn(&CallDoc) -> bool| -> Vec<u64> {
        sorted(docs.iter().filter(|c| pred(c)).map(|c| c.key).collect())
    };
    assert_eq!(sorted(call_keys(&idx, &cq("translators"))), expect(&|c| c.key % 2 == 0));
    assert_eq!(sorted(call_keys(&idx, &cq("数据分析"))), expect(&|c| c.key % 2 == 1));
    assert_eq!(sorted(call_keys(&idx, &cq("legal"))), expect(&|c| c.key % 4 == 0));
    assert_eq!(sorted(call_keys(&idx, &cq("bob"))), expect(&|c| c.key > 10));
    let cases: Vec<(CallQuery, Vec<u64>)> = vec![
        (CallQuery { kind: Some("Offering"), ..all }, expect(&|c| c.kind == "offering")),
        (CallQuery { tag: Some("LEGAL"), ..all }, expect(&|c| c.key % 4 == 0)),
        (CallQuery { tag: Some("leg"), ..all }, vec![]),
        (CallQuery { author_handle: Some("bob-2"), ..all }, expect(&|c| c.key > 10)),
        (CallQuery { author_handle: Some("bob"), ..all }, vec![]),
        (
            CallQuery {
                text: Some("translator"),
                kind: Some("seeking"),
                tag: Some("urgent"),
                author_handle: Some("alice"),
                ..all
            },
            expect(&|c| c.key % 2 == 0 && c.kind == "seeking" && c.key % 4 == 0 && c.key <= 10),
        ),
    ];
    for (i, (q, want)) in cases.iter().enumerate() {
        let page = idx.search_calls(q).expect("search");
        assert_eq!(page.total as usize, want.len(), "case {i}");
        assert_eq!(sorted(page.keys), *want, "case {i}");
    }

    idx.apply(vec![Change::RemoveCall(2)], 8).expect("apply");
    assert!(!call_keys(&idx, &cq("translator")).contains(&2));
}

#[test]
fn three_words_need_all_unless_no_call_holds_them_all() {
    let (_d, idx) = fresh();
    let titles = [
        (1, "logo designer wanted"),
        (2, "logo designer for a bakery"),
        (3, "designer of posters"),
        (4, "vector logo redraw"),
        (5, "bakery website"),
    ];
    idx.apply(titles.iter().map(|(k, t)| Change::UpsertCall(call(*k, t))).collect(), 1).expect("apply");
    let found = |q: &str| sorted(call_keys(&idx, &cq(q)));
    // Some call holds all three: only those match, as before.
    assert_eq!(found("logo designer bakery"), vec![2]);
    // None holds all three: the calls holding two of them.
    assert_eq!(found("logo designer poster"), vec![1, 2, 3]);
    // One word no call holds: the calls holding both others.
    assert_eq!(found("logo designer zqxv"), vec![1, 2]);
    assert_eq!(idx.search_calls(&cq("logo designer zqxv")).expect("search").total, 2);
    // Two words nobody holds: nothing.
    assert_eq!(found("logo zqxv wvkq"), Vec::<u64>::new());
    // Two words still need both.
    assert_eq!(found("logo zqxv"), Vec::<u64>::new());

    // The same rule tells given calls that hold the words from the others.
    let given: HashSet<u64> = (1..=5).collect();
    let holding = |q: &str| sorted(idx.calls_holding(&cq(q), &given).expect("holding").into_iter().collect());
    assert_eq!(holding("logo designer bakery"), vec![2]);
    assert_eq!(holding("logo designer poster"), vec![1, 2, 3]);
    assert_eq!(holding("logo designer zqxv"), vec![1, 2]);
    assert_eq!(holding("bakery"), vec![2, 5]);
    assert_eq!(holding("a logo and a vector redraw of it"), vec![4]);
    let some: HashSet<u64> = [1, 5].into();
    assert_eq!(idx.calls_holding(&cq("logo"), &some).expect("holding"), HashSet::from([1u64]));
    let tagged = CallQuery { tag: Some("nope"), ..cq("logo") };
    assert!(idx.calls_holding(&tagged, &given).expect("holding").is_empty());
}

#[test]
fn call_title_ranks_above_body() {
    let mut in_body = call(2, "Something else");
    in_body.body = "we need a logo designer".into();
    let in_title = call(1, "Logo designer wanted");
    let (_d, idx) = fresh();
    idx.apply(vec![Change::UpsertCall(in_body), Change::UpsertCall(in_title)], 1).expect("apply");
    assert_eq!(call_keys(&idx, &cq("logo")), vec![1, 2]);
}

#[test]
fn hostile_query_strings_are_harmless() {
    let mut a = agent(1, "zh-translator-01", "Babel 翻译");
    a.description_en = "translation AND OR NOT".into();
    let (_d, idx) = with_agents(vec![a]);
    idx.apply(vec![Change::UpsertCall(call(1, "translation"))], 2).expect("apply");
    let long_ascii = "a".repeat(2000);
    let long_words = "translation ".repeat(170);
    let long_cjk = "翻译".repeat(1000);
    let mixed = "x😀翻-".repeat(500);
    let hostile: Vec<&str> = vec![
        "+-:\"()[]{}^~*?\\/",
        "\"unbalanced",
        "title:(foo",
        "foo AND",
        "OR",
        "AND OR NOT",
        "NOT translation",
        "*",
        "?",
        "\\",
        "a:b:c",
        "[1 TO 2}",
        "field:\"x",
        "~2 ^3",
        "😀🙈",
        "\u{0}\u{1}\u{7}\u{1b}[31m",
        "\u{FFFD}\u{FFFD}",
        "\u{200B}\u{FEFF}",
        "",
        "   \t\n",
        "-",
        "--",
        "@",
        "'; DROP TABLE agents; --",
        "<script>alert(1)</script>",
        "%00%ff",
        "\u{202E}evil",
        &long_ascii,
        &long_words,
        &long_cjk,
        &mixed,
    ];
    for q in hostile {
        for offset in [0, 5, usize::MAX] {
            let aq = AgentQuery {
                text: Some(q),
                capability: Some(q),
                language: None,
                limit: 20,
                offset,
                ..Default::default()
            };
            idx.search_agents(&aq).expect("agent search must not fail");
            idx.search_agents(&AgentQuery { capability: None, ..aq }).expect("agent search must not fail");
            let cq = CallQuery {
                text: Some(q),
                tag: Some(q),
                kind: Some(q),
                author_handle: Some(q),
                limit: 20,
                offset,
            };
            idx.search_calls(&cq).expect("call search must not fail");
            idx.search_calls(&CallQuery { tag: None, kind: None, author_handle: None, ..cq })
                .expect("call search must not fail");
        }
    }
    // Words that are query syntax elsewhere are plain words here.
    assert_eq!(keys(&idx, &aq("translation AND")), vec![1]);
    assert_eq!(keys(&idx, &aq("\"translation")), vec![1]);
    assert_eq!(keys(&idx, &aq("(翻译)")), vec![1]);
    assert_eq!(keys(&idx, &aq(&long_words)), vec![1]);
    // Whitespace-only text is no text; symbol-only text matches nothing.
    assert_eq!(keys(&idx, &aq(" \t ")), vec![1]);
    assert!(keys(&idx, &aq("😀")).is_empty());
}

#[test]
fn applied_seq_and_content_survive_reopen() {
    let dir = TempDir::new().expect("tempdir");
    {
        let idx = open(dir.path());
        assert!(idx.needs_rebuild());
        idx.rebuild(
            vec![
                Change::UpsertAgent(agent(1, "keeper", "Keeper")),
                Change::UpsertCall(call(3, "kept call")),
                Change::RemoveAgent(99),
            ],
            10,
        )
        .expect("rebuild");
        assert!(!idx.needs_rebuild());
        idx.apply(vec![Change::UpsertAgent(agent(2, "second", "Second"))], 42).expect("apply");
    }
    let idx = open(dir.path());
    assert!(!idx.needs_rebuild());
    assert_eq!(idx.applied_seq(), 42);
    // A calls-only batch, then an empty one: each moves the persisted seq on its own.
    idx.apply(vec![Change::UpsertCall(call(4, "another call"))], 43).expect("apply");
    drop(idx);
    let idx = open(dir.path());
    assert_eq!(idx.applied_seq(), 43);
    idx.apply(Vec::new(), 44).expect("apply");
    drop(idx);
    let idx = open(dir.path());
    assert_eq!(idx.applied_seq(), 44);
    assert_eq!(keys(&idx, &aq("keeper")), vec![1]);
    assert_eq!(keys(&idx, &aq("second")), vec![2]);
    assert_eq!(call_keys(&idx, &cq("kept")), vec![3]);
}

#[test]
fn rebuild_replaces_everything() {
    let (_d, idx) = with_agents(vec![agent(1, "old", "Old"), agent(2, "gone", "Gone")]);
    idx.rebuild((10..20u64).map(|k| Change::UpsertAgent(agent(k, &format!("n{k}"), "New"))), 77)
        .expect("rebuild");
    assert!(keys(&idx, &aq("old")).is_empty());
    assert!(keys(&idx, &aq("gone")).is_empty());
    assert_eq!(idx.search_agents(&aq("new")).expect("search").total, 10);
    assert_eq!(idx.applied_seq(), 77);
    // Writes keep working after the rebuild's merge.
    idx.apply(vec![Change::UpsertAgent(agent(1, "back", "Back"))], 78).expect("apply");
    assert_eq!(keys(&idx, &aq("back")), vec![1]);
}

#[test]
fn second_open_of_the_same_directory_is_locked_and_touches_nothing() {
    let dir = TempDir::new().expect("tempdir");
    let idx = open(dir.path());
    idx.apply(vec![Change::UpsertAgent(agent(1, "held", "Held"))], 5).expect("apply");
    match SearchIndex::open(dir.path()) {
        Err(IndexError::Locked) => {}
        Err(e) => panic!("expected Locked, got {e:?}"),
        Ok(_) => panic!("expected Locked, got an index"),
    }
    assert_eq!(keys(&idx, &aq("held")), vec![1]);
    drop(idx);
    let idx = open(dir.path());
    assert!(!idx.needs_rebuild());
    assert_eq!(idx.applied_seq(), 5);
    assert_eq!(keys(&idx, &aq("held")), vec![1]);
}

fn populated(dir: &Path) {
    let idx = open(dir);
    idx.rebuild((1..=50u64).map(|k| Change::UpsertAgent(agent(k, &format!("a{k}"), "Populated"))), 9)
        .expect("rebuild");
}

fn assert_recreated(dir: &Path) {
    let idx = open(dir);
    assert!(idx.needs_rebuild());
    assert_eq!(idx.applied_seq(), 0);
    assert_eq!(idx.search_agents(&aq("populated")).expect("search").total, 0);
    idx.apply(vec![Change::UpsertAgent(agent(1, "again", "Again"))], 1).expect("apply");
    assert_eq!(keys(&idx, &aq("again")), vec![1]);
}

#[test]
fn corrupt_meta_is_recreated() {
    let dir = TempDir::new().expect("tempdir");
    populated(dir.path());
    std::fs::write(dir.path().join("agents/meta.json"), b"{ not json").expect("write");
    assert_recreated(dir.path());
}

/// A file of the agents index's segments with this extension.
fn agents_file(dir: &std::path::Path, extension: &str) -> std::path::PathBuf {
    std::fs::read_dir(dir.join("agents"))
        .expect("read_dir")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|e| e == extension))
        .unwrap_or_else(|| panic!("no .{extension} file"))
}

#[test]
fn corrupt_segment_file_is_recreated() {
    let dir = TempDir::new().expect("tempdir");
    populated(dir.path());
    let victim = agents_file(dir.path(), "term");
    let mut bytes = std::fs::read(&victim).expect("read");
    let mid = bytes.len() / 2;
    for b in &mut bytes[mid..mid + 8] {
        *b ^= 0xA5;
    }
    std::fs::write(&victim, bytes).expect("write");
    assert_recreated(dir.path());
}

#[test]
fn missing_segment_file_is_recreated() {
    let dir = TempDir::new().expect("tempdir");
    populated(dir.path());
    let victim = agents_file(dir.path(), "idx");
    std::fs::remove_file(victim).expect("remove");
    assert_recreated(dir.path());
}

#[test]
fn other_schema_version_is_recreated() {
    let dir = TempDir::new().expect("tempdir");
    populated(dir.path());
    {
        let index = tantivy::Index::open_in_dir(dir.path().join("agents")).expect("open");
        let mut w: tantivy::IndexWriter = index.writer_with_num_threads(1, 15_000_000).expect("w");
        let mut c = w.prepare_commit().expect("prepare");
        c.set_payload(r#"{"schema":0,"seq":9}"#);
        c.commit().expect("commit");
    }
    assert_recreated(dir.path());

    // An index from another program (no payload) is treated the same way.
    let dir = TempDir::new().expect("tempdir");
    let agents = dir.path().join("agents");
    std::fs::create_dir_all(&agents).expect("mkdir");
    let mut b = tantivy::schema::Schema::builder();
    b.add_text_field("x", tantivy::schema::TEXT);
    tantivy::Index::create_in_dir(&agents, b.build()).expect("create");
    assert_recreated(dir.path());
}

#[test]
fn index_is_send_and_sync_and_reads_concurrently() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<SearchIndex>();
    let (_d, idx) = with_agents(filter_corpus());
    let idx = std::sync::Arc::new(idx);
    let handles: Vec<_> = (0..4)
        .map(|i| {
            let idx = idx.clone();
            std::thread::spawn(move || {
                for j in 0..20u64 {
                    if i == 0 {
                        let a = agent(100 + j, &format!("w{j}"), "Writer");
                        idx.apply(vec![Change::UpsertAgent(a)], 10 + j).expect("apply");
                        assert!(keys(&idx, &aq("writer")).contains(&(100 + j)));
                    } else {
                        idx.search_agents(&aq("translation")).expect("search");
                    }
                }
            })
        })
        .collect();
    for h in handles {
        h.join().expect("thread");
    }
}

/// xorshift: deterministic pseudo-random corpora without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[(self.next() % items.len() as u64) as usize]
    }
    fn words(&mut self, items: &[&str], n: u64) -> String {
        let n = 1 + self.next() % n;
        (0..n).map(|_| self.pick(items)).collect::<Vec<_>>().join(" ")
    }
}

const EN: &[&str] =
    &["translation", "data", "legal", "python", "review", "summary", "alpha", "beta", "gamma"];
const ZH: &[&str] = &["翻译", "数据", "分析", "服务", "本地化", "法律", "代码"];
const CAPS: &[&str] = &["translation", "ocr", "coding", "writing"];

fn random_agent(r: &mut Rng, key: u64) -> AgentDoc {
    let mut a = agent(key, &format!("{}-{}-{key}", r.pick(EN), r.pick(EN)), &r.words(EN, 2));
    a.tagline = r.words(ZH, 2);
    a.description_en = r.words(EN, 12);
    a.description_zh = r.words(ZH, 6).replace(' ', "");
    a.capabilities = vec![r.pick(CAPS).into()];
    a.offering_tags = vec![r.pick(EN).into()];
    a.level = r.next() % 3;
    a.mailbox_verified = r.next().is_multiple_of(2);
    a.last_active_at = (r.next() % 50) as i64;
    a
}

/// A corpus big and skewed enough for ranking to prune: Zipf-like words, fields of varied
/// lengths, several segments, some deletes.
fn ranking_corpus(idx: &SearchIndex, r: &mut Rng) {
    fn skewed<'a>(r: &mut Rng, items: &[&'a str]) -> &'a str {
        // Early words are much more frequent.
        let a = r.next() % items.len() as u64;
        let b = r.next() % items.len() as u64;
        items[a.min(b) as usize]
    }
    fn text(r: &mut Rng, items: &[&str], max: u64) -> String {
        let n = 1 + r.next() % max;
        (0..n).map(|_| skewed(r, items)).collect::<Vec<_>>().join(" ")
    }
    for batch in 0..5u64 {
        let mut changes = Vec::new();
        for i in 0..300 {
            let key = batch * 300 + i + 1;
            let mut a = agent(key, &format!("{}-{}-{key}", skewed(r, EN), skewed(r, EN)), &text(r, EN, 3));
            a.tagline = text(r, ZH, 4);
            a.description_en = text(r, EN, 30);
            a.description_zh = text(r, ZH, 12).replace(' ', "");
            a.capabilities = vec![r.pick(CAPS).into()];
            a.languages = vec![["en", "zh"][(r.next() % 2) as usize].into()];
            a.offering_tags = vec![skewed(r, EN).into()];
            a.level = r.next() % 3;
            a.mailbox_verified = r.next().is_multiple_of(2);
            a.joined_at = (r.next() % 1000) as i64;
            a.last_active_at = (r.next() % 50) as i64;
            changes.push(Change::UpsertAgent(a));
            let mut c = call(key, &text(r, if i % 2 == 0 { EN } else { ZH }, 6));
            c.body = format!("{} {}", text(r, EN, 25), text(r, ZH, 10).replace(' ', ""));
            c.tags = vec![skewed(r, EN).into()];
            c.kind = ["seeking", "offering", "announce"][(r.next() % 3) as usize].into();
            c.author_handle = format!("{}-{}", skewed(r, EN), r.next() % 5);
            changes.push(Change::UpsertCall(c));
        }
        for _ in 0..25 {
            let key = 1 + r.next() % ((batch + 1) * 300);
            changes.push(if key.is_multiple_of(2) {
                Change::RemoveAgent(key)
            } else {
                Change::RemoveCall(key)
            });
        }
        idx.apply(changes, batch + 1).expect("apply");
        // The last two batches stay in memory (overlay.rs), replacing and removing some of
        // what is on disk.
        if batch == 2 {
            idx.flush().expect("flush");
        }
    }
}

fn random_text(r: &mut Rng, i: usize) -> String {
    match i % 6 {
        0 => r.words(EN, 3),
        1 => r.words(ZH, 2),
        2 => format!("{} {}", r.pick(EN), r.pick(ZH)),
        3 => format!("{}-{}-{}", r.pick(EN), r.pick(EN), r.next() % 1500),
        4 => r.words(ZH, 3).replace(' ', ""),
        _ => r.pick(EN).to_string(),
    }
}

fn random_agent_query<'a>(r: &mut Rng, text: &'a str, i: usize) -> AgentQuery<'a> {
    let mut q = AgentQuery { text: Some(text), limit: 100, ..Default::default() };
    match i % 7 {
        1 => q.capability = Some(r.pick(CAPS)),
        2 => q.language = Some(["en", "zh"][(r.next() % 2) as usize]),
        3 => q.mailbox_verified = Some(r.next().is_multiple_of(2)),
        4 => q.min_level = Some(1 + r.next() % 2),
        5 => q.joined_since = Some((r.next() % 1000) as i64),
        6 => (q.capability, q.min_level) = (Some(r.pick(CAPS)), Some(1)),
        _ => {}
    }
    q
}

fn random_call_query<'a>(r: &mut Rng, text: &'a str, i: usize) -> CallQuery<'a> {
    let mut q = CallQuery { text: Some(text), limit: 100, ..Default::default() };
    match i % 4 {
        1 => q.tag = Some(r.pick(EN)),
        2 => q.kind = Some(["seeking", "offering", "announce"][(r.next() % 3) as usize]),
        3 => (q.tag, q.author_handle) = (Some(r.pick(EN)), Some("data-1")),
        _ => {}
    }
    q
}

/// Every match with tantivy's own scores for the equivalent query (BooleanQuery of the words'
/// DisjunctionMax queries, the exact-handle alternative, filters as zero-score clauses), and the
/// numeric filters applied by key.
fn reference(
    idx: &SearchIndex,
    part: &Part,
    fields: &[(tantivy::schema::Field, f32)],
    text: &str,
    handle: Option<tantivy::schema::Field>,
    filters: Vec<Term>,
    keep: &dyn Fn(u64) -> bool,
) -> Vec<(f32, u64)> {
    use tantivy::collector::TopDocs;
    use tantivy::query::{BooleanQuery, ConstScoreQuery, Occur, Query, TermQuery};
    use tantivy::schema::IndexRecordOption;

    use crate::query::word_query;

    let words = idx.analyzer.words(text);
    let mut text_q: Vec<Box<dyn Query>> = Vec::new();
    // Calls of several words need only most of them (relaxed.rs); of three, two only when no
    // call holds all three.
    let all_or_two = handle.is_none() && words.len() == crate::ALL_OR_TWO_WORDS;
    let none_holds_all = || {
        let mut clauses: Vec<(Occur, Box<dyn Query>)> = vec![(
            Occur::Must,
            Box::new(BooleanQuery::intersection(words.iter().map(|w| word_query(w, fields)).collect())),
        )];
        for t in &filters {
            clauses.push((Occur::Must, Box::new(TermQuery::new(t.clone(), IndexRecordOption::Basic))));
        }
        let searcher = part.reader.searcher();
        searcher.search(&BooleanQuery::new(clauses), &tantivy::collector::Count).expect("all words") == 0
    };
    if all_or_two && none_holds_all() {
        let each = words.iter().map(|w| (Occur::Should, word_query(w, fields))).collect();
        text_q.push(Box::new(BooleanQuery::with_minimum_required_clauses(each, words.len() - 1)));
    } else if handle.is_none() && words.len() >= crate::RELAXED_FROM_WORDS {
        let each = words.iter().map(|w| (Occur::Should, word_query(w, fields))).collect();
        text_q.push(Box::new(BooleanQuery::with_minimum_required_clauses(
            each,
            crate::required_words(words.len()),
        )));
    } else if !words.is_empty() {
        text_q.push(Box::new(BooleanQuery::intersection(
            words.iter().map(|w| word_query(w, fields)).collect(),
        )));
    }
    if let Some(field) = handle
        && let Some(h) = as_handle(text)
    {
        let t = TermQuery::new(exact_term(field, h), IndexRecordOption::Basic);
        text_q.push(Box::new(ConstScoreQuery::new(Box::new(t), EXACT_HANDLE_SCORE)));
    }
    if text_q.is_empty() {
        return Vec::new();
    }
    let mut clauses: Vec<(Occur, Box<dyn Query>)> =
        vec![(Occur::Must, Box::new(BooleanQuery::union(text_q)))];
    for t in filters {
        let t = TermQuery::new(t, IndexRecordOption::Basic);
        clauses.push((Occur::Must, Box::new(ConstScoreQuery::new(Box::new(t), 0.0))));
    }
    let query = BooleanQuery::new(clauses);
    let searcher = part.reader.searcher();
    let limit = (searcher.num_docs() as usize).max(1);
    let docs = searcher.search(&query, &TopDocs::with_limit(limit).order_by_score()).expect("reference");
    let mut out = Vec::new();
    for (score, address) in docs {
        let segment = searcher.segment_reader(address.segment_ord);
        let key =
            segment.fast_fields().u64(crate::schema::KEY).expect("key").first(address.doc_id).expect("key");
        if keep(key) {
            out.push((score, key));
        }
    }
    out.sort_by(|a, b| b.0.total_cmp(&a.0).then(b.1.cmp(&a.1)));
    out
}

/// `got` must be a best-first page of `reference` (scores may differ in the last bits, as sums
/// are added in another order).
fn assert_valid_page(got: &Page, reference: &[(f32, u64)], what: &str) {
    assert_eq!(got.total, reference.len() as u64, "total for {what}");
    let score: std::collections::HashMap<u64, f32> = reference.iter().map(|(s, k)| (*k, *s)).collect();
    let near = |a: f32, b: f32| (a - b).abs() <= 1e-4 * a.abs().max(b.abs()).max(1.0);
    let page: Vec<f32> =
        got.keys.iter().map(|k| *score.get(k).unwrap_or_else(|| panic!("{k} is no match: {what}"))).collect();
    assert_eq!(got.keys.len(), reference.len().min(100), "page size for {what}");
    for w in page.windows(2) {
        assert!(w[0] >= w[1] || near(w[0], w[1]), "order for {what}: {page:?}");
    }
    // Nothing left out scores above what was taken.
    let taken: HashSet<u64> = got.keys.iter().copied().collect();
    if let (Some(lowest), Some(best_left)) =
        (page.last(), reference.iter().find(|(_, k)| !taken.contains(k)).map(|(s, _)| *s))
    {
        assert!(*lowest >= best_left || near(*lowest, best_left), "{what}: left out {best_left} > {lowest}");
    }
}

/// The evaluator must find what tantivy's own queries find, with the same scores.
#[test]
fn text_search_matches_tantivy_queries() {
    let (_d, idx) = fresh();
    idx.set_result_cache_capacity(0);
    let mut r = Rng(0x5eed);
    ranking_corpus(&idx, &mut r);
    let af = idx.agent_fields.clone();
    let cf = idx.call_fields.clone();
    // First with part of the corpus in the overlay; the reference reads tantivy's own reader,
    // so it comes after the flush, which must not change a single page.
    let start = r.0;
    let mut before = Vec::new();
    for i in 0..240 {
        let text = random_text(&mut r, i);
        let q = random_agent_query(&mut r, &text, i);
        let cq = random_call_query(&mut r, &text, i);
        before.push((idx.search_agents(&q).expect("search"), idx.search_calls(&cq).expect("search")));
    }
    assert!(idx.unflushed_docs() > 0);
    idx.flush().expect("flush");
    assert_eq!(idx.unflushed_docs(), 0);
    let mut r = Rng(start);
    for (i, (agents_before, calls_before)) in before.into_iter().enumerate() {
        let text = random_text(&mut r, i);
        let q = random_agent_query(&mut r, &text, i);
        let got = idx.search_agents(&q).expect("search");
        assert_eq!(got, agents_before, "agents {q:?} before and after the flush");
        let mut filters = Vec::new();
        if let Some(c) = q.capability {
            filters.push(exact_term(af.capability, c));
        }
        if let Some(l) = q.language {
            filters.push(exact_term(af.language, l));
        }
        let searcher = idx.agents.reader.searcher();
        let numeric = |key: u64| -> bool {
            // The numeric filters, checked on the stored columns by key.
            let query = tantivy::query::TermQuery::new(
                Term::from_field_u64(af.key, key),
                tantivy::schema::IndexRecordOption::Basic,
            );
            let docs = searcher.search(&query, &tantivy::collector::DocSetCollector).expect("key");
            let address = docs.into_iter().next().expect("doc");
            let ff = searcher.segment_reader(address.segment_ord).fast_fields();
            let level = ff.u64(crate::schema::LEVEL).expect("level").first(address.doc_id).unwrap_or(0);
            let joined = ff.i64(crate::schema::JOINED).expect("joined").first(address.doc_id).unwrap_or(0);
            let verified =
                ff.bool(crate::schema::VERIFIED).expect("verified").first(address.doc_id).unwrap_or(false);
            q.min_level.is_none_or(|m| level >= m)
                && q.joined_since.is_none_or(|j| joined >= j)
                && q.mailbox_verified.is_none_or(|v| verified == v)
        };
        let want =
            reference(&idx, &idx.agents, &af.text_fields(), &text, Some(af.handle_exact), filters, &numeric);
        assert_valid_page(&got, &want, &format!("agents {q:?}"));

        let cq = random_call_query(&mut r, &text, i);
        let got = idx.search_calls(&cq).expect("search");
        assert_eq!(got, calls_before, "calls {cq:?} before and after the flush");
        let mut filters = Vec::new();
        if let Some(t) = cq.tag {
            filters.push(exact_term(cf.tag, t));
        }
        if let Some(k) = cq.kind {
            filters.push(exact_term(cf.kind, k));
        }
        if let Some(a) = cq.author_handle {
            filters.push(exact_term(cf.author, a));
        }
        let want = reference(&idx, &idx.calls, &cf.text_fields(), &text, None, filters, &|_| true);
        assert_valid_page(&got, &want, &format!("calls {cq:?}"));
    }
}

/// Pruning must never change a page: every page equals the same page ranked by scoring every
/// match.
#[test]
fn pruned_ranking_equals_exhaustive_ranking() {
    let (_d, idx) = fresh();
    idx.set_result_cache_capacity(0);
    let mut r = Rng(0xbead);
    ranking_corpus(&idx, &mut r);
    let mut pruned_any = false;
    for i in 0..200 {
        let text = random_text(&mut r, i);
        let aq = random_agent_query(&mut r, &text, i);
        let cq = random_call_query(&mut r, &text, i);
        for (offset, limit) in [(0, 1), (0, 10), (0, 20), (3, 7), (20, 20), (0, 100), (150, 50)] {
            let aq = AgentQuery { offset, limit, ..aq };
            let cq = CallQuery { offset, limit, ..cq };
            let before = crate::rank::visited();
            let (agents, calls) =
                (idx.search_agents(&aq).expect("search"), idx.search_calls(&cq).expect("search"));
            let pruned = crate::rank::visited() - before;
            crate::rank::set_exhaustive(true);
            let (all_agents, all_calls) =
                (idx.search_agents(&aq).expect("search"), idx.search_calls(&cq).expect("search"));
            crate::rank::set_exhaustive(false);
            let exhaustive = crate::rank::visited() - before - pruned;
            pruned_any |= pruned * 2 < exhaustive;
            assert_eq!(agents, all_agents, "agents {aq:?}");
            assert_eq!(calls, all_calls, "calls {cq:?}");
        }
    }
    assert!(pruned_any, "the corpus should be big enough for pruning to skip documents");
}

#[test]
fn cached_and_uncached_results_agree() {
    let (_d, idx) = fresh();
    let mut r = Rng(99);
    idx.apply((1..=400).map(|k| Change::UpsertAgent(random_agent(&mut r, k))).collect(), 1).expect("apply");
    let queries: Vec<String> =
        (0..40).map(|i| if i % 2 == 0 { r.words(EN, 2) } else { r.words(ZH, 2) }).collect();
    let pages = |idx: &SearchIndex| -> Vec<Page> {
        let mut out = Vec::new();
        for q in &queries {
            for (offset, limit) in [(0, 10), (10, 10), (190, 20), (195, 10), (300, 100)] {
                let aq =
                    AgentQuery { text: Some(q), limit, offset, min_level: Some(1), ..Default::default() };
                out.push(idx.search_agents(&aq).expect("search"));
                let aq = AgentQuery { text: None, limit, offset, ..Default::default() };
                out.push(idx.search_agents(&aq).expect("search"));
            }
        }
        out
    };
    let cold = pages(&idx);
    let warm = pages(&idx);
    idx.set_result_cache_capacity(0);
    let raw = pages(&idx);
    assert_eq!(cold, warm);
    assert_eq!(cold, raw);
}

#[test]
fn long_chinese_query_word_also_matches_by_its_sub_words() {
    let mut split = agent(1, "campus", "Campus");
    split.description_zh = "北京的大学生活指南".into();
    let mut whole = agent(2, "pku", "PKU");
    whole.description_zh = "北京大学招生咨询".into();
    let mut half = agent(3, "city", "City");
    half.description_zh = "北京旅游".into();
    let (_d, idx) = with_agents(vec![split, whole, half]);
    let got = keys(&idx, &aq("北京大学"));
    assert_eq!(sorted(got.clone()), vec![1, 2], "{got:?}");
    assert_eq!(keys(&idx, &aq("北京")).len(), 3);
}

/// Overwrites one part's commit payload, as a crash between the two commits would leave it.
fn force_payload(dir: &Path, part: &str, seq: u64, partner: u64) {
    let index = tantivy::Index::open_in_dir(dir.join(part)).expect("open");
    let mut w: tantivy::IndexWriter = index.writer_with_num_threads(1, 15_000_000).expect("writer");
    let mut c = w.prepare_commit().expect("prepare");
    let payload =
        format!(r#"{{"schema":{},"seq":{seq},"partner":{partner}}}"#, crate::schema::SCHEMA_VERSION);
    c.set_payload(&payload);
    c.commit().expect("commit");
}

#[test]
fn a_half_committed_batch_is_not_counted_as_applied() {
    let dir = TempDir::new().expect("tempdir");
    {
        let idx = open(dir.path());
        idx.rebuild(vec![Change::UpsertAgent(agent(1, "a", "A")), Change::UpsertCall(call(1, "c"))], 5)
            .expect("rebuild");
    }
    // Batch 9 touched both indexes; only the agents commit landed.
    force_payload(dir.path(), "agents", 9, 9);
    let idx = open(dir.path());
    assert!(!idx.needs_rebuild());
    assert_eq!(idx.applied_seq(), 5, "batch 9 must be replayed");
    // Replaying it commits both, after which the seq holds across a restart.
    idx.apply(vec![Change::UpsertAgent(agent(2, "b", "B")), Change::UpsertCall(call(2, "d"))], 9)
        .expect("apply");
    drop(idx);
    assert_eq!(open(dir.path()).applied_seq(), 9);

    // Batch 12 touched only the calls index: it is complete on its own.
    force_payload(dir.path(), "calls", 12, 0);
    assert_eq!(open(dir.path()).applied_seq(), 12);
}

/// The `all` field holds exactly the words of the scored text fields.
#[test]
fn all_field_is_the_union_of_the_text_fields() {
    use tantivy::collector::DocSetCollector;
    use tantivy::query::{BooleanQuery, Query, TermQuery};
    use tantivy::schema::{Field, IndexRecordOption};

    let (_d, idx) = fresh();
    let mut r = Rng(0xa11);
    let mut changes: Vec<Change> = (1..=200).map(|k| Change::UpsertAgent(random_agent(&mut r, k))).collect();
    for k in 1..=200u64 {
        let mut c = call(k, &r.words(EN, 4));
        c.body = format!("{} {}", r.words(EN, 8), r.words(ZH, 4).replace(' ', ""));
        c.tags = vec![r.pick(EN).into()];
        c.author_handle = format!("{}-{k}", r.pick(EN));
        changes.push(Change::UpsertCall(c));
    }
    idx.apply(changes, 1).expect("apply");
    idx.flush().expect("flush");
    let docs = |part: &Part, q: &dyn Query| {
        let mut d: Vec<_> =
            part.reader.searcher().search(q, &DocSetCollector).expect("search").into_iter().collect();
        d.sort();
        d
    };
    let check = |part: &Part, all: Field, fields: &[(Field, f32)]| {
        for word in EN.iter().chain(ZH) {
            for term in idx.analyzer.words(word) {
                let t = |f: Field| -> Box<dyn Query> {
                    Box::new(TermQuery::new(Term::from_field_text(f, &term.term), IndexRecordOption::Basic))
                };
                let union = BooleanQuery::union(fields.iter().map(|(f, _)| t(*f)).collect());
                let found = docs(part, &*t(all));
                assert!(!found.is_empty(), "{word}");
                assert_eq!(found, docs(part, &union), "{word}");
            }
        }
    };
    check(&idx.agents, idx.agent_fields.all, &idx.agent_fields.text_fields());
    check(&idx.calls, idx.call_fields.all, &idx.call_fields.text_fields());
}

/// Counting with the dense terms' bitmaps finds exactly what decoding the lists finds.
#[test]
fn dense_bitmaps_count_like_decoded_lists() {
    use crate::collect::{NumericColumns, NumericFilters};
    use crate::matches::{self, Members, WordCondition};

    let (_d, idx) = fresh();
    let mut r = Rng(0xde5e);
    ranking_corpus(&idx, &mut r);
    idx.flush().expect("flush");
    let searcher = idx.calls.reader.searcher();
    let cf = &idx.call_fields;
    let mut covered = 0;
    for segment in searcher.segment_readers() {
        let data = idx.calls.segments.get(segment).expect("segment data");
        let dense = &data.bitmaps;
        if dense.is_empty() {
            continue;
        }
        covered += 1;
        let numeric = NumericColumns::for_segment(segment, &NumericFilters::default()).expect("columns");
        for i in 0..60 {
            let text = random_text(&mut r, i);
            let words: Vec<WordCondition> = idx
                .analyzer
                .words(&text)
                .iter()
                .map(|w| WordCondition {
                    term: Term::from_field_text(cf.all, &w.term),
                    parts: w.parts.iter().map(|p| Term::from_field_text(cf.all, p)).collect(),
                })
                .collect();
            if words.is_empty() {
                continue;
            }
            let filters = if i % 2 == 0 { vec![exact_term(cf.tag, r.pick(EN))] } else { Vec::new() };
            let members = |m: &Members| -> Vec<u32> {
                let mut out = Vec::new();
                if let Members::Bits(bits) = m {
                    bits.for_each(|d| out.push(d));
                }
                out
            };
            let with =
                matches::compute(segment, segment.alive_bitset(), Some(dense), &words, &filters, &numeric)
                    .expect("with");
            let without = matches::compute(segment, segment.alive_bitset(), None, &words, &filters, &numeric)
                .expect("without");
            assert_eq!(with.count, without.count, "{text:?}");
            assert_eq!(members(&with.members), members(&without.members), "{text:?}");
        }
    }
    assert!(covered > 0, "some segment should have bitmaps");
}

/// Reloading prepares every new segment before searches see it.
#[test]
fn every_live_segment_is_prepared_by_the_reload() {
    let (_d, idx) = fresh();
    let mut r = Rng(3);
    for batch in 0..4u64 {
        let changes =
            (0..20).map(|i| Change::UpsertAgent(random_agent(&mut r, batch * 20 + i + 1))).collect();
        idx.apply(changes, batch + 1).expect("apply");
        idx.flush().expect("flush");
    }
    let searcher = idx.agents.reader.searcher();
    assert!(searcher.segment_readers().len() > 1);
    for segment in searcher.segment_readers() {
        assert!(idx.agents.segments.is_prepared(segment));
    }
}
