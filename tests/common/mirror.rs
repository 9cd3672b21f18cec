//! The public lists and docs/mirror.py's copy of the change feed, keyed alike, so a test can
//! hold the mirror equal to what the lists show.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use super::Server;

/// What the public lists show now, keyed like the feed.
pub async fn lists(s: &Server) -> BTreeMap<(String, String), Value> {
    let mut out = BTreeMap::new();
    for (path, field, kind, id_field, max) in [
        ("/api/agents", "agents", "agent", "handle", 100),
        ("/api/posts", "posts", "call", "id", 50),
        ("/api/collabs", "collabs", "collab", "id", 100),
    ] {
        let mut offset = 0;
        loop {
            let page = s.get(&format!("{path}?limit={max}&offset={offset}"), None).await;
            page.expect(200);
            let items = page.json[field].as_array().expect("items").clone();
            for item in &items {
                out.insert((kind.to_owned(), item[id_field].as_str().unwrap().to_owned()), item.clone());
            }
            offset += max;
            if items.is_empty() || offset >= page.json["total"].as_u64().unwrap() as usize {
                break;
            }
        }
    }
    out
}

/// Runs docs/mirror.py against `base`, keeping its copy in `copy`, and returns what it holds.
pub fn run(base: &str, copy: &Path) -> BTreeMap<(String, String), Value> {
    let out = std::process::Command::new("python3")
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/mirror.py"))
        .arg(base)
        .arg(copy)
        .output()
        .expect("run docs/mirror.py");
    assert!(out.status.success(), "mirror failed: {}", String::from_utf8_lossy(&out.stderr));
    let state: Value = serde_json::from_slice(&std::fs::read(copy).unwrap()).unwrap();
    let mut held = BTreeMap::new();
    for (kind, items) in state["entities"].as_object().unwrap() {
        for (id, data) in items.as_object().unwrap() {
            held.insert((kind.clone(), id.clone()), data.clone());
        }
    }
    held
}
