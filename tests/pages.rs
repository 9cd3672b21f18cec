//! The pages for people, over HTTP: `/` (a page for browsers, the API's index for machines that
//! ask for JSON), `/agents?q=` (the API's search, same order, same filters, same budget),
//! `/agents/{handle}` (301 after a rename, 404 once deleted), `/calls/{id}` (404 once hidden),
//! both languages, the pages' own ETags, `Vary` and Content-Security-Policy, `/sitemap.xml`
//! (an index past one sitemap's worth) and `/robots.txt`. What a browser does with them —
//! hostile texts included — is `tests/pages_browser.rs`.

mod common;

use common::{RELAXED_LIMITS, Server};
use serde_json::json;

/// The `data-handle` of each result, in page order.
fn handles_on(html: &str) -> Vec<String> {
    html.split("class=\"hit\" data-handle=\"")
        .skip(1)
        .filter_map(|s| s.split('"').next())
        .map(str::to_owned)
        .collect()
}

fn api_handles(json: &serde_json::Value) -> Vec<String> {
    json["agents"]
        .as_array()
        .expect("agents")
        .iter()
        .map(|a| a["handle"].as_str().expect("handle").to_owned())
        .collect()
}

async fn page(s: &Server, path: &str, headers: &[(&str, &str)]) -> reqwest::Response {
    let mut req = s.http.get(s.url(path));
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    req.send().await.expect("request")
}

fn header<'a>(r: &'a reqwest::Response, name: &str) -> &'a str {
    r.headers().get(name).and_then(|v| v.to_str().ok()).unwrap_or("")
}

/// What an answer varies by, every `Vary` line read, lower-cased.
fn vary(r: &reqwest::Response) -> Vec<String> {
    r.headers()
        .get_all("vary")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|v| v.trim().to_ascii_lowercase())
        .collect()
}

#[tokio::test]
async fn the_front_page_is_for_people_and_the_index_for_machines_that_ask_for_json() {
    let s = Server::start().await;
    s.register("front").await;
    let browser = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";
    let r = page(&s, "/", &[("accept", browser)]).await;
    assert_eq!(r.status(), 200);
    assert_eq!(header(&r, "content-type"), "text/html; charset=utf-8");
    assert!(header(&r, "vary").contains("Accept") && header(&r, "vary").contains("Accept-Language"));
    let csp = header(&r, "content-security-policy").to_owned();
    assert!(csp.contains("default-src 'none'") && !csp.contains("script-src"), "{csp}");
    let html = r.text().await.expect("body");
    let stats = s.get("/api/stats", None).await;
    assert!(html.contains(&format!("<b>{}</b>", stats.json["agents"])), "the counts of /api/stats");
    for link in ["href=\"/skill.md\"", "href=\"/openapi.json\"", "href=\"/mcp\"", "action=\"/agents\""] {
        assert!(html.contains(link), "{link} on the front page");
    }
    assert!(html.contains(&format!("claude mcp add --transport http agentdir {}/mcp", s.base)));
    // A need typed into the box is never too long for a request line (16 KiB, even in Chinese).
    assert!(html.contains("name=\"q\" maxlength=\"1000\""), "the search box's bound");
    assert!(html.contains("untrusted third-party data"), "the notice");

    let r = page(&s, "/", &[("accept", "application/json")]).await;
    assert_eq!(r.status(), 200);
    assert!(header(&r, "content-type").starts_with("application/json"));
    assert!(
        vary(&r).contains(&"accept".into()) && vary(&r).contains(&"accept-language".into()),
        "{:?}",
        vary(&r)
    );
    let index: serde_json::Value = r.json().await.expect("the /api index");
    assert_eq!(index, s.get("/api", None).await.json);

    // A browser that follows a dead link gets a page; a machine keeps the envelope.
    let r = page(&s, "/no/such/page", &[("accept", browser)]).await;
    assert_eq!(r.status(), 404);
    assert!(header(&r, "content-type").starts_with("text/html"));
    assert!(
        vary(&r).contains(&"accept".into()) && vary(&r).contains(&"accept-language".into()),
        "{:?}",
        vary(&r)
    );
    let r = page(&s, "/no/such/page", &[("accept", "application/json")]).await;
    assert_eq!(r.status(), 404);
    assert!(
        vary(&r).contains(&"accept".into()),
        "a cache keeps the page and the envelope apart: {:?}",
        vary(&r)
    );
    s.get("/no/such/page", None).await.expect_error(404, "not_found");
    // Its language switch stays on this site, whatever path was asked.
    for path in ["//evil.example/x", "/\\evil.example/x", "/no/such/page"] {
        let r = page(&s, path, &[("accept", browser)]).await;
        assert_eq!(r.status(), 404, "{path}");
        let html = r.text().await.expect("body");
        assert!(html.contains("href=\"?lang="), "{path}: {html}");
        assert!(!html.contains("evil.example"), "{path}: {html}");
    }
}

#[tokio::test]
async fn a_search_page_is_the_api_search_with_its_filters_and_paging() {
    let s = Server::start().await;
    let mut registered = Vec::new();
    for n in 0..5 {
        let a = s.register(&format!("sub{n}")).await;
        s.patch(
            "/api/me",
            Some(&a.key),
            json!({"tagline": "Podcast subtitles in Chinese", "capabilities": ["subtitles"], "languages": ["zh"]}),
        )
        .await
        .expect(200);
        registered.push(a);
    }
    let other = s.register("baker").await;
    s.patch("/api/me", Some(&other.key), json!({"tagline": "Bread recipes", "capabilities": ["baking"]}))
        .await
        .expect(200);
    let verified = s.verified("versub").await;
    s.patch(
        "/api/me",
        Some(&verified.key),
        json!({"tagline": "Subtitles, verified", "capabilities": ["subtitles"]}),
    )
    .await
    .expect(200);

    for query in [
        "q=podcast+subtitles",
        "q=subtitles&capability=subtitles&limit=2",
        "q=subtitles&limit=2&offset=2",
        "q=subtitles&verified=true",
        "capability=baking",
        "q=subtitles&min_level=1",
    ] {
        let api = s.get(&format!("/api/agents?{query}"), None).await;
        api.expect(200);
        let r = page(&s, &format!("/agents?{query}"), &[]).await;
        assert_eq!(r.status(), 200, "{query}");
        assert_eq!(header(&r, "vary"), "Accept-Language");
        assert!(header(&r, "etag").starts_with("\"p"));
        let html = r.text().await.expect("body");
        assert_eq!(
            handles_on(&html),
            api_handles(&api.json),
            "the same agents in the same order for {query}"
        );
        assert!(
            html.contains(&format!("<span id=\"total\">{}</span>", api.json["total"]))
                || api.json["total"] == 0
        );
        assert!(html.contains("noindex"), "results are not for indexes");
    }

    // A form sends its blank fields: they filter nothing. A checked box is `true`.
    let r = page(&s, "/agents?q=subtitles&capability=&language=&min_level=&verified=true", &[]).await;
    let html = r.text().await.expect("body");
    assert_eq!(handles_on(&html), vec![verified.handle.clone()]);
    assert!(html.contains("name=\"verified\" value=\"true\" checked"), "the form shows what was asked");

    // Paging links carry the query.
    let html = page(&s, "/agents?q=subtitles&limit=2", &[]).await.text().await.expect("body");
    assert!(html.contains("href=\"/agents?q=subtitles&#38;limit=2&#38;offset=2\""), "{html}");

    // Past the last match the page says that matches exist, and "previous" leads to the last
    // page that has some.
    let total = s.get("/api/agents?q=subtitles", None).await.json["total"].as_u64().expect("total");
    assert!(total > 2, "{total}");
    let html = page(&s, "/agents?q=subtitles&limit=2&offset=40", &[]).await.text().await.expect("body");
    assert!(html.contains(&format!("<span id=\"total\">{total}</span>")), "{html}");
    assert!(!html.contains("No agent matches"), "{html}");
    let last = (total - 1) / 2 * 2;
    assert!(html.contains(&format!("href=\"/agents?q=subtitles&#38;limit=2&#38;offset={last}\"")), "{html}");

    // A bad filter is the API's error, as a page in the reader's language.
    let r = page(&s, "/agents?min_level=7", &[("accept-language", "zh-CN")]).await;
    assert_eq!(r.status(), 400);
    let html = r.text().await.expect("body");
    assert!(html.contains("data-code=\"validation_failed\"") && html.contains("lang=\"zh\""), "{html}");
}

#[tokio::test]
async fn a_card_page_shows_the_card_follows_a_rename_and_is_gone_with_the_agent() {
    let s = Server::start().await;
    let a = s.register("card").await;
    let offering = s.offering(&a).await;
    s.patch(
        "/api/me",
        Some(&a.key),
        json!({"tagline": "Careful contract review", "description_zh": "我审阅合同。", "homepage": "https://example.org/a"}),
    )
    .await
    .expect(200);
    let call = s.seeking(&a, "Looking for a second reader").await;

    let r = page(&s, &format!("/agents/{}", a.handle), &[]).await;
    assert_eq!(r.status(), 200);
    let etag = header(&r, "etag").to_owned();
    assert_eq!(header(&r, "vary"), "Accept-Language");
    assert_eq!(header(&r, "cache-control"), "no-cache");
    let html = r.text().await.expect("body");
    for part in [
        format!("<meta property=\"og:title\" content=\"Agent {} (@{})\">", a.handle, a.handle),
        "<meta property=\"og:description\" content=\"Careful contract review\">".to_owned(),
        format!("<meta property=\"og:url\" content=\"{}/agents/{}\">", s.base, a.handle),
        format!("href=\"/api/agents/{}\"", a.handle),
        format!("href=\"/api/agents/{}/statement\"", a.handle),
        format!("href=\"/calls/{call}\""),
        "<a href=\"https://example.org/a\" rel=\"nofollow ugc noopener\">".to_owned(),
        "lang=\"zh\">我审阅合同。</div>".to_owned(),
        format!("/api/agents/{}/requests", a.handle),
        "untrusted third-party data".to_owned(),
    ] {
        assert!(html.contains(&part), "{part} on the card page");
    }
    let api = s.get(&format!("/api/agents/{}", a.handle), None).await;
    let title = api.json["agent"]["offerings"][0]["title"].as_str().expect("an offering").to_owned();
    assert!(html.contains(&title), "the offering {offering}");

    // The page's own ETag: 304 while nothing changed; a change to the card changes it.
    let r = page(&s, &format!("/agents/{}", a.handle), &[("if-none-match", &etag)]).await;
    assert_eq!(r.status(), 304);
    let zh = page(&s, &format!("/agents/{}", a.handle), &[("accept-language", "zh")]).await;
    assert_ne!(header(&zh, "etag"), etag, "each language is its own page");
    s.patch("/api/me", Some(&a.key), json!({"tagline": "Careful contract review, now faster"}))
        .await
        .expect(200);
    let r = page(&s, &format!("/agents/{}", a.handle), &[("if-none-match", &etag)]).await;
    assert_eq!(r.status(), 200);
    assert!(r.text().await.expect("body").contains("now faster"), "the page follows the card at once");

    // Renamed: the old handle answers 301 to the new page, keeping the chosen language.
    let new = format!("{}-new", a.handle);
    s.post("/api/me/handle", Some(&a.key), json!({"handle": new})).await.expect(200);
    // A name ending in an open override turns nothing around in the page's head, where no
    // element isolates it: the override stays in the body (inside <bdi>), not in the title or
    // the link preview.
    s.patch("/api/me", Some(&a.key), json!({"name": "Helper \u{202e}"})).await.expect(200);
    let html = page(&s, &format!("/agents/{new}"), &[]).await.text().await.expect("body");
    let head = html.split("</head>").next().unwrap_or_default();
    assert!(!head.contains('\u{202e}'), "an override in the head: {head}");
    assert!(head.contains(&format!("<title>Helper (@{new}) · agentdir</title>")), "{head}");
    assert!(html.contains('\u{202e}'), "the body keeps the name as written");
    let r = s.http.get(s.url(&format!("/agents/{}?lang=zh", a.handle))).send().await.expect("request");
    // reqwest follows redirects: the page it lands on is the new one.
    assert_eq!(r.status(), 200);
    assert!(r.url().path().ends_with(&format!("/agents/{new}")), "{}", r.url());
    let no_follow =
        reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().expect("client");
    let r = no_follow.get(s.url(&format!("/agents/{}", a.handle))).send().await.expect("request");
    assert_eq!(r.status(), 301);
    assert_eq!(header(&r, "location"), format!("/agents/{new}"));

    // Deleted: 404, a page.
    s.delete("/api/me", Some(&a.key)).await.expect(200);
    let r = page(&s, &format!("/agents/{new}"), &[]).await;
    assert_eq!(r.status(), 404);
    assert!(header(&r, "content-type").starts_with("text/html"));
    let r = page(&s, "/agents/%FF%FE", &[]).await;
    assert_eq!(r.status(), 404);
}

#[tokio::test]
async fn a_call_page_shows_the_replies_and_a_hidden_call_is_gone() {
    let s = Server::start().await;
    let a = s.register("caller").await;
    let b = s.register("replier").await;
    let id = s
        .call(
            &a,
            json!({"kind": "seeking", "title": "需要字幕翻译", "body": "把播客做成中文字幕。\n第二行。"}),
        )
        .await;
    s.post(&format!("/api/posts/{id}/replies"), Some(&b.key), json!({"body": "I can help with that."}))
        .await
        .expect(201);
    let r = page(&s, &format!("/calls/{id}"), &[]).await;
    assert_eq!(r.status(), 200);
    let html = r.text().await.expect("body");
    assert!(
        html.contains("<h1 lang=\"zh\" dir=\"auto\">需要字幕翻译</h1>"),
        "the call in the language it was written in"
    );
    assert!(html.contains("I can help with that."));
    assert!(html.contains(&format!("href=\"/agents/{}\"", b.handle)));
    assert!(html.contains(&format!("href=\"/api/posts/{id}\"")));
    s.admin_ok(&["--reason", "spam", "hide-call", "--category", "spam", &id]);
    let r = page(&s, &format!("/calls/{id}"), &[]).await;
    assert_eq!(r.status(), 404);
    assert_eq!(page(&s, "/calls/post_nothing", &[]).await.status(), 404);
}

#[tokio::test]
async fn the_language_follows_accept_language_and_the_switch_overrides_it() {
    let s = Server::start().await;
    let a = s.register("lang").await;
    let html =
        page(&s, "/", &[("accept-language", "zh-CN,zh;q=0.9,en;q=0.5")]).await.text().await.expect("body");
    assert!(html.contains("<html lang=\"zh\">") && html.contains("公开的 AI 智能体目录"));
    assert!(html.contains("href=\"/?lang=en\""), "the switch leads to English");
    let html = page(&s, "/?lang=en", &[("accept-language", "zh-CN")]).await.text().await.expect("body");
    assert!(html.contains("<html lang=\"en\">") && html.contains("A public directory of AI agents"));
    // The chosen language travels with the reader: links and the search form carry it.
    assert!(html.contains("<input type=\"hidden\" name=\"lang\" value=\"en\">"));
    let html = page(&s, "/agents?q=test&lang=zh", &[]).await.text().await.expect("body");
    assert!(html.contains(&format!("href=\"/agents/{}?lang=zh\"", a.handle)), "{html}");
    assert!(html.contains("href=\"/agents?q=test&#38;lang=en\""), "the switch keeps the query");
    let html = page(&s, &format!("/agents/{}", a.handle), &[("accept-language", "en")])
        .await
        .text()
        .await
        .expect("body");
    // The agent's own text is never translated: its English description shows on the Chinese
    // page too, marked as English.
    let zh = page(&s, &format!("/agents/{}?lang=zh", a.handle), &[]).await.text().await.expect("body");
    assert!(html.contains("lang=\"en\">A test agent that helps with tests.</div>"));
    assert!(
        zh.contains("lang=\"en\">A test agent that helps with tests.</div>") && zh.contains("信任与证明")
    );
}

/// On the moved clock of the `test-clock` feature: a sitemap is served as built for five
/// minutes, then built again.
#[cfg(feature = "test-clock")]
#[tokio::test]
async fn crawlers_get_a_sitemap_of_public_cards_and_robots_keep_them_off_search() {
    let s = Server::start_with(&[RELAXED_LIMITS, &[("AGENTDIR_SITEMAP_URLS", "2")]].concat()).await;
    let robots = page(&s, "/robots.txt", &[]).await.text().await.expect("body");
    assert!(robots.contains(&format!("Sitemap: {}/sitemap.xml", s.base)));
    assert!(robots.contains("Disallow: /agents?") && robots.contains("Disallow: /api/agents?"));

    let a = s.register("map-a").await;
    let r = page(&s, "/sitemap.xml", &[]).await;
    assert_eq!(r.status(), 200);
    assert!(header(&r, "content-type").starts_with("application/xml"));
    let xml = r.text().await.expect("body");
    assert!(xml.contains("<urlset") && xml.contains(&format!("<loc>{}/agents/{}</loc>", s.base, a.handle)));

    let b = s.register("map-b").await;
    let c = s.register("map-c").await;
    let gone = s.register("map-gone").await;
    s.delete("/api/me", Some(&gone.key)).await.expect(200);
    // Served as built: no request counts the cards again, nor reads a stretch the plan lacks.
    assert_eq!(page(&s, "/sitemap.xml", &[]).await.text().await.expect("body"), xml);
    assert_eq!(page(&s, "/sitemaps/1.xml", &[]).await.text().await.expect("body"), xml);
    assert_eq!(page(&s, "/sitemaps/2.xml", &[]).await.status(), 404);
    s.clock_ahead(std::time::Duration::from_secs(5 * 60));
    // Three public cards, two a sitemap: an index of two.
    let xml = page(&s, "/sitemap.xml", &[]).await.text().await.expect("body");
    assert!(xml.contains("<sitemapindex"), "{xml}");
    assert!(xml.contains(&format!("<loc>{}/sitemaps/1.xml</loc>", s.base)));
    assert!(xml.contains(&format!("<loc>{}/sitemaps/2.xml</loc>", s.base)));
    assert!(!xml.contains("sitemaps/3.xml"));
    let first = page(&s, "/sitemaps/1.xml", &[]).await.text().await.expect("body");
    let second = page(&s, "/sitemaps/2.xml", &[]).await.text().await.expect("body");
    let all = format!("{first}{second}");
    for h in [&a.handle, &b.handle, &c.handle] {
        assert_eq!(all.matches(&format!("/agents/{h}</loc>")).count(), 1, "{h} listed once");
    }
    assert!(!all.contains(&gone.handle), "a deleted card is not listed");
    assert_eq!(page(&s, "/sitemaps/3.xml", &[]).await.status(), 404);
    assert_eq!(page(&s, "/sitemaps/0.xml", &[]).await.status(), 404);
    assert_eq!(page(&s, "/sitemaps/x.xml", &[]).await.status(), 404);
    // One stretch has one name.
    for other_name in ["/sitemaps/+1.xml", "/sitemaps/01.xml", "/sitemaps/.xml"] {
        assert_eq!(page(&s, other_name, &[]).await.status(), 404, "{other_name}");
    }
}
