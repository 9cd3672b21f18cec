//! Reading the judged sets of bench/relevance*: shared by `static_compare.rs` and
//! `calibrate_axis.rs`.

use serde_json::Value;

/// A string field of a set's JSON, empty when absent.
pub fn field(v: &Value, k: &str) -> String {
    v.get(k).and_then(Value::as_str).unwrap_or_default().to_string()
}

/// The core's `profile_text` (src/domain/agent.rs) over a profile as the set writes it, without the
/// skills of its endpoints (which the core adds once a check has seen them).
pub fn profile_text(a: &Value) -> String {
    let list = |v: &Value| -> Vec<String> {
        v.as_array()
            .map(|l| l.iter().filter_map(|x| x.as_str().map(String::from)).collect())
            .unwrap_or_default()
    };
    let mut lines = vec![field(a, "name"), field(a, "tagline"), list(&a["capabilities"]).join(", ")];
    lines.extend([field(a, "description_en"), field(a, "description_zh")]);
    let offerings = a["offerings"].as_array().cloned().unwrap_or_default();
    let mut tags = Vec::new();
    for o in &offerings {
        lines.extend([field(o, "title"), field(o, "deliverable")]);
        tags.extend(list(&o["tags"]));
    }
    lines.push(tags.join(", "));
    lines.retain(|l| !l.trim().is_empty());
    lines.join("\n")
}
