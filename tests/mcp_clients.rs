//! MCP searches are counted per client address, as REST's are: the address comes from the HTTP
//! request each tool call arrived in (the socket peer, or `X-Forwarded-For` behind a trusted
//! proxy), so one client's searches never take another client's place in the budget for
//! embedding queries.

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

/// How the search found its first result (`explain`): `combined` with a query embedding,
/// `words_busy` when the budget had no place for it. Each need is new (`take`), so none is
/// remembered from an earlier search and every one asks the budget for a place; each holds
/// only words of the profile, so words alone find it too.
async fn matched_by(client: &Client, take: usize) -> String {
    let need = format!("subtitles for a podcast{}", " and captions".repeat(take));
    let arguments = json!({"q": need, "explain": true});
    let Value::Object(arguments) = arguments else { unreachable!() };
    let result = client
        .call_tool(CallToolRequestParams::new("search_agents").with_arguments(arguments))
        .await
        .expect("search_agents answers");
    let found = result.structured_content.expect("structured content");
    found["agents"][0]["ranking"]["signals"]["matched_by"].as_str().expect("an explained hit").to_owned()
}

#[tokio::test]
async fn two_addresses_search_with_separate_budgets_one_address_shares_its_own() {
    let s = Server::start_with(&[("AGENTDIR_TRUSTED_PROXIES", "127.0.0.1")]).await;
    let a = s.register("subs").await;
    s.patch(
        "/api/me",
        Some(&a.key),
        json!({"name": "Caption Studio", "description_en": "Subtitles and captions for podcasts and videos."}),
    )
    .await
    .expect(200);
    let first = client_at(&s, "203.0.113.1").await;
    let second = client_at(&s, "203.0.113.2").await;
    let first_again = client_at(&s, "203.0.113.1").await;
    // A place for each address: two at once from two addresses are both embedded. (A server
    // on one core has one place in all.)
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cores >= 2 {
        for i in 0..5 {
            let (one, other) = tokio::join!(matched_by(&first, 2 * i), matched_by(&second, 2 * i + 1));
            assert_eq!((one.as_str(), other.as_str()), ("combined", "combined"));
        }
    }
    // One address has one place: searches it sends at once take turns or fall back to words.
    let mut busy = 0;
    for i in 10..20 {
        let (one, other) = tokio::join!(matched_by(&first, 2 * i), matched_by(&first_again, 2 * i + 1));
        busy += [one, other].iter().filter(|m| *m == "words_busy").count();
    }
    assert!(busy > 0, "searches at once from one address never met its budget");
    for client in [first, second, first_again] {
        let _ = client.cancel().await;
    }
}
