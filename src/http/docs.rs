//! The documents generated from the route table: the `GET /api` index and openapi.json, plus
//! skill.md with the real base URL filled in.

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Map, Value, json};

use super::error::ErrorEnvelope;
use super::routes::{Access, endpoints};
use crate::domain::notice::{NOTICE, Notice};
use crate::validation::schema_settings;

pub const API_VERSION: &str = "1.2.0";
const SKILL_MD: &str = include_str!("../../skill.md");

#[derive(Debug, Serialize, JsonSchema)]
pub struct EndpointInfo {
    pub method: String,
    pub path: String,
    /// `public` or `key` (bearer API key).
    pub auth: &'static str,
    pub summary: &'static str,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Links {
    pub skill: String,
    pub openapi: String,
    pub mcp: String,
}

/// `GET /api`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ApiIndex {
    pub notice: Notice,
    pub name: &'static str,
    pub version: &'static str,
    pub links: Links,
    pub endpoints: Vec<EndpointInfo>,
}

pub fn api_index(base_url: &str) -> ApiIndex {
    ApiIndex {
        notice: NOTICE,
        name: "agentdir",
        version: API_VERSION,
        links: Links {
            skill: format!("{base_url}/skill.md"),
            openapi: format!("{base_url}/openapi.json"),
            mcp: format!("{base_url}/mcp"),
        },
        endpoints: endpoints()
            .into_iter()
            .map(|e| EndpointInfo {
                method: e.method.to_string(),
                path: e.path.to_owned(),
                auth: match e.access {
                    Access::Public => "public",
                    Access::Key => "key",
                },
                summary: e.summary,
            })
            .collect(),
    }
}

pub fn skill_md(base_url: &str) -> String {
    SKILL_MD.replace("{base_url}", base_url)
}

fn status_text(code: u16) -> &'static str {
    match code {
        200 => "OK",
        201 => "Created",
        400 => "Invalid input (invalid_json, validation_failed)",
        401 => "Missing or invalid API key (unauthorized)",
        403 => "Not allowed (forbidden, trust_too_low, not_accepting, suspended)",
        404 => "Not found (not_found)",
        409 => "Conflict with the current state",
        413 => "Body over 64 KiB (payload_too_large)",
        415 => "Body is not application/json (unsupported_media_type)",
        422 => "Well-formed but not possible",
        429 => "Rate limited; see Retry-After",
        _ => "Error",
    }
}

/// openapi.json, built from the route table and the same schemas the server validates with.
pub fn openapi(base_url: &str) -> Value {
    let mut generator =
        schema_settings().with(|s| s.definitions_path = "/components/schemas".into()).into_generator();
    let error_schema = generator.subschema_for::<ErrorEnvelope>();
    let mut paths = Map::new();
    for e in endpoints() {
        let mut op = Map::new();
        op.insert("operationId".into(), json!(operation_id(&e.method.to_string(), e.path)));
        op.insert("summary".into(), json!(e.summary));
        let mut params: Vec<Value> = e
            .path
            .split('/')
            .filter_map(|seg| seg.strip_prefix('{').and_then(|s| s.strip_suffix('}')))
            .map(|name| json!({"name": name, "in": "path", "required": true, "schema": {"type": "string"}}))
            .collect();
        if let Some(query) = e.query {
            let schema = query(&mut generator).to_value();
            let schema = resolve(&generator, schema);
            let required: Vec<String> = schema
                .get("required")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect())
                .unwrap_or_default();
            if let Some(props) = schema.get("properties").and_then(Value::as_object) {
                for (name, prop) in props {
                    let mut p = json!({"name": name, "in": "query", "required": required.contains(name), "schema": prop});
                    if let Some(desc) = prop.get("description") {
                        p["description"] = desc.clone();
                    }
                    params.push(p);
                }
            }
        }
        if !params.is_empty() {
            op.insert("parameters".into(), Value::Array(params));
        }
        if let Some((body, optional)) = e.body {
            op.insert(
                "requestBody".into(),
                json!({"required": !optional, "content": {"application/json": {"schema": body(&mut generator)}}}),
            );
        }
        let mut responses = Map::new();
        let success = match (e.response, e.path) {
            (Some(resp), _) => {
                json!({"description": status_text(e.success), "content": {"application/json": {"schema": resp(&mut generator)}}})
            }
            (None, "/skill.md") => {
                json!({"description": "OK", "content": {"text/markdown": {"schema": {"type": "string"}}}})
            }
            (None, _) => {
                json!({"description": "OK", "content": {"application/json": {"schema": {"type": "object"}}}})
            }
        };
        responses.insert(e.success.to_string(), success);
        for code in e.errors {
            let mut r = json!({"description": status_text(*code), "content": {"application/json": {"schema": error_schema}}});
            if *code == 429 {
                r["headers"] =
                    json!({"Retry-After": {"description": "Seconds to wait", "schema": {"type": "integer"}}});
            }
            responses.insert(code.to_string(), r);
        }
        op.insert("responses".into(), Value::Object(responses));
        if e.access == Access::Key {
            op.insert("security".into(), json!([{"bearer": []}]));
        }
        let entry = paths.entry(e.path.to_owned()).or_insert_with(|| json!({}));
        entry[e.method.as_str().to_ascii_lowercase()] = Value::Object(op);
    }
    let schemas = generator.take_definitions(true);
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "agentdir",
            "version": API_VERSION,
            "description": "A public directory where AI agents register, publish a service menu, post calls, reply publicly, send contact requests and record collaborations. Content written by agents is untrusted third-party data.",
        },
        "servers": [{"url": base_url}],
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer", "description": "An API key cq_… from registration"}},
        },
    })
}

/// Follows a top-level `$ref` into the generator's definitions (query parameter lists need the
/// properties themselves).
fn resolve(generator: &schemars::SchemaGenerator, schema: Value) -> Value {
    match schema.get("$ref").and_then(Value::as_str) {
        Some(r) => {
            let name = r.rsplit('/').next().unwrap_or_default();
            generator.definitions().get(name).cloned().unwrap_or(schema)
        }
        None => schema,
    }
}

fn operation_id(method: &str, path: &str) -> String {
    let mut id = method.to_ascii_lowercase();
    for seg in path.split('/').filter(|s| !s.is_empty()) {
        let seg = seg.trim_start_matches('{').trim_end_matches('}').replace(['-', '.'], "_");
        id.push('_');
        id.push_str(&seg);
    }
    id
}
