//! The pages in a real browser: one server, headless Chromium (Debian's `chromium`, which
//! `.ci/run` installs) driven by Playwright (tests/python/pages_browser.py). The browser loads
//! the front page, submits a search, follows a card, switches the language, and opens every page
//! that shows hostile agent-written text — script tags, event handlers, `javascript:` URLs, bidi
//! overrides in profiles, offerings, an endpoint's own description, calls and replies — and
//! finds that nothing ran and nothing broke.
//!
//! A missing Chromium or Playwright fails the test with the install command;
//! `AGENTDIR_SKIP_BROWSER=1` skips it (as `AGENTDIR_SKIP_MAIL_E2E` does the mail test).
//! `AGENTDIR_PAGES_SCREENSHOTS=docs/pages` writes the screenshots in docs/pages/.

mod common;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::{RELAXED_LIMITS, Server};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/python/pages_browser.py");
const INSTALL: &str = "apt-get install chromium && python3 -m pip install -r tests/python/requirements.txt";

/// The payloads: each would set `window.__pwned` (or open a dialog) if it ever ran.
const SCRIPT_TAG: &str = "<script>window.__pwned='script'</script>";
const IMG_ONERROR: &str = "<img src=x onerror=__pwned=1>";
const SVG_ONLOAD: &str = "<svg onload=alert(1)>";
const CLOSE_AND_RUN: &str = "</textarea></title>\"'><script>__pwned=2</script>";
const JS_LINK: &str = "<a href=\"javascript:__pwned=3\">click me</a>";
/// Right-to-left override and isolate tricks: the text around must not be reordered.
const BIDI: &str = "invoice\u{202e}fdp.exe\u{2066}x\u{2069}";

/// An A2A endpoint of the test's own whose agent card describes itself in hostile words: what
/// the directory shows as "what the endpoint says of itself".
async fn hostile_card_server() -> String {
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await.expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    let card = json!({
        "name": format!("{IMG_ONERROR}{BIDI}"),
        // The proof text makes the endpoint the agent's: its hostile skills show on the card.
        "description": format!("{SCRIPT_TAG} agentdir-proof:hostile-text"),
        "version": "1.0",
        "url": format!("{base}/a2a"),
        "protocolVersion": "<b onmouseover=__pwned=4>0.3</b>",
        "capabilities": {},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": [{
            "id": "x", "name": SCRIPT_TAG, "description": SVG_ONLOAD, "tags": [JS_LINK],
            "examples": [format!("{IMG_ONERROR}{BIDI}")],
        }],
    })
    .to_string();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let card = card.clone();
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                let _ = stream.read(&mut buf).await;
                let reply = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{card}",
                    card.len()
                );
                let _ = stream.write_all(reply.as_bytes()).await;
                let _ = stream.shutdown().await;
            });
        }
    });
    base
}

#[tokio::test]
async fn hostile_texts_never_run_in_a_real_browser_and_a_person_can_search_read_and_switch() {
    if std::env::var("AGENTDIR_SKIP_BROWSER").as_deref() == Ok("1") {
        eprintln!("AGENTDIR_SKIP_BROWSER=1: the browser test is skipped");
        return;
    }
    let chromium = std::env::var("AGENTDIR_CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
    assert!(Path::new(&chromium).exists(), "no Chromium at {chromium}; install it with: {INSTALL}");
    let probe = Command::new("python3").args(["-c", "import playwright.sync_api"]).output();
    assert!(
        probe.as_ref().is_ok_and(|o| o.status.success()),
        "the Python playwright package is missing; install it with: {INSTALL}"
    );

    let env = [
        RELAXED_LIMITS,
        &[("AGENTDIR_LINK_FETCH_ALLOW_PRIVATE", "1"), ("AGENTDIR_ENDPOINT_CHECK_INTERVAL", "1s")],
    ]
    .concat();
    let s = Server::start_with(&env).await;
    let card_server = hostile_card_server().await;

    let hostile_handle = "hostile-text";
    let r = s
        .post(
            "/api/agents",
            None,
            json!({
                "handle": hostile_handle,
                "name": IMG_ONERROR,
                "owner": "<b onclick=__pwned=5>Mallory</b>",
                "mailbox": "mallory@example.org",
                "accept_rules": true,
                "tagline": format!("javascript:__pwned=6 {SVG_ONLOAD}"),
                "description_en": format!("{SCRIPT_TAG}\n{CLOSE_AND_RUN}\n{JS_LINK}\n{BIDI}"),
                "description_zh": format!("中文 {SCRIPT_TAG} {BIDI}"),
                "capabilities": ["<i onmouseover=__pwned=7>x</i>"],
                "languages": ["en", "zh"],
                "homepage": "https://example.org/'onmouseover='__pwned=8'",
                "endpoints": [{"kind": "a2a", "url": format!("{card_server}/a2a")}],
            }),
        )
        .await;
    r.expect(201);
    let hostile_key = r.json["api_key"].as_str().expect("key").to_owned();
    s.put(
        "/api/me/offerings",
        Some(&hostile_key),
        json!({"offerings": [{
            "title": SCRIPT_TAG, "deliverable": CLOSE_AND_RUN, "for_whom": JS_LINK, "not_doing": BIDI,
            "mode": "free", "tags": ["<u onclick=__pwned=9>t</u>"], "languages": ["en"],
        }]}),
    )
    .await
    .expect(200);
    s.patch(
        "/api/me",
        Some(&hostile_key),
        json!({"contact_policy": {"note": format!("{IMG_ONERROR} {BIDI}")}}),
    )
    .await
    .expect(200);
    let hostile = common::Agent { handle: hostile_handle.into(), key: hostile_key, mailbox: String::new() };
    let call = s
        .call(
            &hostile,
            json!({
                "kind": "seeking", "title": SCRIPT_TAG, "body": format!("{CLOSE_AND_RUN}\n{JS_LINK}\n{BIDI}"),
                "deliverable": IMG_ONERROR, "constraints": SVG_ONLOAD, "tags": ["<b>x</b>"],
            }),
        )
        .await;
    let replier = s.register("replier").await;
    s.patch("/api/me", Some(&replier.key), json!({"name": SVG_ONLOAD})).await.expect(200);
    s.post(
        &format!("/api/posts/{call}/replies"),
        Some(&replier.key),
        json!({"body": format!("{SCRIPT_TAG} {BIDI}")}),
    )
    .await
    .expect(201);

    let benign = s.register("subtitles").await;
    s.patch(
        "/api/me",
        Some(&benign.key),
        json!({
            "name": "Subtitle Studio", "tagline": "Podcasts into Chinese subtitles",
            "description_en": "I turn podcasts into accurate Chinese subtitles.",
            "description_zh": "我把播客做成准确的中文字幕。",
            "capabilities": ["subtitles", "translation"], "languages": ["en", "zh"],
            "homepage": "https://example.org/subtitles",
        }),
    )
    .await
    .expect(200);
    s.offering(&benign).await;

    // The endpoint's own description, and its skills (it proves it is the agent's), are shown
    // once the check has read them.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let card = s.get(&format!("/api/agents/{hostile_handle}"), None).await;
        let endpoint = &card.json["agent"]["endpoints"][0];
        if endpoint["status"] == "live" && endpoint["skills"].is_array() {
            assert!(endpoint["name"].as_str().is_some_and(|n| n.contains("onerror")));
            assert!(
                endpoint["skills"][0]["name"].as_str().is_some_and(|n| n.contains("<script")),
                "{endpoint}"
            );
            break;
        }
        assert!(Instant::now() < deadline, "the hostile endpoint never went live: {}", card.text);
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    let plan = json!({
        "hostile": hostile_handle,
        "benign": benign.handle,
        "call": call,
        "query": "podcast subtitles",
        "hostile_query": urlencode(&format!("{SCRIPT_TAG} {BIDI}")),
        "hostile_capability": urlencode("<i onmouseover=__pwned=7>x</i>"),
        "hostile_texts": [IMG_ONERROR, "<b onclick=__pwned=5>Mallory</b>", SCRIPT_TAG, SVG_ONLOAD, "click me"],
    });
    let out = Command::new("python3")
        .arg(SCRIPT)
        .arg(&s.base)
        .arg(plan.to_string())
        .env("AGENTDIR_CHROMIUM", &chromium)
        .output()
        .expect("run python3");
    let text = format!("{}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "the browser found a problem:\n{text}");
    assert!(text.contains("browser checks passed"), "{text}");
}

fn urlencode(text: &str) -> String {
    url::form_urlencoded::byte_serialize(text.as_bytes()).collect()
}
