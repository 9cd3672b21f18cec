//! Seeding a fresh server with the judged set the way agents and operators would: each agent
//! registers and publishes its offerings through REST; the operator verifies mailboxes and
//! records owner claims with `agentdir admin`; link proofs are fetched by the server from a
//! loopback site that serves each agent's proof page; collaborations are proposed by one side
//! and confirmed by the other. An agent with `skills` lists an A2A endpoint on the same site,
//! whose card holds those skills and the agent's proof text, so the server's own check finds it
//! live and proven and counts the skills as the agent's. Sequential, so ties between agents
//! fall the same way each run.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use agentdir_bench::send_json;
use serde_json::{Value, json};

use super::Error;
use super::judged::{Agent, JudgedSet};

/// A loopback site answering `/proof/{handle}` with that handle's proof text and
/// `/a2a/{handle}` with the A2A agent card of an agent that has skills; it lives as long as the
/// benchmark.
pub fn proof_site(set: &JudgedSet) -> Result<String, Error> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let base = format!("http://{}", listener.local_addr()?);
    let cards: HashMap<String, String> = set
        .agents
        .iter()
        .filter(|a| !a.skills.is_empty())
        .map(|a| (a.handle.clone(), agent_card(a, &endpoint_url(&base, &a.handle)).to_string()))
        .collect();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut reader = BufReader::new(&stream);
            let mut request_line = String::new();
            if reader.read_line(&mut request_line).is_err() {
                continue;
            }
            // Read the headers to the blank line so the client sees a well-behaved server.
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                line.clear();
            }
            let path = request_line.split_whitespace().nth(1).unwrap_or("");
            let card = path.strip_prefix("/a2a/").and_then(|handle| cards.get(handle));
            let (status, kind, body) = match (path.strip_prefix("/proof/"), card) {
                (Some(handle), _) => (
                    "200 OK",
                    "text/html",
                    format!("<html><body><p>agentdir-proof:{handle}</p></body></html>"),
                ),
                (None, Some(card)) => ("200 OK", "application/json", card.clone()),
                (None, None) => ("404 Not Found", "text/plain", "not found".to_owned()),
            };
            let mut out = &stream;
            let _ = write!(
                out,
                "HTTP/1.1 {status}\r\ncontent-type: {kind}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    Ok(base)
}

/// Where the site serves the A2A card of `handle`.
fn endpoint_url(site: &str, handle: &str) -> String {
    format!("{site}/a2a/{handle}")
}

/// An A2A v1.0 agent card with the agent's skills; its description holds the agent's proof
/// text, which proves the endpoint the agent's own.
fn agent_card(a: &Agent, url: &str) -> Value {
    let skills: Vec<Value> = a
        .skills
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let mut s = s.clone();
            s["id"] = json!(format!("skill-{i}"));
            s.as_object_mut().map(|o| o.entry("tags").or_insert_with(|| json!([])));
            s
        })
        .collect();
    json!({
        "name": a.profile.get("name").cloned().unwrap_or_else(|| json!(a.handle)),
        "description": format!("The agent's A2A endpoint. agentdir-proof:{}", a.handle),
        "version": "1.0.0",
        "supportedInterfaces": [{"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
        "capabilities": {},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": skills,
    })
}

/// The environment a relevance server needs beyond the benchmark limits: link proofs from the
/// loopback site, and room for every agent's proof.
pub const SERVER_ENV: &[(&str, &str)] =
    &[("AGENTDIR_LINK_FETCH_ALLOW_PRIVATE", "127.0.0.0/8"), ("AGENTDIR_RATE_LIMIT_LINKS", "100000000/h")];

/// What seeding took.
pub struct Seeded {
    pub seconds: f64,
}

fn admin(bin: &Path, data_dir: &Path, args: &[&str]) -> Result<(), Error> {
    let out = Command::new(bin)
        .arg("admin")
        .arg("--data-dir")
        .arg(data_dir)
        .args(["--actor", "relevance-bench"])
        .args(args)
        .output()?;
    if !out.status.success() {
        return Err(
            format!("agentdir admin {args:?}: {}", String::from_utf8_lossy(&out.stderr).trim()).into()
        );
    }
    Ok(())
}

/// Registers every agent of `set` on the server at `base` (data dir `data_dir`) and seeds its
/// evidence; waits until searches see all of it.
pub async fn seed(
    http: &reqwest::Client,
    base: &str,
    bin: &Path,
    data_dir: &Path,
    set: &JudgedSet,
    site: &str,
) -> Result<Seeded, Error> {
    let start = Instant::now();
    let mut keys = HashMap::new();
    for a in &set.agents {
        let mut body = a.profile.clone();
        body["mailbox"] = json!(format!("{}@example.org", a.handle));
        body["accept_rules"] = json!(true);
        if !a.skills.is_empty() {
            body["endpoints"] = json!([{"kind": "a2a", "url": endpoint_url(site, &a.handle)}]);
        }
        let r = send_json(http.post(format!("{base}/api/agents")), body)
            .await
            .map_err(|e| format!("registering {}: {e}", a.handle))?;
        let key = r["api_key"].as_str().ok_or("no api_key")?.to_owned();
        if !a.offerings.is_empty() {
            send_json(
                http.put(format!("{base}/api/me/offerings")).bearer_auth(&key),
                json!({"offerings": a.offerings}),
            )
            .await
            .map_err(|e| format!("offerings of {}: {e}", a.handle))?;
        }
        keys.insert(a.handle.as_str(), key);
    }
    for a in set.agents.iter().filter(|a| a.evidence.level >= 1) {
        admin(bin, data_dir, &["verify-mailbox", &a.handle])?;
        if a.evidence.level >= 2 {
            // One owner per agent: collaborations between them count as between distinct owners.
            admin(
                bin,
                data_dir,
                &["claim-owner", &a.handle, &format!("owner-of-{}@owners.example", a.handle)],
            )?;
        }
    }
    for a in set.agents.iter().filter(|a| a.evidence.link) {
        send_json(
            http.post(format!("{base}/api/me/links")).bearer_auth(&keys[a.handle.as_str()]),
            json!({"url": format!("{site}/proof/{}", a.handle)}),
        )
        .await
        .map_err(|e| format!("link proof of {}: {e}", a.handle))?;
    }
    let mut confirmed = 0u64;
    for a in &set.agents {
        // Each pair once: proposed by the first in name order, confirmed by the other.
        for partner in a.evidence.collabs.iter().filter(|p| a.handle < **p) {
            let r = send_json(
                http.post(format!("{base}/api/collabs")).bearer_auth(&keys[a.handle.as_str()]),
                json!({"partner": partner, "summary": format!("{} and {partner} delivered a project together", a.handle)}),
            )
            .await
            .map_err(|e| format!("collaboration {} and {partner}: {e}", a.handle))?;
            let id = r["collab"]["id"].as_str().ok_or("no collab id")?;
            send_json(
                http.post(format!("{base}/api/collabs/{id}/confirm")).bearer_auth(&keys[partner.as_str()]),
                json!({}),
            )
            .await
            .map_err(|e| format!("confirming {id}: {e}"))?;
            confirmed += 1;
        }
    }
    wait_until_seen(http, base, set, confirmed).await?;
    wait_for_skills(http, base, set).await?;
    Ok(Seeded { seconds: start.elapsed().as_secs_f64() })
}

async fn number(http: &reqwest::Client, url: String, field: &str) -> Result<u64, Error> {
    let v: Value = http.get(url).send().await?.json().await?;
    v[field].as_u64().ok_or_else(|| format!("no {field} in {v}").into())
}

/// The operator's commands ran in another process; the server picks their changes up from the
/// change log. Waits (bounded) until its searches and statistics show every level and
/// collaboration seeded.
async fn wait_until_seen(
    http: &reqwest::Client,
    base: &str,
    set: &JudgedSet,
    confirmed: u64,
) -> Result<(), Error> {
    let want = |level: u8| set.agents.iter().filter(|a| a.evidence.level >= level).count() as u64;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let seen = (
            number(http, format!("{base}/api/agents?min_level=1&limit=1"), "total").await?,
            number(http, format!("{base}/api/agents?min_level=2&limit=1"), "total").await?,
            number(http, format!("{base}/api/stats"), "confirmed_collaborations").await?,
        );
        if seen == (want(1), want(2), confirmed) {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(format!(
                "the server shows (verified, claimed, collaborations) = {seen:?}, seeded {:?}",
                (want(1), want(2), confirmed)
            )
            .into());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The server checks each listed endpoint as it is set and recomputes the agent's vector once
/// its skills count; waits (bounded) until every agent with skills shows them on its card from
/// a live, proven endpoint, and every public agent's vector is current.
async fn wait_for_skills(http: &reqwest::Client, base: &str, set: &JudgedSet) -> Result<(), Error> {
    let deadline = Instant::now() + Duration::from_secs(60);
    for a in set.agents.iter().filter(|a| !a.skills.is_empty()) {
        loop {
            let card: Value =
                http.get(format!("{base}/api/agents/{}", a.handle)).send().await?.json().await?;
            let e = &card["agent"]["endpoints"][0];
            let shown = e["skills"].as_array().map_or(0, Vec::len);
            if e["status"] == "live" && e["proof"] == "answer" && shown == a.skills.len() {
                break;
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "{}: its endpoint shows {e}, not its {} skills",
                    a.handle,
                    a.skills.len()
                )
                .into());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    if set.agents.iter().any(|a| !a.skills.is_empty()) {
        // What a check found reaches the vectors through the change log, which a background
        // pass applies every second: let one pass by before reading their count.
        tokio::time::sleep(Duration::from_millis(1_200)).await;
    }
    loop {
        let ready: Value = http.get(format!("{base}/readyz")).send().await?.json().await?;
        let m = &ready["meaning"];
        if m["model_loaded"] != true || m["agents_with_vectors"] == m["agents"] {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(format!("vectors not current: /readyz says {m}").into());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
