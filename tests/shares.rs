//! Fair shares of the model through a real server (docs/search.md, "Fair shares"): a flood of
//! distinct needs from other networks does not take meaning from a client asking one need at a
//! time; one network's many addresses share one share; a long need costs its tokens; every
//! answer says how it was matched (REST and MCP), and the shares never answer 5xx.
//!
//! Clients reach the server through a trusted proxy (127.0.0.1) that names them in
//! `X-Forwarded-For`, as a server behind a load balancer sees them. Where a test spends a share
//! it runs with a share that does not refill (`AGENTDIR_SHARE_TOKENS_PER_SECOND=0`), so what it
//! asserts is what the rule says, whatever the speed of the machine.

mod common;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use common::{Resp, Server};
use serde_json::{Value, json};

/// What a need costs as the server counts it: the model's tokens, read to its own limit.
fn cost(need: &str) -> u32 {
    let path = agentdir_meaning::built_in_weights().expect("the model is built in");
    let model = agentdir_meaning::Model::load(path).expect("the model loads");
    model.need_tokens(need).expect("tokens").cost()
}

async fn search_from(s: &Server, client: &str, need: &str) -> Resp {
    s.send(
        s.http
            .get(s.url("/api/agents"))
            .query(&[("q", need), ("explain", "true")])
            .header("x-forwarded-for", client),
    )
    .await
}

/// The answer's top-level `matched_by`, checked against each hit's explanation.
#[track_caller]
fn matched_by(r: &Resp) -> String {
    r.expect(200);
    let m = r.json["matched_by"].as_str().unwrap_or_else(|| panic!("no matched_by in {}", r.text)).to_owned();
    for hit in r.json["agents"].as_array().expect("agents").iter().filter(|h| !h["ranking"].is_null()) {
        assert_eq!(hit["ranking"]["signals"]["matched_by"], m.as_str(), "explain in step with the list");
    }
    m
}

async fn trades(s: &Server) {
    for (prefix, profile) in [
        (
            "subs",
            json!({"name": "Caption Studio", "description_en": "We transcribe podcasts and videos and deliver Chinese subtitle files."}),
        ),
        (
            "ocr",
            json!({"name": "Ledger Reader", "description_en": "OCR for scanned receipts and invoices, exported to Excel."}),
        ),
        (
            "law",
            json!({"name": "合同顾问", "description_en": "-", "description_zh": "为中小企业审阅合同，标注法律风险。"}),
        ),
    ] {
        let a = s.register(prefix).await;
        s.patch("/api/me", Some(&a.key), profile).await.expect(200);
    }
}

/// Needs no earlier search asked: none is remembered, each asks for a turn at the model.
fn distinct(i: usize) -> String {
    const TOPICS: [&str; 6] = [
        "podcast subtitles",
        "scanned invoices to a spreadsheet",
        "contract review",
        "tax returns",
        "logo design",
        "video captions",
    ];
    format!("someone for {} number {i}", TOPICS[i % TOPICS.len()])
}

#[tokio::test]
async fn a_flood_from_other_networks_does_not_take_meaning_from_a_client_asking_one_need_at_a_time() {
    let s = Arc::new(Server::start_with(&[("AGENTDIR_TRUSTED_PROXIES", "127.0.0.1")]).await);
    trades(&s).await;
    let stop = Arc::new(AtomicBool::new(false));
    let mut flood = Vec::new();
    for connection in 0..8usize {
        let (s, stop) = (s.clone(), stop.clone());
        flood.push(tokio::spawn(async move {
            let mut statuses: HashMap<u16, usize> = HashMap::new();
            let mut matched: HashMap<String, usize> = HashMap::new();
            let mut i = 0;
            while !stop.load(Ordering::Relaxed) {
                // Each need from a network of its own (a /24 the client never shares).
                let client = format!("10.{}.{}.7", connection, i % 250);
                let r = search_from(&s, &client, &distinct(10_000 + connection * 1_000 + i)).await;
                *statuses.entry(r.status).or_default() += 1;
                if r.status == 200 {
                    *matched.entry(matched_by(&r)).or_default() += 1;
                }
                i += 1;
            }
            (statuses, matched)
        }));
    }
    // Let the flood fill the model's places before the client asks.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut client_matched = Vec::new();
    for i in 0..12 {
        let r = search_from(&s, "192.0.2.10", &distinct(i)).await;
        client_matched.push(matched_by(&r));
    }
    stop.store(true, Ordering::Relaxed);
    let mut statuses: HashMap<u16, usize> = HashMap::new();
    let mut matched: HashMap<String, usize> = HashMap::new();
    for f in flood {
        let (st, m) = f.await.expect("flood task");
        for (k, v) in st {
            *statuses.entry(k).or_default() += v;
        }
        for (k, v) in m {
            *matched.entry(k).or_default() += v;
        }
    }
    assert!(client_matched.iter().all(|m| m == "combined"), "the client's needs: {client_matched:?}");
    let flooded: usize = statuses.values().sum();
    assert!(flooded >= 8, "the flood sent {flooded} searches");
    assert_eq!(statuses.get(&200).copied(), Some(flooded), "every flood search answered 200: {statuses:?}");
    let known = ["combined", "combined_quick", "words_busy"];
    assert!(matched.keys().all(|m| known.contains(&m.as_str())), "{matched:?}");
}

#[tokio::test]
async fn one_network_s_addresses_share_one_share() {
    let needs = ["podcast subtitles in Chinese", "captions for my videos", "transcribe an interview"];
    let burst: u32 = needs.iter().map(|n| cost(n)).sum();
    let burst = burst.to_string();
    let s = Server::start_with(&[
        ("AGENTDIR_TRUSTED_PROXIES", "127.0.0.1"),
        ("AGENTDIR_SHARE_TOKENS_PER_SECOND", "0"),
        ("AGENTDIR_SHARE_BURST_TOKENS", &burst),
    ])
    .await;
    trades(&s).await;
    // Three addresses of one /24 spend its share exactly.
    for (i, need) in needs.iter().enumerate() {
        let r = search_from(&s, &format!("203.0.113.{}", i + 1), need).await;
        assert_eq!(matched_by(&r), "combined", "{need}: within the network's share");
    }
    // Another address of that /24 is past the share: the quick encoder reads its need (its
    // words are those of a need the model read, which the encoder learns in the background).
    let deadline = Instant::now() + Duration::from_secs(60);
    let over = loop {
        let r = search_from(&s, "203.0.113.200", "Chinese subtitles for a podcast").await;
        let m = matched_by(&r);
        if m != "words_busy" || Instant::now() > deadline {
            break (m, r);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(over.0, "combined_quick", "past the network's share: {}", over.1.text);
    let top = over.1.json["agents"][0]["handle"].as_str().unwrap_or("");
    assert!(top.starts_with("subs-"), "the quick encoder still finds the subtitler: {top}");
    // An address of another network has its own share.
    let r = search_from(&s, "198.51.100.7", "someone to check a contract").await;
    assert_eq!(matched_by(&r), "combined");
    // A need asked lately is remembered: the spent network gets the model's vector of it.
    let r = search_from(&s, "203.0.113.99", needs[0]).await;
    assert_eq!(matched_by(&r), "combined");
}

#[tokio::test]
async fn a_long_need_costs_its_tokens_read_to_the_model_s_limit() {
    // Two to four sentences, then more: read to the model's own limit (512 tokens), past the
    // 1,500 characters a profile is cut at.
    let situation = "We run a small online shop that sells handmade ceramics to customers in Europe and \
        Asia. Every product page, the shipping policy and the care instructions need to be \
        translated into Chinese and Japanese, keeping the tone friendly and the sizes exact. ";
    let long_a = format!("{}Please also check the checkout texts.", situation.repeat(8));
    let long_b = format!("{}And the newsletter sign-up too.", situation.repeat(8));
    assert!(long_a.chars().count() > 1_500);
    let (a, b) = (cost(&long_a), cost(&long_b));
    assert!(a > 400 && b > 400, "read past 1,500 characters: {a} and {b} tokens");
    let short = ["translate my shop", "Chinese translation", "Japanese translation", "ceramics shop pages"];
    let shorts: u32 = short.iter().map(|n| cost(n)).sum();
    // A share that holds one of the long needs, and all of the short ones many times over.
    let burst = a + b - 1;
    assert!(shorts * 10 < burst);
    let s = Server::start_with(&[
        ("AGENTDIR_TRUSTED_PROXIES", "127.0.0.1"),
        ("AGENTDIR_SHARE_TOKENS_PER_SECOND", "0"),
        ("AGENTDIR_SHARE_BURST_TOKENS", &burst.to_string()),
    ])
    .await;
    trades(&s).await;
    assert_eq!(matched_by(&search_from(&s, "203.0.113.1", &long_a).await), "combined");
    let second = matched_by(&search_from(&s, "203.0.113.1", &long_b).await);
    assert!(
        ["combined_quick", "words_busy"].contains(&second.as_str()),
        "two long needs spend the share: {second}"
    );
    // Short needs of another network, as many tokens in all as the long one left, are each read
    // by the model.
    for need in short {
        assert_eq!(matched_by(&search_from(&s, "198.51.100.1", need).await), "combined", "{need}");
    }
}

#[tokio::test]
async fn every_answer_says_how_it_was_matched_on_rest_and_mcp() {
    let s = Server::start_with(&[
        ("AGENTDIR_SHARE_TOKENS_PER_SECOND", "0"),
        ("AGENTDIR_SHARE_BURST_TOKENS", "0"),
    ])
    .await;
    trades(&s).await;
    // No `q`: a listing.
    let r = s.get("/api/agents", None).await;
    r.expect(200);
    assert_eq!(r.json["matched_by"], "recency");
    // A share of nothing: no need is read by the model, and the quick encoder knows no token
    // yet (no need was read): words alone, and the answer says so.
    let r = s.get("/api/agents?q=podcast%20subtitles", None).await;
    assert_eq!(matched_by(&r), "words_busy");
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                      "params": {"name": "search_agents", "arguments": {"q": "podcast subtitles"}}});
    let answer = s
        .send(
            s.http
                .post(s.url("/mcp"))
                .header("content-type", "application/json")
                .header("accept", "application/json, text/event-stream")
                .body(call.to_string()),
        )
        .await;
    answer.expect(200);
    let result = mcp_result(&answer);
    assert_eq!(result["structuredContent"]["matched_by"], "words_busy", "{result}");
    let text = result["content"][0]["text"].as_str().unwrap_or("");
    assert!(text.contains("matched_by: words_busy"), "{text}");
}

/// The JSON-RPC result of an MCP answer, whether sent as JSON or as one server-sent event.
fn mcp_result(r: &Resp) -> Value {
    let body: Value = if r.json.is_null() {
        let data = r.text.lines().find_map(|l| l.strip_prefix("data:")).expect("an event");
        serde_json::from_str(data.trim()).expect("JSON-RPC in the event")
    } else {
        r.json.clone()
    };
    body["result"].clone()
}

#[tokio::test]
async fn long_needs_sent_back_to_back_from_two_networks_leave_a_bystander_its_meaning() {
    let s = Arc::new(Server::start_with(&[("AGENTDIR_TRUSTED_PROXIES", "127.0.0.1")]).await);
    trades(&s).await;
    let situation = "Our team sells handmade furniture online to customers in Europe and Asia, and every \
        product page, the shipping and return policy and the care instructions must be translated \
        into Chinese, Japanese and Korean with the measurements kept exact. ";
    let stop = Arc::new(AtomicBool::new(false));
    let mut attack = Vec::new();
    for network in 0..2usize {
        let (s, stop, situation) = (s.clone(), stop.clone(), situation.to_owned());
        attack.push(tokio::spawn(async move {
            let mut read = HashMap::<String, usize>::new();
            let mut i = 0;
            while !stop.load(Ordering::Relaxed) {
                // Each long need new (nothing remembered), past the 1,500 characters a profile
                // is cut at.
                let need = format!("{}Request {i} of network {network}.", situation.repeat(10));
                let r = search_from(&s, &format!("198.18.{network}.9"), &need).await;
                assert!(r.status < 500, "{}", r.text);
                *read.entry(matched_by(&r)).or_default() += 1;
                i += 1;
            }
            read
        }));
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut bystander = Vec::new();
    for i in 0..20 {
        bystander.push(matched_by(&search_from(&s, "192.0.2.77", &distinct(500 + i)).await));
    }
    stop.store(true, Ordering::Relaxed);
    let mut attackers = HashMap::<String, usize>::new();
    for a in attack {
        for (k, v) in a.await.expect("attack task") {
            *attackers.entry(k).or_default() += v;
        }
    }
    let by_model = bystander.iter().filter(|m| *m == "combined").count();
    assert!(by_model >= 18, "the bystander's needs read by the model: {by_model} of 20 ({bystander:?})");
    // The attack ran while the bystander asked (its needs answered, none 5xx: checked above).
    let attack_total: usize = attackers.values().sum();
    assert!(attack_total >= 2, "the attack sent {attack_total} needs");
}

#[tokio::test]
async fn the_search_page_spends_the_same_share_as_the_api_and_says_when_it_matched_by_words_alone() {
    // No service of `agentdir_meaning::SERVICE_NAMES` in it: their Chinese names would teach the
    // quick encoder the tokens of `other`.
    let spent = "someone to look over agreements for small firms";
    let other = "合同审阅";
    assert!(cost(other) <= cost(spent));
    let s = Server::start_with(&[
        ("AGENTDIR_TRUSTED_PROXIES", "127.0.0.1"),
        ("AGENTDIR_SHARE_TOKENS_PER_SECOND", "0"),
        ("AGENTDIR_SHARE_BURST_TOKENS", &cost(spent).to_string()),
    ])
    .await;
    trades(&s).await;
    let page = |client: &'static str| {
        s.send(s.http.get(s.url("/agents")).query(&[("q", other)]).header("x-forwarded-for", client))
    };
    // The API spends the network's whole share.
    assert_eq!(matched_by(&search_from(&s, "203.0.113.1", spent).await), "combined");
    // The page, from another address of that network, finds it spent: words alone, and it says so
    // (the quick encoder knows none of this need's words).
    let busy = page("203.0.113.2").await;
    busy.expect(200);
    assert!(busy.text.contains("id=\"words-busy\""), "{}", busy.text);
    // From another network the model reads it, and the page has no such note.
    let read = page("198.51.100.3").await;
    read.expect(200);
    assert!(!read.text.contains("words-busy"), "{}", read.text);
    assert!(read.text.contains("law-"), "the contract adviser is found by meaning: {}", read.text);
}
