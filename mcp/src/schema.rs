//! Schemas as published to MCP clients: the port's schemars output, minus the `format` values
//! JSON Schema does not define.
//!
//! schemars writes `"format": "uint32"` and the like for Rust integer types; ajv (TypeScript
//! SDK: Inspector, Claude clients) logs a warning for each unknown format on every
//! `tools/list`. The bounds that matter (`minimum`, `maximum`) are separate keywords and stay.

use std::sync::Arc;

use rmcp::model::JsonObject;
use serde_json::Value;

/// The formats of JSON Schema 2020-12 (section 7.3 of the validation vocabulary).
const STANDARD_FORMATS: &[&str] = &[
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

const DATA_KEYWORDS: &[&str] = &["enum", "const", "default", "examples"];

pub(crate) fn published(schema: Arc<JsonObject>) -> Arc<JsonObject> {
    let mut object = Arc::unwrap_or_clone(schema);
    strip_object(&mut object);
    Arc::new(object)
}

fn strip_object(object: &mut JsonObject) {
    let non_standard =
        object.get("format").and_then(Value::as_str).is_some_and(|f| !STANDARD_FORMATS.contains(&f));
    if non_standard {
        object.remove("format");
    }
    // A property called "format" is a schema (an object), so it is never removed above.
    // Instance data (`enum`, `const`, `default`, `examples`) is left exactly as written.
    object
        .iter_mut()
        .filter(|(key, _)| !DATA_KEYWORDS.contains(&key.as_str()))
        .for_each(|(_, value)| strip_value(value));
}

fn strip_value(value: &mut Value) {
    match value {
        Value::Object(object) => strip_object(object),
        Value::Array(items) => items.iter_mut().for_each(strip_value),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn drops_only_non_standard_formats() {
        let Value::Object(schema) = json!({
            "type": "object",
            "properties": {
                "limit": {"type": "integer", "format": "uint32", "minimum": 1, "maximum": 100},
                "since": {"type": "string", "format": "date"},
                "format": {"type": "string"},
                "nested": {"anyOf": [{"type": "integer", "format": "int64"}, {"type": "null"}]},
                "kept": {"type": "object", "default": {"format": "int64"}}
            },
            "$defs": {"Level": {"type": "integer", "format": "uint8", "maximum": 2}}
        }) else {
            unreachable!()
        };
        let out = published(Arc::new(schema));
        assert_eq!(
            Value::Object(out.as_ref().clone()),
            json!({
                "type": "object",
                "properties": {
                    "limit": {"type": "integer", "minimum": 1, "maximum": 100},
                    "since": {"type": "string", "format": "date"},
                    "format": {"type": "string"},
                    "nested": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
                    "kept": {"type": "object", "default": {"format": "int64"}}
                },
                "$defs": {"Level": {"type": "integer", "maximum": 2}}
            })
        );
    }
}
