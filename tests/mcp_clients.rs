//! MCP searches are counted per client as REST's are: the address comes from the HTTP request
//! each tool call arrived in (the socket peer, or `X-Forwarded-For` behind a trusted proxy), and
//! its network's fair share of the model is the one its REST searches spend, so one client's
//! searches never spend another network's share.

mod common;

use std::collections::HashMap;

use common::Server;
use rmcp::{
    RoleClient, ServiceExt,
    model::{CallToolRequestParams, ClientConfig},
    service::RunningService,
    transport::{StreamableHttpClientTransport, streamable_http_client::StreamableHttpClientTransportConfig},
};
use serde_json::{Value, json};

type Client = RunningService<RoleClient, ClientConfig>;

/// A client whose requests arrive through the trusted proxy on behalf of `address`.
async fn client_at(s: &Server, address: &str) -> Client {
    let headers = HashMap::from([(
        "x-forwarded-for".parse().expect("header name"),
        address.parse().expect("header value"),
    )]);
    let config =
        StreamableHttpClientTransportConfig::with_uri(format!("{}/mcp", s.base)).custom_headers(headers);
    ClientConfig::default()
        .serve(StreamableHttpClientTransport::from_config(config))
        .await
        .expect("MCP client connects")
}

/// How the search matched its need, as the structured result and its text say it. Each need is
/// new (`take`), so none is remembered from an earlier search and every one asks its network's
/// share for a turn.
async fn matched_by(client: &Client, take: usize) -> String {
    let need = format!("subtitles for a podcast{}", " and captions".repeat(take));
    let arguments = json!({"q": need});
    let Value::Object(arguments) = arguments else { unreachable!() };
    let result = client
        .call_tool(CallToolRequestParams::new("search_agents").with_arguments(arguments))
        .await
        .expect("search_agents answers");
    let found = result.structured_content.expect("structured content");
    let m = found["matched_by"].as_str().expect("matched_by").to_owned();
    let text = result.content.first().and_then(|c| c.as_text()).map(|t| t.text.clone()).unwrap_or_default();
    assert!(text.contains(&format!("matched_by: {m}")), "{text}");
    m
}

/// What a need of `matched_by` costs as the server counts it.
fn cost(take: usize) -> u32 {
    let need = format!("subtitles for a podcast{}", " and captions".repeat(take));
    let path = agentdir_meaning::built_in_weights().expect("the model is built in");
    let model = agentdir_meaning::Model::load(path).expect("the model loads");
    model.need_tokens(&need).expect("tokens").cost()
}

#[tokio::test]
async fn one_network_s_mcp_clients_share_one_share_another_network_has_its_own() {
    // A share of the first three needs' tokens that does not refill.
    let burst: u32 = (0..3).map(cost).sum();
    let s = Server::start_with(&[
        ("AGENTDIR_TRUSTED_PROXIES", "127.0.0.1"),
        ("AGENTDIR_SHARE_TOKENS_PER_SECOND", "0"),
        ("AGENTDIR_SHARE_BURST_TOKENS", &burst.to_string()),
    ])
    .await;
    let a = s.register("subs").await;
    s.patch(
        "/api/me",
        Some(&a.key),
        json!({"name": "Caption Studio", "description_en": "Subtitles and captions for podcasts and videos."}),
    )
    .await
    .expect(200);
    let first = client_at(&s, "203.0.113.1").await;
    let neighbour = client_at(&s, "203.0.113.2").await;
    let elsewhere = client_at(&s, "198.51.100.1").await;
    for take in 0..3 {
        let client = if take % 2 == 0 { &first } else { &neighbour };
        assert_eq!(matched_by(client, take).await, "combined", "need {take}: within the /24's share");
    }
    // The /24's share is spent by its two addresses together: no need of it is read by the model.
    for (client, take) in [(&first, 3), (&neighbour, 4)] {
        let m = matched_by(client, take).await;
        assert!(["combined_quick", "words_busy"].contains(&m.as_str()), "need {take}: {m}");
    }
    // Another network's client has its own share.
    assert_eq!(matched_by(&elsewhere, 5).await, "combined");
    for client in [first, neighbour, elsewhere] {
        let _ = client.cancel().await;
    }
}
