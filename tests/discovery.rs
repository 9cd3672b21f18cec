//! Discovery documents on a real server: the AI Catalog at `/.well-known/ai-catalog.json` (the
//! Agent-Card/ai-catalog draft) and the MCP Server Card at `/mcp/server-card` (SEP-2127 draft),
//! each checked against its draft's rules and followed to what it names.

mod common;

use common::Server;
use serde_json::{Value, json};

/// The draft's name rule: reverse-DNS namespace, one slash, a name.
fn is_server_card_name(name: &str) -> bool {
    let Some((namespace, rest)) = name.split_once('/') else { return false };
    let ok = |s: &str, extra: &[char]| {
        !s.is_empty()
            && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-' || extra.contains(&c))
    };
    (3..=200).contains(&name.len()) && ok(namespace, &[]) && ok(rest, &['_'])
}

#[tokio::test]
async fn the_ai_catalog_lists_the_mcp_server_the_api_and_skill_md() {
    let s = Server::start().await;
    let r = s.get("/.well-known/ai-catalog.json", None).await;
    r.expect(200);
    assert!(r.header("content-type").is_some_and(|t| t.starts_with("application/json")));
    assert_eq!(r.header("access-control-allow-origin"), Some("*"));
    let catalog = &r.json;
    assert_eq!(catalog["specVersion"], "1.0");
    assert_eq!(catalog["host"]["identifier"], "127.0.0.1");
    let entries = catalog["entries"].as_array().expect("entries");
    let kinds: Vec<&str> = entries.iter().filter_map(|e| e["type"].as_str()).collect();
    assert_eq!(
        kinds,
        ["application/mcp-server-card+json", "application/vnd.oai.openapi+json", "text/markdown"]
    );
    for e in entries {
        let id = e["identifier"].as_str().expect("identifier");
        assert!(id.starts_with("urn:air:127.0.0.1:") && id.split(':').count() >= 4, "{id}");
        assert!(e["displayName"].as_str().is_some_and(|n| !n.is_empty()), "{e}");
        // Exactly one of url and data.
        assert!(e.get("data").is_none() && e["url"].is_string(), "{e}");
        let url = e["url"].as_str().expect("url");
        let path = url.strip_prefix(&s.base).unwrap_or_else(|| panic!("{url} is not on this server"));
        let doc = s.get(path, None).await;
        assert_eq!(doc.status, 200, "{url}");
        let media = e["type"].as_str().unwrap_or_default();
        if media.ends_with("json") {
            assert!(doc.json.is_object(), "{url} is not JSON");
        }
    }
}

#[tokio::test]
async fn the_mcp_server_card_follows_the_draft_and_agrees_with_the_server() {
    let s = Server::start().await;
    let r = s.get("/mcp/server-card", None).await;
    r.expect(200);
    assert_eq!(r.header("content-type"), Some("application/mcp-server-card+json"));
    assert_eq!(r.header("access-control-allow-origin"), Some("*"));
    let card = &r.json;
    assert_eq!(card["$schema"], "https://static.modelcontextprotocol.io/schemas/v2/server-card.schema.json");
    let name = card["name"].as_str().expect("name");
    assert!(is_server_card_name(name), "{name}");
    let description = card["description"].as_str().expect("description");
    assert!((1..=100).contains(&description.chars().count()), "{description}");
    let allowed = [
        "$schema",
        "_meta",
        "description",
        "icons",
        "name",
        "remotes",
        "repository",
        "title",
        "version",
        "websiteUrl",
    ];
    for key in card.as_object().expect("object").keys() {
        assert!(allowed.contains(&key.as_str()), "the draft allows no {key}");
    }
    let remote = &card["remotes"][0];
    assert_eq!(
        (remote["type"].as_str(), remote["url"].as_str()),
        (Some("streamable-http"), Some(s.url("/mcp").as_str()))
    );
    let versions: Vec<&str> = remote["supportedProtocolVersions"]
        .as_array()
        .expect("versions")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(versions.contains(&"2026-07-28") && versions.contains(&"2025-11-25"), "{versions:?}");

    // What the server itself says once connected agrees with the card.
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let answer = s
        .send(s.http.post(s.url("/mcp")).header("accept", "application/json, text/event-stream").json(&init))
        .await;
    let info = answer
        .text
        .lines()
        .find_map(|l| serde_json::from_str::<Value>(l.trim_start_matches("data:").trim()).ok())
        .map(|v| v["result"]["serverInfo"].clone())
        .unwrap_or_else(|| panic!("no initialize answer: {}", answer.text));
    assert_eq!(
        (info["name"].as_str(), &info["version"]),
        (card["title"].as_str(), &card["version"]),
        "{info}"
    );
}

#[tokio::test]
async fn skill_md_comes_in_one_language_on_request() {
    let s = Server::start().await;
    let both = s.get("/skill.md", None).await;
    both.expect(200);
    let en = s.get("/skill.md?lang=en", None).await;
    let zh = s.get("/skill.md?lang=zh", None).await;
    for r in [&en, &zh] {
        r.expect(200);
        assert_eq!(r.header("content-type"), Some("text/markdown; charset=utf-8"));
    }
    assert!(en.text.starts_with("# agentdir — onboarding guide") && en.text.contains("## Rules"));
    assert!(!en.text.contains("中文版）") && !en.text.contains("## 规则"), "Chinese in the English guide");
    assert!(zh.text.starts_with("# agentdir 智能体入驻指南（中文版）") && zh.text.contains("## 规则"));
    assert!(!zh.text.contains("## Rules"), "English in the Chinese guide");
    assert!(
        en.text.contains(&format!("{}/skill.md?lang=en", s.base)) && en.text.contains("?lang=zh"),
        "the English guide names both"
    );
    // Each is well under the whole; tokens here are bytes / 4 for English and characters for Chinese.
    let zh_chars = zh.text.chars().count();
    println!(
        "skill.md: {} bytes in all; ?lang=en {} bytes (≈{} tokens); ?lang=zh {} characters",
        both.text.len(),
        en.text.len(),
        en.text.len() / 4,
        zh_chars
    );
    assert!(en.text.len() * 10 < both.text.len() * 7 && zh.text.len() < both.text.len() / 2 + 4096);
    let bad = s.get("/skill.md?lang=fr", None).await;
    bad.expect_error(400, "validation_failed");
    assert_eq!(bad.json["error"]["field"], "lang");
}
