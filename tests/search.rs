//! Full-text search through the REST API: English and Chinese, filters combined with paging,
//! read-your-writes, hidden and deleted calls, hostile query strings, and repair at start.

mod common;

use std::collections::HashSet;

use common::{Agent, Server};
use serde_json::{Value, json};

fn handles(r: &common::Resp) -> Vec<String> {
    r.json["agents"].as_array().unwrap().iter().map(|a| a["handle"].as_str().unwrap().to_owned()).collect()
}

fn ids(r: &common::Resp) -> Vec<String> {
    r.json["posts"].as_array().unwrap().iter().map(|p| p["id"].as_str().unwrap().to_owned()).collect()
}

fn q(text: &str) -> String {
    url::form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

async fn agent_with(s: &Server, prefix: &str, profile: Value) -> Agent {
    let a = s.register(prefix).await;
    s.patch("/api/me", Some(&a.key), profile).await.expect(200);
    a
}

#[tokio::test]
async fn english_chinese_and_mixed_queries_find_agents() {
    // The word rule alone (by meaning, "translation" also finds the Chinese translator:
    // tests/meaning.rs).
    let s = Server::start_with(&[("AGENTDIR_SEARCH_MODE", "words")]).await;
    let zh = agent_with(
        &s,
        "zh",
        json!({"description_zh": "我们提供中文翻译和本地化服务", "description_en": "Localisation studio"}),
    )
    .await;
    let en = agent_with(
        &s,
        "en",
        json!({"description_en": "We translate legal documents from German", "name": "Lexi"}),
    )
    .await;
    let other = agent_with(&s, "other", json!({"description_en": "Builds web scrapers"})).await;

    // Chinese segmentation: a word inside a longer sentence.
    assert_eq!(handles(&s.get(&format!("/api/agents?q={}", q("翻译")), None).await), vec![zh.handle.clone()]);
    assert_eq!(
        handles(&s.get(&format!("/api/agents?q={}", q("本地化")), None).await),
        vec![zh.handle.clone()]
    );
    // English stemming: "translation" finds "translate".
    let r = s.get("/api/agents?q=translation", None).await;
    assert_eq!(handles(&r), vec![en.handle.clone()]);
    // Mixed: every word must match somewhere.
    assert_eq!(
        handles(&s.get(&format!("/api/agents?q={}", q("localisation 翻译")), None).await),
        vec![zh.handle.clone()]
    );
    assert_eq!(s.get(&format!("/api/agents?q={}", q("scrapers 翻译")), None).await.json["total"], 0);
    // Handles match whole and by their parts.
    assert_eq!(handles(&s.get(&format!("/api/agents?q={}", other.handle), None).await)[0], other.handle);
}

#[tokio::test]
async fn a_name_match_ranks_above_a_description_match() {
    let s = Server::start().await;
    let by_description =
        agent_with(&s, "desc", json!({"description_en": "Ask me about kraken lore and sea monsters"})).await;
    let by_name =
        agent_with(&s, "named", json!({"name": "Kraken", "description_en": "A helpful agent"})).await;
    let r = s.get("/api/agents?q=kraken", None).await;
    assert_eq!(handles(&r), vec![by_name.handle, by_description.handle]);
}

#[tokio::test]
async fn writes_are_searchable_when_their_response_returns() {
    let s = Server::start().await;
    let a = s.register("ryw").await;
    for i in 0..5 {
        let word = format!("zephyr{i}");
        s.patch("/api/me", Some(&a.key), json!({"tagline": word})).await.expect(200);
        assert_eq!(s.get(&format!("/api/agents?q={word}"), None).await.json["total"], 1, "{word}");
        let r = s
            .post(
                "/api/posts",
                Some(&a.key),
                json!({"kind": "announce", "title": format!("Quasar{i}"), "body": "b"}),
            )
            .await;
        // Found by its words at once, and first, though the calls before it (found by meaning:
        // their text is nearly the same) have been read by the call worker and it not yet.
        assert_eq!(
            ids(&s.get(&format!("/api/posts?q=quasar{i}"), None).await).first().map(String::as_str),
            r.json["id"].as_str()
        );
    }
    // Offerings are searchable too, by title and by tag.
    s.put("/api/me/offerings", Some(&a.key), json!({"offerings": [{"title": "Subtitle timing", "deliverable": "SRT files", "mode": "quote", "tags": ["video"]}]}))
        .await
        .expect(200);
    assert_eq!(s.get("/api/agents?q=subtitle", None).await.json["total"], 1);
    assert_eq!(s.get("/api/agents?q=video", None).await.json["total"], 1);
}

#[tokio::test]
async fn filters_combine_with_text_and_page_without_gaps() {
    let s = Server::start().await;
    let mut verified = HashSet::new();
    for i in 0..13 {
        let a = if i % 3 == 0 { s.verified("pg").await } else { s.register("pg").await };
        if i % 3 == 0 {
            verified.insert(a.handle.clone());
        }
        let caps = if i % 2 == 0 { json!(["translation", "Editing"]) } else { json!(["editing"]) };
        s.patch(
            "/api/me",
            Some(&a.key),
            json!({"description_en": "Careful proofreading of manuscripts", "capabilities": caps}),
        )
        .await
        .expect(200);
    }
    let filters = [
        "",
        "&verified=true",
        "&capability=editing",
        "&capability=TRANSLATION",
        "&min_level=1&capability=translation",
        "&new=true",
    ];
    for f in filters {
        let all = s.get(&format!("/api/agents?q=proofreading{f}&limit=100"), None).await;
        let total = all.json["total"].as_u64().unwrap() as usize;
        assert_eq!(handles(&all).len(), total, "{f}");
        let mut paged = Vec::new();
        for offset in (0..total + 3).step_by(4) {
            let page = s.get(&format!("/api/agents?q=proofreading{f}&limit=4&offset={offset}"), None).await;
            assert_eq!(page.json["total"].as_u64().unwrap() as usize, total, "{f}");
            paged.extend(handles(&page));
        }
        assert_eq!(paged, handles(&all), "paging {f} differs from one page");
    }
    let v = s.get("/api/agents?q=proofreading&verified=true&limit=100", None).await;
    assert_eq!(handles(&v).into_iter().collect::<HashSet<_>>(), verified);
    assert_eq!(s.get("/api/agents?q=proofreading&capability=translation", None).await.json["total"], 7);
    assert_eq!(
        s.get("/api/agents?q=proofreading&capability=translation&verified=true", None).await.json["total"],
        3
    );
}

#[tokio::test]
async fn calls_are_searchable_and_hidden_or_deleted_ones_never_appear() {
    let s = Server::start().await;
    let a = s.register("caller").await;
    let post = |title: &str, body: &str, tags: Value| json!({"kind": "seeking", "title": title, "body": body, "tags": tags});
    let keep = s
        .post(
            "/api/posts",
            Some(&a.key),
            post("Need subtitles", "Chinese subtitles for a film", json!(["video"])),
        )
        .await;
    let hide = s
        .post("/api/posts", Some(&a.key), post("Need subtitles too", "Another film", json!(["video"])))
        .await;
    let gone = s
        .post("/api/posts", Some(&a.key), post("Need subtitles again", "Third film", json!(["video"])))
        .await;
    let zh = s
        .post("/api/posts", Some(&a.key), post("寻找翻译", "需要把产品文档翻译成英文", json!(["翻译"])))
        .await;
    let id = |r: &common::Resp| r.json["id"].as_str().unwrap().to_owned();

    assert_eq!(s.get("/api/posts?q=subtitles", None).await.json["total"], 3);
    assert_eq!(ids(&s.get(&format!("/api/posts?q={}", q("翻译")), None).await), vec![id(&zh)]);
    assert_eq!(ids(&s.get(&format!("/api/posts?tag={}", q("翻译")), None).await), vec![id(&zh)]);

    s.admin_ok(&["hide-call", "--category", "spam", &id(&hide), "--reason", "spam"]);
    s.delete(&format!("/api/posts/{}", id(&gone)), Some(&a.key)).await.expect(200);
    for path in ["/api/posts?q=subtitles", "/api/posts?tag=video", "/api/posts?q=film&kind=seeking"] {
        let r = s.get(path, None).await;
        assert_eq!(ids(&r), vec![id(&keep)], "{path}");
        assert_eq!(r.json["total"], 1, "{path}");
    }
    s.get(&format!("/api/posts/{}", id(&hide)), None).await.expect_error(404, "not_found");
    let card = s.get(&format!("/api/agents/{}", a.handle), None).await;
    assert!(!card.text.contains(&id(&hide)), "a hidden call on the card");
    s.admin_ok(&["restore-call", &id(&hide)]);
    assert_eq!(s.get("/api/posts?q=subtitles", None).await.json["total"], 2);
}

#[tokio::test]
async fn any_query_string_is_a_valid_query() {
    let s = Server::start().await;
    let a = s.register("hostile").await;
    s.post(
        "/api/posts",
        Some(&a.key),
        json!({"kind": "announce", "title": "Plain call", "body": "Nothing special"}),
    )
    .await
    .expect(201);
    let long = "a".repeat(2000);
    let words = "word ".repeat(400);
    let hostile = [
        "\"",
        "\"unbalanced",
        "(",
        ")",
        "[",
        "]",
        "{",
        "}",
        "^2",
        "~",
        "*",
        "?",
        ":",
        "\\",
        "/",
        "+-",
        "AND",
        "OR",
        "NOT",
        "a AND OR b",
        "title:plain",
        "field:(x OR",
        "!@#$%^&*()",
        "😀🚀",
        "中文😀",
        "\u{fffd}",
        "\u{0}",
        "\t\n",
        "   ",
        "",
        "-",
        "--",
        "' OR 1=1 --",
        "%",
        long.as_str(),
        words.as_str(),
        "ȁ̶̢̡͎̝͖̹̮̦̀̍̓́",
    ];
    for text in hostile {
        for path in ["/api/agents", "/api/posts"] {
            let r = s.get(&format!("{path}?q={}", q(text)), None).await;
            assert_eq!(r.status, 200, "{path} q={text:?}: {}", r.text);
            assert!(r.json["total"].is_u64());
        }
    }
    // Undecodable percent-encoding and raw control bytes are just text too.
    for raw in ["%FF%FE", "%ED%A0%80", "%C0%AF", "a%00b"] {
        let r = s.get(&format!("/api/agents?q={raw}"), None).await;
        assert_eq!(r.status, 200, "{raw}: {}", r.text);
    }
    // Empty or blank text means no text filter.
    assert_eq!(s.get("/api/posts?q=%20%20", None).await.json["total"], 1);
}

#[tokio::test]
async fn the_index_is_repaired_at_start() {
    let mut s = Server::start().await;
    let a = s.register("repair").await;
    let call = s
        .post("/api/posts", Some(&a.key), json!({"kind": "announce", "title": "Nebula survey", "body": "b"}))
        .await;
    let call_id = call.json["id"].as_str().unwrap().to_owned();
    s.stop();

    // A change committed to SQLite while no server ran (as after a crash between the two
    // commits) reaches the index at the next start.
    s.admin_ok(&["hide-call", "--category", "spam", &call_id]);
    s.restart();
    assert_eq!(s.get("/api/posts?q=nebula", None).await.json["total"], 0);
    s.admin_ok(&["restore-call", &call_id]);
    // The running server follows changes other processes make.
    let mut found = 0;
    for _ in 0..50 {
        found = s.get("/api/posts?q=nebula", None).await.json["total"].as_u64().unwrap();
        if found == 1 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(found, 1);

    // A missing index is rebuilt from SQLite.
    s.stop();
    std::fs::remove_dir_all(s.data_dir.join("search-index")).unwrap();
    s.restart();
    assert_eq!(ids(&s.get("/api/posts?q=nebula", None).await), vec![call_id.clone()]);
    assert_eq!(handles(&s.get(&format!("/api/agents?q={}", a.handle), None).await), vec![a.handle.clone()]);

    // A corrupt index is rebuilt too.
    s.stop();
    let index_dir = s.data_dir.join("search-index");
    corrupt(&index_dir);
    s.restart();
    assert_eq!(ids(&s.get("/api/posts?q=nebula", None).await), vec![call_id.clone()]);

    // `admin reindex` rebuilds on demand, also while the server runs.
    let out = s.admin_ok(&["reindex"]);
    assert!(out.contains("rebuild"), "{out}");
    assert_eq!(ids(&s.get("/api/posts?q=nebula", None).await), vec![call_id]);
}

/// Overwrites every metadata file of the index with garbage.
fn corrupt(dir: &std::path::Path) {
    let mut hit = 0;
    for entry in walk(dir) {
        if entry.file_name().is_some_and(|n| n.to_string_lossy().ends_with("meta.json")) {
            std::fs::write(&entry, b"{ not json").unwrap();
            hit += 1;
        }
    }
    assert!(hit > 0, "no meta.json under {}", dir.display());
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let p = entry.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[tokio::test]
async fn calls_are_found_by_most_of_their_words_and_ranked_by_how_many() {
    let s = Server::start().await;
    let a = s.register("calls").await;
    let subtitles = s.seeking(&a, "Need Chinese subtitles for a cooking podcast").await;
    let other = s.seeking(&a, "Need English subtitles for a video").await;
    let cooking_video = s.seeking(&a, "Need English subtitles for a cooking video").await;
    // One word of the sentence ("weekly") is in no call: the result is not empty.
    let r = s
        .get(&format!("/api/posts?q={}", q("need Chinese subtitles for my weekly cooking podcast")), None)
        .await;
    r.expect(200);
    assert_eq!(ids(&r).first(), Some(&subtitles));
    // Of its six words, the other call holds two: fewer than the two thirds asked for.
    assert_eq!(r.json["total"].as_u64().unwrap() as usize, ids(&r).len());
    assert!(!ids(&r).contains(&other), "{:?}", ids(&r));
    // Two words must both be held, as before.
    assert_eq!(s.get(&format!("/api/posts?q={}", q("subtitles gardening")), None).await.json["total"], 0);
    // Three words: the calls holding all three when some do...
    let r = s.get(&format!("/api/posts?q={}", q("subtitles cooking podcast")), None).await;
    assert_eq!(ids(&r), vec![subtitles.clone()]);
    assert_eq!(r.json["total"], 1);
    // ...and when none does, those holding two: one absent word never empties the result
    // (each call holds two of "need Chinese video").
    let r = s.get(&format!("/api/posts?q={}", q("need Chinese video")), None).await;
    assert_eq!(r.json["total"], 3, "{:?}", ids(&r));
    // A word no call holds: the calls holding both others.
    let r = s.get(&format!("/api/posts?q={}", q("cooking video zebrafinch")), None).await;
    assert_eq!(ids(&r), vec![cooking_video.clone()]);
    // Four words ask for three: the call holding all four ranks above the one holding three, and
    // the one holding two is left out.
    let r = s.get(&format!("/api/posts?q={}", q("English subtitles cooking video")), None).await;
    assert_eq!(ids(&r), vec![cooking_video.clone(), other.clone()]);
    assert_eq!(r.json["total"], 2);
}
