//! The endpoint on a real socket, driven by rmcp's own client over both lifecycles
//! (`initialize` with 2025-11-25, and `server/discover` with 2026-07-28), plus raw HTTP for the
//! `Host`/`Origin` checks.

mod common;

use agentdir_mcp::{McpConfig, streamable_http_service};
use common::{SKILL_MD, TestDirectory};
use rmcp::{
    ClientServiceExt, RoleClient, ServiceError,
    model::{
        CallToolRequestParams, CallToolResult, ClientConfig, ErrorCode, JsonObject, ProtocolVersion,
        ReadResourceRequestParams, ResourceContents,
    },
    service::{ClientLifecycleMode, RunningService},
    transport::StreamableHttpClientTransport,
};
use serde_json::{Value, json};

type Client = RunningService<RoleClient, ClientConfig>;

/// Serves `agents` test agents at `http://127.0.0.1:<port>/mcp`; returns the base URL.
async fn start(agents: usize) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    let cfg = McpConfig::new(&base).expect("config");
    let app = axum::Router::new()
        .nest_service("/mcp", streamable_http_service(TestDirectory::with_agents(agents), cfg));
    tokio::spawn(async move { axum::serve(listener, app).await });
    base
}

async fn connect(base: &str, lifecycle: ClientLifecycleMode) -> Client {
    let transport = StreamableHttpClientTransport::from_uri(format!("{base}/mcp"));
    ClientConfig::default().serve_with_lifecycle(transport, lifecycle).await.expect("client connects")
}

fn args(value: Value) -> JsonObject {
    match value {
        Value::Object(map) => map,
        other => panic!("arguments must be an object, got {other}"),
    }
}

async fn call(client: &Client, tool: &str, arguments: Value) -> CallToolResult {
    client
        .call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(args(arguments)))
        .await
        .unwrap_or_else(|e| panic!("{tool}: protocol error {e}"))
}

fn text(result: &CallToolResult) -> String {
    result.content.iter().filter_map(|c| c.as_text().map(|t| t.text.clone())).collect::<Vec<_>>().join("\n")
}

fn structured(result: &CallToolResult) -> &Value {
    result.structured_content.as_ref().expect("structured content")
}

fn assert_ok_with_notice(tool: &str, result: &CallToolResult) {
    assert_ne!(result.is_error, Some(true), "{tool}: {}", text(result));
    let body = structured(result);
    let en = body["notice"]["en"].as_str().expect("notice.en");
    let zh = body["notice"]["zh"].as_str().expect("notice.zh");
    let shown = text(result);
    assert!(shown.contains(en) && shown.contains(zh), "{tool}: notice missing from text");
}

fn assert_tool_error(result: &CallToolResult, code: &str, field: Option<&str>) {
    assert_eq!(result.is_error, Some(true), "{}", text(result));
    // No structured content: it would have to match the output schema (TypeScript SDK).
    assert_eq!(result.structured_content, None);
    let envelope: Value = serde_json::from_str(&text(result)).expect("error text is the envelope");
    let error = &envelope["error"];
    assert_eq!(error["code"], code);
    assert!(error["message_en"].as_str().is_some_and(|m| !m.is_empty()));
    assert!(error["message_zh"].as_str().is_some_and(|m| !m.is_empty()));
    assert_eq!(error["field"].as_str(), field);
}

async fn exercise(lifecycle: ClientLifecycleMode) {
    let base = start(45).await;
    let client = connect(&base, lifecycle).await;

    let info = client.peer_info().expect("server info");
    assert_eq!(info.server_info.as_ref().map(|i| i.name.as_str()), Some("agentdir"));
    assert!(info.instructions.as_deref().is_some_and(|i| i.contains("untrusted")));

    // tools/list: six read-only tools with both schemas.
    let tools = client.list_all_tools().await.expect("tools/list");
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(
        names,
        ["search_agents", "get_agent", "search_calls", "get_call", "list_collaborations", "get_stats"]
    );
    for tool in &tools {
        let annotations = tool.annotations.as_ref().expect("annotations");
        assert_eq!(annotations.read_only_hint, Some(true), "{}", tool.name);
        assert_eq!(annotations.open_world_hint, Some(false), "{}", tool.name);
        assert!(tool.title.is_some() && tool.description.is_some(), "{}", tool.name);
        assert_eq!(tool.input_schema.get("type"), Some(&json!("object")), "{}", tool.name);
        let output = tool.output_schema.as_ref().expect("outputSchema");
        assert_eq!(output.get("type"), Some(&json!("object")), "{}", tool.name);
    }
    let search = &tools[0];
    assert_eq!(search.input_schema["properties"]["limit"]["maximum"], json!(100));
    assert_eq!(tools[2].input_schema["properties"]["limit"]["maximum"], json!(50));

    // Every tool, with structured content, a text rendering and the notice.
    let found = call(&client, "search_agents", json!({"q": "translation"})).await;
    assert_ok_with_notice("search_agents", &found);
    assert_eq!(structured(&found)["agents"][0]["handle"], "agent-000");
    assert!(text(&found).contains("1. agent-000 — Agent 0 — English ⇄ Chinese translation (level 0)"));

    let page = call(&client, "search_agents", json!({"limit": 20, "offset": 20})).await;
    assert_ok_with_notice("search_agents", &page);
    assert_eq!(structured(&page)["agents"].as_array().map(Vec::len), Some(20));
    assert!(text(&page).contains("Showing 21–40 of 45. For more, call again with offset=40."));

    let card = call(&client, "get_agent", json!({"handle": "agent-000"})).await;
    assert_ok_with_notice("get_agent", &card);
    assert_eq!(structured(&card)["agent"]["name"], "Agent 0");

    let calls = call(&client, "search_calls", json!({"kind": "seeking"})).await;
    assert_ok_with_notice("search_calls", &calls);
    assert_eq!(structured(&calls)["posts"][0]["id"], "post_1");

    let one_call = call(&client, "get_call", json!({"id": "post_2"})).await;
    assert_ok_with_notice("get_call", &one_call);

    let collabs = call(&client, "list_collaborations", json!({"handle": "agent-000"})).await;
    assert_ok_with_notice("list_collaborations", &collabs);

    let stats = call(&client, "get_stats", json!({})).await;
    assert_ok_with_notice("get_stats", &stats);
    assert_eq!(structured(&stats)["agents"], 45);

    // Invalid arguments and unknown ids are tool results with isError, never protocol errors.
    let too_many = call(&client, "search_agents", json!({"limit": 500})).await;
    assert_tool_error(&too_many, "validation_failed", Some("limit"));
    let wrong_type = call(&client, "search_agents", json!({"limit": "ten"})).await;
    assert_tool_error(&wrong_type, "validation_failed", None);
    let bad_enum = call(&client, "search_calls", json!({"kind": "selling"})).await;
    assert_tool_error(&bad_enum, "validation_failed", None);
    let missing = call(&client, "get_agent", json!({})).await;
    assert_tool_error(&missing, "validation_failed", None);
    let nobody = call(&client, "get_agent", json!({"handle": "nobody-here"})).await;
    assert_tool_error(&nobody, "not_found", None);
    let no_call = call(&client, "get_call", json!({"id": "post_999"})).await;
    assert_tool_error(&no_call, "not_found", None);

    // Resources: skill.md listed, cards and calls by template, same JSON as the tool.
    let listed = client.list_resources(None).await.expect("resources/list");
    assert_eq!(listed.resources.len(), 1);
    assert_eq!(listed.resources[0].uri, "agentdir://skill.md");
    assert_eq!(listed.resources[0].mime_type.as_deref(), Some("text/markdown"));
    let templates = client.list_resource_templates(None).await.expect("resources/templates/list");
    let uris: Vec<&str> = templates.resource_templates.iter().map(|t| t.uri_template.as_str()).collect();
    assert_eq!(uris, ["agentdir://agents/{handle}", "agentdir://calls/{id}"]);

    let skill = read(&client, "agentdir://skill.md").await;
    assert_eq!(skill, (Some("text/markdown".to_owned()), SKILL_MD.to_owned()));
    let (mime, body) = read(&client, "agentdir://agents/agent-000").await;
    assert_eq!(mime.as_deref(), Some("application/json"));
    let body: Value = serde_json::from_str(&body).expect("card JSON");
    assert_eq!(&body, structured(&card));
    let (_, body) = read(&client, "agentdir://calls/post_2").await;
    assert_eq!(&serde_json::from_str::<Value>(&body).expect("call JSON"), structured(&one_call));

    let unknown = client.read_resource(ReadResourceRequestParams::new("agentdir://agents/nobody-here")).await;
    match unknown {
        Err(ServiceError::McpError(error)) => {
            assert!([ErrorCode::RESOURCE_NOT_FOUND, ErrorCode::INVALID_PARAMS].contains(&error.code));
            assert_eq!(error.data.as_ref().map(|d| d["error"]["code"].clone()), Some(json!("not_found")));
        }
        other => panic!("expected a not-found error, got {other:?}"),
    }

    // Completion of the card template's handle.
    let completion = client
        .complete_resource_argument("agentdir://agents/{handle}", "handle", "agent-01", None)
        .await
        .expect("completion/complete");
    assert_eq!(completion.values.len(), 10);
    assert_eq!(completion.values[0], "agent-010");
    assert_eq!(completion.has_more, Some(false));
    let many = client
        .complete_resource_argument("agentdir://agents/{handle}", "handle", "agent", None)
        .await
        .expect("completion/complete");
    assert_eq!((many.values.len(), many.has_more), (20, Some(true)));

    let _ = client.cancel().await;
}

async fn read(client: &Client, uri: &str) -> (Option<String>, String) {
    let result = client
        .read_resource(ReadResourceRequestParams::new(uri))
        .await
        .unwrap_or_else(|e| panic!("{uri}: {e}"));
    match result.contents.into_iter().next() {
        Some(ResourceContents::TextResourceContents { mime_type, text, .. }) => (mime_type, text),
        other => panic!("{uri}: expected text contents, got {other:?}"),
    }
}

#[tokio::test]
async fn initialize_lifecycle() {
    exercise(ClientLifecycleMode::Initialize).await;
}

#[tokio::test]
async fn discover_lifecycle() {
    exercise(ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::V_2026_07_28] }).await;
}

/// A raw JSON-RPC POST, as a browser page or a DNS-rebinding attack would send it.
async fn post(base: &str, headers: &[(&str, &str)]) -> reqwest::StatusCode {
    let mut request = reqwest::Client::new()
        .post(format!("{base}/mcp"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25")
        .body(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    request.send().await.expect("request").status()
}

#[tokio::test]
async fn host_and_origin_are_checked() {
    let base = start(1).await;
    let port = base.rsplit(':').next().expect("port");
    assert_eq!(post(&base, &[]).await, 200, "no Origin header is fine");
    assert_eq!(post(&base, &[("origin", &base)]).await, 200, "own origin");
    let localhost = format!("localhost:{port}");
    assert_eq!(post(&base, &[("host", &localhost)]).await, 200, "loopback host");

    assert_eq!(post(&base, &[("host", "evil.example")]).await, 403, "foreign Host");
    for origin in ["http://evil.example", "null", &format!("https://127.0.0.1:{port}"), "http://127.0.0.1:1"]
    {
        assert_eq!(post(&base, &[("origin", origin)]).await, 403, "Origin {origin}");
    }
}

/// One JSON-RPC message POSTed with no prior handshake; returns the status and the JSON body.
async fn raw_call(base: &str, body: &str) -> (reqwest::StatusCode, Option<String>, Value) {
    let response = reqwest::Client::new()
        .post(format!("{base}/mcp"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(body.to_owned())
        .send()
        .await
        .expect("request");
    let status = response.status();
    let session = response.headers().get("mcp-session-id").and_then(|v| v.to_str().ok()).map(str::to_owned);
    (status, session, response.json().await.expect("JSON body"))
}

#[tokio::test]
async fn stateless_call_without_initialize() {
    let base = start(3).await;
    let (status, session, body) = raw_call(
        &base,
        r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"get_agent","arguments":{"handle":"agent-002"}}}"#,
    )
    .await;
    assert_eq!((status.as_u16(), session), (200, None));
    let result = &body["result"];
    assert_eq!(result["structuredContent"]["agent"]["handle"], "agent-002");
    assert_eq!(result["isError"], false);

    // rmcp cannot parse `arguments` that is not an object; it is still an isError result.
    let (_, _, body) = raw_call(
        &base,
        r#"{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"get_agent","arguments":["agent-002"]}}"#,
    )
    .await;
    let result = &body["result"];
    assert_eq!(result["isError"], true, "{body}");
    assert!(result.get("resultType").is_none(), "legacy peers get no resultType");
    let text = result["content"][0]["text"].as_str().expect("text");
    let envelope: Value = serde_json::from_str(text).expect("envelope");
    assert_eq!(envelope["error"]["code"], "validation_failed");
}
