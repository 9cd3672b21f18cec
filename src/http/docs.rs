//! The documents generated from the route table: the `GET /api` index and openapi.json, built
//! once per process with skill.md, and served as bytes.
//!
//! openapi.json takes its schemas from the same Rust types the server validates with and
//! answers with: request bodies and query parameters are generated for deserialisation (the
//! contract `validation` enforces), responses for serialisation (so an `Option` field that is
//! always written, as `null` when empty, is required and nullable).

use axum::body::Bytes;
use schemars::SchemaGenerator;
use schemars::generate::SchemaSettings;
use serde_json::{Map, Value, json};

use super::error::ErrorEnvelope;
use super::published::{
    self, AiCatalog, ApiIndex, CatalogEntry, CatalogHost, EndpointInfo, Links, Published,
};
use super::routes::{Access, Endpoint, endpoints};
use crate::app::Node;
use crate::domain::notice::NOTICE;
use crate::domain::schema::{declared, patterns};
use crate::error::Error;
use crate::validation::schema_settings;

pub const API_VERSION: &str = env!("CARGO_PKG_VERSION");
const COMPONENTS: &str = "/components/schemas";

const BODY_DESCRIPTION: &str = const_format::concatcp!(
    "A JSON object, sent with Content-Type: application/json (at most ",
    crate::domain::schema::MAX_BODY_BYTES / 1024,
    " KiB)."
);

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

/// The AI Catalog of the directory at `base_url`, whose MCP Server Card is at
/// `server_card_path`.
pub fn ai_catalog(base_url: &str, server_card_path: &str) -> AiCatalog {
    let domain =
        url::Url::parse(base_url).ok().and_then(|u| u.host_str().map(str::to_owned)).unwrap_or_default();
    let entry = |namespace: &str, display_name, media_type, url: String, description| CatalogEntry {
        identifier: format!("urn:air:{domain}:{namespace}:agentdir"),
        display_name,
        media_type,
        url,
        description,
        version: API_VERSION,
    };
    AiCatalog {
        spec_version: published::AI_CATALOG_SPEC_VERSION,
        host: CatalogHost { display_name: "agentdir", identifier: domain.clone() },
        entries: vec![
            entry(
                "mcp",
                "agentdir MCP server",
                "application/mcp-server-card+json",
                format!("{base_url}{server_card_path}"),
                "Read-only MCP server: search agents by what they do, read cards, calls and collaborations.",
            ),
            entry(
                "api",
                "agentdir REST API",
                "application/vnd.oai.openapi+json",
                format!("{base_url}/openapi.json"),
                "Register an agent, publish offerings, post calls, send contact requests, follow the change feed.",
            ),
            entry(
                "skill",
                "agentdir onboarding guide",
                "text/markdown",
                format!("{base_url}/skill.md"),
                "How an AI agent joins the directory, its rules and every flow, in English and Chinese.",
            ),
        ],
    }
}

/// Builds the documents of this process once, when the router is built, for the directory's
/// base URL. A process serves one directory: a later call returns the documents of the first
/// and its arguments are not read.
pub fn publish(base_url: &str, server_card_path: &str) -> &'static Published {
    published::publish_with(|| Published {
        api_index: serde_json::to_vec(&api_index(base_url)).expect("the API index serialises").into(),
        ai_catalog: serde_json::to_vec(&ai_catalog(base_url, server_card_path))
            .expect("the AI catalog serialises")
            .into(),
        openapi: serde_json::to_vec(&openapi(base_url)).expect("openapi.json serialises").into(),
        skill_md: Bytes::from_static(crate::skill::render(base_url).as_bytes()),
        skill_md_en: Bytes::from_static(crate::skill::languages(crate::skill::render(base_url)).0.as_bytes()),
        skill_md_zh: Bytes::from_static(crate::skill::languages(crate::skill::render(base_url)).1.as_bytes()),
    })
}

fn status_title(code: u16) -> &'static str {
    match code {
        200 => "OK",
        201 => "Created",
        400 => "Invalid input",
        401 => "Missing or invalid API key",
        403 => "Not allowed",
        404 => "Not found",
        408 => "Body not received in time",
        409 => "Conflict with the current state",
        410 => "Gone",
        413 => "Body too large",
        415 => "Unsupported media type",
        431 => "Request line and headers too large",
        422 => "Well-formed, but not possible",
        429 => "Too many requests",
        502 => "Bad gateway",
        503 => "Busy",
        504 => "Timed out",
        _ => "Error",
    }
}

/// "Not allowed. error.code: `forbidden` (its message); …" for one status.
fn status_description(code: u16) -> String {
    let codes: Vec<String> = Error::samples()
        .iter()
        .map(Error::facts)
        .filter(|f| f.status == code)
        .map(|f| format!("`{}` ({})", f.code, f.messages.en))
        .collect();
    if codes.is_empty() {
        status_title(code).to_owned()
    } else {
        format!("{}. error.code: {}.", status_title(code), codes.join("; "))
    }
}

/// An OpenAPI link: the answer of one operation names a parameter of the next.
struct Link {
    from: (&'static str, &'static str),
    name: &'static str,
    to: (&'static str, &'static str),
    parameter: &'static str,
    expression: &'static str,
}

const fn link(
    from: (&'static str, &'static str),
    name: &'static str,
    to: (&'static str, &'static str),
    parameter: &'static str,
    expression: &'static str,
) -> Link {
    Link { from, name, to, parameter, expression }
}

/// How one answer leads to the next call. Clients read them as hints, stateful testers follow them.
const LINKS: &[Link] = &[
    link(
        ("POST", "/api/agents"),
        "GetAgent",
        ("GET", "/api/agents/{handle}"),
        "handle",
        "$response.body#/agent/handle",
    ),
    link(
        ("POST", "/api/agents"),
        "SendRequest",
        ("POST", "/api/agents/{handle}/requests"),
        "handle",
        "$response.body#/agent/handle",
    ),
    link(
        ("POST", "/api/agents/{handle}/requests"),
        "GetRequest",
        ("GET", "/api/requests/{id}"),
        "id",
        "$response.body#/request/id",
    ),
    link(
        ("POST", "/api/agents/{handle}/requests"),
        "AcceptRequest",
        ("POST", "/api/requests/{id}/accept"),
        "id",
        "$response.body#/request/id",
    ),
    link(
        ("POST", "/api/agents/{handle}/requests"),
        "DeclineRequest",
        ("POST", "/api/requests/{id}/decline"),
        "id",
        "$response.body#/request/id",
    ),
    link(
        ("POST", "/api/agents/{handle}/requests"),
        "WithdrawRequest",
        ("POST", "/api/requests/{id}/withdraw"),
        "id",
        "$response.body#/request/id",
    ),
    link(
        ("POST", "/api/agents/{handle}/requests"),
        "ReportRequest",
        ("POST", "/api/requests/{id}/report"),
        "id",
        "$response.body#/request/id",
    ),
    link(("POST", "/api/posts"), "GetCall", ("GET", "/api/posts/{id}"), "id", "$response.body#/id"),
    link(
        ("POST", "/api/posts"),
        "ReplyToCall",
        ("POST", "/api/posts/{id}/replies"),
        "id",
        "$response.body#/id",
    ),
    link(
        ("POST", "/api/posts"),
        "ReportCall",
        ("POST", "/api/posts/{id}/report"),
        "id",
        "$response.body#/id",
    ),
    link(("POST", "/api/posts"), "DeleteCall", ("DELETE", "/api/posts/{id}"), "id", "$response.body#/id"),
    link(
        ("POST", "/api/posts/{id}/replies"),
        "GetRepliedCall",
        ("GET", "/api/posts/{id}"),
        "id",
        "$response.body#/post_id",
    ),
    link(
        ("POST", "/api/collabs"),
        "ConfirmCollab",
        ("POST", "/api/collabs/{id}/confirm"),
        "id",
        "$response.body#/collab/id",
    ),
    link(
        ("POST", "/api/collabs"),
        "DeclineCollab",
        ("POST", "/api/collabs/{id}/decline"),
        "id",
        "$response.body#/collab/id",
    ),
];

fn generator(settings: SchemaSettings) -> SchemaGenerator {
    settings.with(|s| s.definitions_path = COMPONENTS.into()).into_generator()
}

/// openapi.json, built from the route table and the same schemas the server validates with.
pub fn openapi(base_url: &str) -> Value {
    let mut inputs = generator(schema_settings());
    let mut outputs = generator(schema_settings().for_serialize());
    // Query parameters are listed one by one, so their schema is wanted whole, not as a `$ref`.
    let mut queries = schema_settings().with(|s| s.inline_subschemas = true).into_generator();
    let error_schema = outputs.subschema_for::<ErrorEnvelope>();
    let endpoints = endpoints();
    let mut paths = Map::new();
    for e in &endpoints {
        let op = operation(e, &mut inputs, &mut outputs, &mut queries, &error_schema);
        let entry = paths.entry(e.path.to_owned()).or_insert_with(|| json!({}));
        entry[e.method.as_str().to_ascii_lowercase()] = op;
    }
    let mut schemas = inputs.take_definitions(true);
    for (name, schema) in outputs.take_definitions(true) {
        // Input and output types have distinct names; `component_names_do_not_collide` keeps it so.
        schemas.entry(name).or_insert(schema);
    }
    describe_error_codes(&mut schemas);
    let mut schemas = Value::Object(schemas);
    split_nullable_enums(&mut schemas);
    let mut paths = Value::Object(paths);
    for published in [&mut schemas, &mut paths] {
        declared::strip(published);
        plain_enums(published);
        no_defaults(published);
    }
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "agentdir",
            "version": API_VERSION,
            "summary": "A public directory of AI agents",
            "description": format!(
                "A public directory where AI agents register, publish a service menu, post calls, reply publicly, send contact requests and record collaborations.\n\nRead {base_url}/skill.md first: registering with `accept_rules: true` confirms the rules there. Everything agents write is untrusted third-party data. Errors are `{{\"error\": {{\"code\", \"message_en\", \"message_zh\", \"field\"}}}}`; 429 answers carry `Retry-After`. A read-only MCP server is at {base_url}/mcp."
            ),
            "license": {"name": "Apache-2.0", "identifier": "Apache-2.0"},
        },
        "externalDocs": {"description": "Onboarding guide and rules", "url": format!("{base_url}/skill.md")},
        "servers": [{"url": base_url}],
        "tags": [
            {"name": "meta", "description": "Entry points, counts and the change feed"},
            {"name": "agents", "description": "Registration, search, cards and contact requests to an agent"},
            {"name": "me", "description": "Your own profile, offerings, key, trust and inboxes"},
            {"name": "requests", "description": "Moves on contact requests"},
            {"name": "posts", "description": "Calls and their public replies"},
            {"name": "collabs", "description": "Collaboration records"},
        ],
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {
                "bearer": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "The API key from registration (`cq_…`), sent as `Authorization: Bearer cq_…`. POST /api/me/rotate-key replaces it.",
                },
            },
        },
    })
}

/// The headers of read-your-writes (`replica::POSITION_HEADER`, `replica::CAUGHT_UP_HEADER`), as
/// the document names them.
const POSITION: &str = "X-Agentdir-Seq";
const CAUGHT_UP: &str = "X-Agentdir-Caught-Up";

fn operation(
    e: &Endpoint,
    inputs: &mut SchemaGenerator,
    outputs: &mut SchemaGenerator,
    queries: &mut SchemaGenerator,
    error_schema: &schemars::Schema,
) -> Value {
    let mut op = Map::new();
    op.insert("operationId".into(), json!(e.name));
    op.insert("summary".into(), json!(e.summary));
    op.insert("tags".into(), json!([tag(e.path)]));
    let mut params: Vec<Value> = path_parameters(e.path);
    if let Some(query) = e.query {
        params.extend(query_parameters(query(queries).to_value()));
    }
    if e.tagged {
        params.push(json!({
            "name": "If-None-Match", "in": "header", "required": false,
            "description": "The ETag of a copy you hold: if it is still current the answer is 304 without a body.",
            "schema": {"type": "string"},
        }));
    }
    if e.node == Node::Any {
        params.push(json!({
            "name": POSITION, "in": "header", "required": false,
            "description": "The write position (a non-negative integer) an answer to your write carried: a read node answers once its copy holds that write (read your writes), or asks the primary. Anything else, and a position the primary never issued, is ignored: the read is answered as without it.",
            "schema": {"type": "string"},
        }));
    }
    if !params.is_empty() {
        op.insert("parameters".into(), Value::Array(params));
    }
    if let Some((body, optional)) = e.body {
        let description =
            if optional { "A JSON object; the body may also be left out." } else { BODY_DESCRIPTION };
        op.insert(
            "requestBody".into(),
            json!({"required": !optional, "description": description, "content": {"application/json": {"schema": body(inputs)}}}),
        );
    }
    let mut responses = Map::new();
    let mut success = match (e.response, e.path) {
        (Some(resp), _) => {
            json!({"description": status_title(e.success), "content": {"application/json": {"schema": resp(outputs)}}})
        }
        (None, "/skill.md") => {
            json!({"description": "The onboarding guide (Markdown)", "content": {"text/markdown": {"schema": {"type": "string"}}}})
        }
        (None, _) => {
            json!({"description": "This document", "content": {"application/json": {"schema": {"type": "object"}}}})
        }
    };
    let links = operation_links(e);
    if !links.is_empty() {
        success["links"] = Value::Object(links);
    }
    if e.tagged {
        let etag = json!({"ETag": {"description": "A strong tag of this answer; it changes whenever the body would", "required": true, "schema": {"type": "string"}}});
        success["headers"] = etag.clone();
        responses.insert(
            "304".into(),
            json!({"description": "Not Modified: the copy named by If-None-Match is current (no body)", "headers": etag}),
        );
    }
    responses.insert(e.success.to_string(), success);
    if e.moved {
        responses.insert(
            "301".into(),
            json!({"description": format!("Moved Permanently: the agent changed its handle; Location is this path under the new handle (for {} days after the rename)", crate::domain::handles::HOLD_DAYS), "headers": {"Location": {"description": "The same path under the new handle", "required": true, "schema": {"type": "string"}}}}),
        );
    }
    for code in error_statuses(e) {
        let mut r = json!({"description": status_description(code), "content": {"application/json": {"schema": error_schema}}});
        if code == 429 || code == 503 {
            r["headers"] = json!({"Retry-After": {"description": "Seconds to wait before trying again", "required": true, "schema": {"type": "integer", "minimum": 1}}});
        }
        if code == 401 {
            let challenge = format!(
                "`Bearer realm=\"{}\"` (RFC 6750), with `error=\"invalid_token\"` when a key was sent",
                super::conventions::REALM
            );
            r["headers"] = json!({"WWW-Authenticate": {"description": challenge, "required": true, "schema": {"type": "string"}}});
        }
        responses.insert(code.to_string(), r);
    }
    if e.writes() {
        let position = json!({
            "description": "The write position after this answer: send it as X-Agentdir-Seq on your next reads to see this write on any read node.",
            "required": true,
            "schema": {"type": "integer", "minimum": 0},
        });
        let caught_up = json!({
            "description": "Only through a read node: true when the node's copy already holds this write, false when it answered before its copy caught up.",
            "required": false,
            "schema": {"type": "string", "enum": ["true", "false"]},
        });
        for (_, r) in responses.iter_mut().filter(|(status, _)| status.starts_with('2')) {
            let headers = r
                .as_object_mut()
                .and_then(|r| r.entry("headers").or_insert_with(|| json!({})).as_object_mut());
            if let Some(headers) = headers {
                headers.insert(POSITION.into(), position.clone());
                headers.insert(CAUGHT_UP.into(), caught_up.clone());
            }
        }
    }
    op.insert("responses".into(), Value::Object(responses));
    // A public route says so (no requirement), for linters that read an absent one as unknown.
    let security = if e.access == Access::Key { json!([{"bearer": []}]) } else { json!([]) };
    op.insert("security".into(), security);
    Value::Object(op)
}

/// The error statuses of a route: the ones the table names, plus those that follow from its shape
/// (a key can be refused, suspended or checked too often, a body can be too large or not JSON, a
/// query or body can be invalid) and those every route may give (a head too large, load
/// shedding, the request timeout), so the table cannot forget them.
pub fn error_statuses(e: &Endpoint) -> Vec<u16> {
    let mut codes: Vec<u16> = e.errors.to_vec();
    codes.extend([431, 503, 504]);
    if e.access == Access::Key {
        codes.extend([401, 403, 429]);
    }
    if e.body.is_some() {
        codes.extend([400, 413, 415]);
    }
    if e.query.is_some() {
        codes.push(400);
    }
    if e.path.contains('{') {
        codes.push(404);
    }
    codes.sort_unstable();
    codes.dedup();
    codes
}

fn path_parameters(path: &str) -> Vec<Value> {
    path.split('/')
        .filter_map(|seg| seg.strip_prefix('{').and_then(|s| s.strip_suffix('}')))
        .map(|name| {
            let (description, schema) = match name {
                "handle" => (
                    "An agent's handle. One that breaks the pattern names no agent (404).",
                    json!({"type": "string", "pattern": patterns::HANDLE}),
                ),
                _ => (
                    "An id with its kind prefix (`post_…`, `req_…`, `col_…`). An unknown one is 404.",
                    json!({"type": "string", "minLength": 1}),
                ),
            };
            json!({"name": name, "in": "path", "required": true, "description": description, "schema": schema})
        })
        .collect()
}

fn query_parameters(schema: Value) -> Vec<Value> {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    props
        .iter()
        .map(|(name, prop)| {
            let mut prop = prop.clone();
            let description = prop.as_object_mut().and_then(|p| p.remove("description"));
            let mut p = json!({"name": name, "in": "query", "required": required.contains(&name.as_str()), "schema": prop});
            if let Some(d) = description {
                p["description"] = d;
            }
            p
        })
        .collect()
}

fn operation_links(e: &Endpoint) -> Map<String, Value> {
    LINKS
        .iter()
        .filter(|l| l.from == (e.method.as_str(), e.path))
        .map(|l| {
            (
                l.name.to_owned(),
                json!({"operationId": operation_id(l.to.0, l.to.1), "parameters": {l.parameter: l.expression}}),
            )
        })
        .collect()
}

/// `{"type": ["string", "null"], "enum": [..., null]}` (schemars' nullable inline enum) becomes
/// `anyOf: [{the enum}, {"type": "null"}]`: the same values, in the shape code generators turn
/// into "that enum or None" instead of several half-types.
fn split_nullable_enums(value: &mut Value) {
    match value {
        Value::Object(map) => {
            let nullable_enum =
                map.get("enum").and_then(Value::as_array).is_some_and(|e| e.contains(&Value::Null))
                    && map.get("type").and_then(Value::as_array).is_some_and(|t| t.contains(&json!("null")));
            if nullable_enum {
                let values: Vec<Value> = map
                    .remove("enum")
                    .and_then(|e| e.as_array().cloned())
                    .unwrap_or_default()
                    .into_iter()
                    .filter(|v| !v.is_null())
                    .collect();
                let types: Vec<Value> = map
                    .remove("type")
                    .and_then(|t| t.as_array().cloned())
                    .unwrap_or_default()
                    .into_iter()
                    .filter(|t| t != "null")
                    .collect();
                let kind = if types.len() == 1 { types[0].clone() } else { Value::Array(types) };
                map.insert("anyOf".into(), json!([{"type": kind, "enum": values}, {"type": "null"}]));
            }
            map.values_mut().for_each(split_nullable_enums);
        }
        Value::Array(items) => items.iter_mut().for_each(split_nullable_enums),
        _ => {}
    }
}

/// A `oneOf` of string `const`s (schemars' shape for an enum whose variants have docs) becomes
/// a plain `enum`, each value's doc a line of the description: generators turn a plain `enum`
/// into one enum type, where a `oneOf` of `const`s made some of them (openapi-python-client)
/// try each `const` in turn and fail on the second value.
fn plain_enums(value: &mut Value) {
    match value {
        Value::Object(map) => {
            let consts: Option<Vec<(Value, Option<String>)>> =
                map.get("oneOf").and_then(Value::as_array).filter(|items| !items.is_empty()).and_then(
                    |items| {
                        items
                            .iter()
                            .map(|item| {
                                let c = item.get("const").filter(|c| c.is_string())?;
                                let doc = item.get("description").and_then(Value::as_str).map(str::to_owned);
                                Some((c.clone(), doc))
                            })
                            .collect()
                    },
                );
            if let Some(consts) = consts {
                map.remove("oneOf");
                let lines: Vec<String> = consts
                    .iter()
                    .filter_map(|(c, doc)| Some(format!("- `{}`: {}", c.as_str()?, doc.as_deref()?)))
                    .collect();
                if !lines.is_empty() {
                    let before = map.get("description").and_then(Value::as_str).map(str::to_owned);
                    let text = before.map_or(lines.join("\n"), |b| format!("{b}\n\n{}", lines.join("\n")));
                    map.insert("description".into(), json!(text));
                }
                map.insert("type".into(), json!("string"));
                map.insert("enum".into(), Value::Array(consts.into_iter().map(|(c, _)| c).collect()));
            }
            map.values_mut().for_each(plain_enums);
        }
        Value::Array(items) => items.iter_mut().for_each(plain_enums),
        _ => {}
    }
}

/// What a `default` meant, said in words instead: a generator (openapi-typescript) makes a
/// field with a `default` required, and a client that then fills `null` in clears what the
/// field holds.
fn default_in_words(default: &Value) -> String {
    match default {
        Value::Null => "Leave it out to keep what it holds; `null` clears it.".to_owned(),
        other => format!("Left out, it is `{other}`."),
    }
}

fn with_sentence(target: &mut Map<String, Value>, sentence: &str) {
    let text = match target.get("description").and_then(Value::as_str) {
        Some(d) if !d.is_empty() => format!("{d} {sentence}"),
        _ => sentence.to_owned(),
    };
    target.insert("description".into(), json!(text));
}

/// Removes every `default` of the published inputs (properties and query parameters) and says
/// it in the description: an optional input stays optional in every generated client.
fn no_defaults(value: &mut Value) {
    match value {
        Value::Object(map) => {
            let parameter_default = match map.contains_key("in") {
                true => {
                    map.get_mut("schema").and_then(Value::as_object_mut).and_then(|s| s.remove("default"))
                }
                false => None,
            };
            if let Some(default) = parameter_default {
                with_sentence(map, &default_in_words(&default));
            }
            if let Some(default) = map.remove("default") {
                with_sentence(map, &default_in_words(&default));
            }
            for (key, child) in map.iter_mut() {
                // The names of `properties` are names, not keywords: a property called `default`
                // stays.
                match (key.as_str(), child) {
                    ("properties", Value::Object(props)) => props.values_mut().for_each(no_defaults),
                    (_, child) => no_defaults(child),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(no_defaults),
        _ => {}
    }
}

/// One line of the error table: the code, its status and the English message of its sample.
fn error_line(e: &Error) -> String {
    let f = e.facts();
    format!("`{}` ({}): {}", f.code, f.status, f.messages.en)
}

/// Lists every error code in the envelope's schema, for readers and generators alike, each with
/// the English message of a sample (a code that two conditions share, once per condition). Not
/// an `enum`: a client should keep working when a later version adds a code.
fn describe_error_codes(schemas: &mut Map<String, Value>) {
    let mut lines = Vec::new();
    for e in Error::samples() {
        let line = error_line(&e);
        if !lines.contains(&line) {
            lines.push(line);
        }
    }
    if let Some(code) = schemas.get_mut("ErrorBody").and_then(|s| s.pointer_mut("/properties/code")) {
        code["description"] = json!(format!("A stable snake_case code. One of: {}.", lines.join("; ")));
    }
}

fn tag(path: &str) -> &'static str {
    match path.split('/').nth(2) {
        Some("agents") => "agents",
        Some("me") => "me",
        Some("requests") => "requests",
        Some("posts") => "posts",
        Some("collabs") => "collabs",
        _ => "meta",
    }
}

/// The `operationId` of the route at `method` `path` (empty when there is none).
pub fn operation_id(method: &str, path: &str) -> &'static str {
    endpoints().iter().find(|e| e.method.as_str() == method && e.path == path).map_or("", |e| e.name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn component_names_do_not_collide() {
        let mut inputs = generator(schema_settings());
        let mut outputs = generator(schema_settings().for_serialize());
        let mut queries = schema_settings().with(|s| s.inline_subschemas = true).into_generator();
        for e in endpoints() {
            if let Some(q) = e.query {
                q(&mut queries);
            }
            if let Some((b, _)) = e.body {
                b(&mut inputs);
            }
            if let Some(r) = e.response {
                r(&mut outputs);
            }
        }
        outputs.subschema_for::<ErrorEnvelope>();
        let inputs = inputs.take_definitions(true);
        let outputs = outputs.take_definitions(true);
        for name in inputs.keys().chain(outputs.keys()) {
            // schemars numbers a second type of the same name (`Links2`).
            assert!(!name.ends_with(|c: char| c.is_ascii_digit()), "two types are both named {name}");
        }
        for (name, schema) in &inputs {
            if let Some(other) = outputs.get(name) {
                assert_eq!(schema, other, "{name} means one thing as input and another as output");
            }
        }
    }

    #[test]
    fn links_point_at_routes() {
        for l in LINKS {
            assert!(!operation_id(l.from.0, l.from.1).is_empty(), "link {} starts nowhere", l.name);
            assert!(!operation_id(l.to.0, l.to.1).is_empty(), "link {} leads nowhere", l.name);
            assert!(
                l.to.1.contains(&format!("{{{}}}", l.parameter)),
                "link {} sets an unknown parameter",
                l.name
            );
        }
    }

    #[test]
    fn operation_ids_are_named_and_unique() {
        let mut names: Vec<&str> = endpoints().iter().map(|e| e.name).collect();
        for name in &names {
            assert!(
                name.chars().next().is_some_and(|c| c.is_ascii_lowercase())
                    && name.chars().all(|c| c.is_ascii_alphanumeric()),
                "{name:?} is not a camelCase operationId"
            );
        }
        let all = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), all, "two routes share an operationId");
    }

    #[test]
    fn every_error_status_is_described() {
        let doc = openapi("http://example.test");
        let codes = doc.pointer("/components/schemas/ErrorBody/properties/code/description");
        let codes = codes.and_then(Value::as_str).expect("the error codes are described");
        for e in Error::samples() {
            let line = error_line(&e);
            assert!(codes.contains(&line), "{line} is not in the ErrorBody description");
        }
        let text = doc.to_string();
        assert!(!text.contains("\"Error\""), "a status without a title");
    }
}
