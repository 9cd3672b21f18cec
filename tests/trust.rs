//! Trust end to end: mailbox verification and owner claim through `agentdir inbound-mail` (the
//! way an MTA pipes a message to it), and link proofs fetched from a local web server.

mod common;

use axum::Router;
use axum::response::Redirect;
use axum::routing::get;
use common::mail::{AUTHSERV, MAIL_DOMAIN, deliver, dkim_pass, message, rand_id, server};
use common::{Agent, RELAXED_LIMITS, Server};
use serde_json::{Value, json};
use std::time::Duration;

async fn level(s: &Server, a: &Agent) -> Value {
    s.get(&format!("/api/agents/{}", a.handle), None).await.json["agent"]["trust"]["level"].clone()
}

#[tokio::test]
async fn a_verified_mailbox_lets_the_agent_send_contact_requests() {
    let s = server().await;
    let a = s.register("mailer").await;
    let to = s.verified("recipient").await;
    let offering = s.offering(&to).await;
    let ask = json!({"offering_id": offering, "purpose": "p", "deliverable": "d", "compensation": "none"});
    let ask_path = format!("/api/agents/{}/requests", to.handle);
    s.post(&ask_path, Some(&a.key), ask.clone()).await.expect_error(403, "trust_too_low");

    let r = s.post_empty("/api/me/verify", Some(&a.key)).await;
    r.expect(200);
    let i = &r.json;
    assert_eq!(i["send_to"], format!("verify@{MAIL_DOMAIN}"));
    assert_eq!(i["from"], a.mailbox);
    assert!(i["expires_at"].as_str().unwrap().ends_with('Z'));
    assert!(i["how_en"].as_str().unwrap().contains(i["subject"].as_str().unwrap()));
    assert!(i["how_zh"].as_str().unwrap().contains(i["subject"].as_str().unwrap()));
    let subject = i["subject"].as_str().unwrap().to_owned();

    let raw = message(&a.mailbox, &subject, &dkim_pass(&a.mailbox));
    let (code, err) = deliver(&s, &raw);
    assert_eq!(code, 0, "{err}");
    // The server shows the new level at once: no stale cache anywhere.
    assert_eq!(level(&s, &a).await, 1);
    let card = s.get(&format!("/api/agents/{}", a.handle), None).await;
    assert_eq!(card.json["agent"]["verified"], true);
    assert!(card.json["agent"]["verified_at"].is_string());
    let listed = s.get("/api/agents?verified=true&min_level=1", None).await;
    assert!(listed.text.contains(&a.handle), "search follows the level: {}", listed.text);
    s.post(&ask_path, Some(&a.key), ask).await.expect(201);

    // The code is single-use: replaying the same message verifies nothing.
    let (code, err) = deliver(&s, &raw);
    assert_ne!(code, 0);
    assert!(!err.trim().is_empty() && err.trim().lines().count() == 1, "one-line reason: {err}");
}

/// A suspended agent changes nothing by mail either: a code asked for before the suspension
/// verifies nothing while it lasts, and still does once the agent is restored.
#[tokio::test]
async fn a_suspended_agents_mailbox_is_not_verified_by_mail() {
    let s = server().await;
    let a = s.register("sus-mail").await;
    let r = s.post_empty("/api/me/verify", Some(&a.key)).await;
    r.expect(200);
    let subject = r.json["subject"].as_str().unwrap().to_owned();
    s.admin_ok(&["suspend", "--category", "spam", &a.handle]);
    let raw = message(&a.mailbox, &subject, &dkim_pass(&a.mailbox));
    let (code, err) = deliver(&s, &raw);
    assert_eq!(code, 65, "{err}");
    s.admin_ok(&["restore", &a.handle]);
    assert_eq!(level(&s, &a).await, 0, "verified while suspended");
    let (code, err) = deliver(&s, &raw);
    assert_eq!(code, 0, "{err}");
    assert_eq!(level(&s, &a).await, 1);
}

#[tokio::test]
async fn forged_or_mismatched_mail_is_rejected() {
    let s = server().await;
    let a = s.register("forged").await;
    let subject =
        s.post_empty("/api/me/verify", Some(&a.key)).await.json["subject"].as_str().unwrap().to_owned();
    let domain = a.mailbox.rsplit('@').next().unwrap().to_owned();
    let cases = [
        (
            "wrong authserv-id",
            message(&a.mailbox, &subject, &format!("mx.elsewhere.example; dkim=pass header.d={domain}")),
        ),
        ("dkim fail", message(&a.mailbox, &subject, &format!("{AUTHSERV}; dkim=fail header.d={domain}"))),
        (
            "spf fail",
            message(&a.mailbox, &subject, &format!("{AUTHSERV}; spf=fail smtp.mailfrom={}", a.mailbox)),
        ),
        (
            "dkim of another domain",
            message(&a.mailbox, &subject, &format!("{AUTHSERV}; dkim=pass header.d=evil.example")),
        ),
        ("From mismatch", message("intruder@example.org", &subject, &dkim_pass("intruder@example.org"))),
        (
            "wrong code",
            message(&a.mailbox, "agentdir verify aaaaaaaaaaaaaaaaaaaaaaaa", &dkim_pass(&a.mailbox)),
        ),
        ("no code", message(&a.mailbox, "hello", &dkim_pass(&a.mailbox))),
        ("not a message", "garbage without headers".to_owned()),
    ];
    for (what, raw) in cases {
        let (code, err) = deliver(&s, &raw);
        assert_ne!(code, 0, "{what} was accepted");
        assert_eq!(err.trim().lines().count(), 1, "{what}: {err}");
        assert_eq!(level(&s, &a).await, 0, "{what} changed the level");
    }

    // spf=pass alone is enough, when its domain is the From domain.
    let spf = message(&a.mailbox, &subject, &format!("{AUTHSERV}; spf=pass smtp.mailfrom={}", a.mailbox));
    let (code, err) = deliver(&s, &spf);
    assert_eq!(code, 0, "{err}");
    assert_eq!(level(&s, &a).await, 1);
}

/// A message with several `Authentication-Results` fields, each given as the whole field line
/// (name and colon included), as an MTA that does not strip forged ones would deliver it.
fn message_with_fields(from: &str, subject: &str, fields: &[String]) -> String {
    let mut raw = String::new();
    for field in fields {
        raw.push_str(field);
        raw.push_str("\r\n");
    }
    raw.push_str(&format!(
        "From: <{from}>\r\nTo: verify@{MAIL_DOMAIN}\r\nSubject: {subject}\r\nMessage-ID: <{}@example.org>\r\n\r\nHello\r\n",
        rand_id()
    ));
    raw
}

#[tokio::test]
async fn forged_verdicts_beside_the_genuine_one_are_refused() {
    let s = server().await;
    let a = s.register("forgery").await;
    let subject =
        s.post_empty("/api/me/verify", Some(&a.key)).await.json["subject"].as_str().unwrap().to_owned();
    let domain = a.mailbox.rsplit('@').next().unwrap().to_owned();
    let ar = |name: &str, value: String| format!("{name} {AUTHSERV}; {value}");
    let forged_dkim = ar("Authentication-Results:", format!("dkim=pass header.d={domain}"));
    let forged_spf = ar("Authentication-Results:", format!("spf=pass smtp.mailfrom={}", a.mailbox));
    let cases: Vec<(&str, Vec<String>)> = vec![
        (
            "forged dkim pass above the genuine dkim fail",
            vec![forged_dkim.clone(), ar("Authentication-Results:", format!("dkim=fail header.d={domain}"))],
        ),
        (
            "forged dkim pass below the genuine dkim none",
            vec![ar("Authentication-Results:", "dkim=none".into()), forged_dkim.clone()],
        ),
        (
            "forged dkim pass beside a genuine none",
            vec![forged_dkim.clone(), ar("Authentication-Results:", "none".into())],
        ),
        (
            "forged spf pass beside the genuine spf fail",
            vec![ar("Authentication-Results:", format!("spf=fail smtp.mailfrom={}", a.mailbox)), forged_spf],
        ),
        (
            "a pass in a field written with a space before the colon",
            vec![ar("Authentication-Results :", format!("dkim=pass header.d={domain}"))],
        ),
        (
            "a pass in a field written with a tab before the colon",
            vec![ar("Authentication-Results\t:", format!("dkim=pass header.d={domain}"))],
        ),
        (
            "dkim pass with header.i only",
            vec![ar("Authentication-Results:", format!("dkim=pass header.i=@{domain}"))],
        ),
        (
            "dkim pass with header.i of the From domain but header.d of another",
            vec![ar(
                "Authentication-Results:",
                format!("dkim=pass header.i=@{domain} header.d=other.example"),
            )],
        ),
    ];
    for (what, fields) in cases {
        let (code, err) = deliver(&s, &message_with_fields(&a.mailbox, &subject, &fields));
        assert_eq!(code, 65, "{what} was not refused as a message: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{what}: {err}");
        assert_eq!(level(&s, &a).await, 0, "{what} changed the level");
    }

    // Separate milters that agree: one stamps dkim, another spf; a third host's failure is ignored.
    let agreeing = vec![
        ar("Authentication-Results:", format!("dkim=pass header.d={domain} header.s=sel")),
        ar("Authentication-Results:", format!("spf=pass smtp.mailfrom={}", a.mailbox)),
        format!("Authentication-Results: elsewhere.example; dkim=fail header.d={domain}"),
    ];
    let (code, err) = deliver(&s, &message_with_fields(&a.mailbox, &subject, &agreeing));
    assert_eq!(code, 0, "{err}");
    assert_eq!(level(&s, &a).await, 1);
}

#[tokio::test]
async fn folded_and_encoded_subjects_and_lf_endings_parse() {
    let s = server().await;
    let a = s.register("encoded").await;
    let subject =
        s.post_empty("/api/me/verify", Some(&a.key)).await.json["subject"].as_str().unwrap().to_owned();
    let code = subject.rsplit(' ').next().unwrap().to_owned();
    // "agentdir verify <code>" as a base64 encoded-word, folded over two lines, LF only.
    let encoded = {
        use std::fmt::Write as _;
        let b64 = base64_encode(subject.as_bytes());
        let mut out = String::new();
        write!(out, "=?UTF-8?B?{b64}?=").unwrap();
        out
    };
    let raw = format!(
        "Authentication-Results: {AUTHSERV};\n\tdkim=pass (good signature) header.d={}\nFrom: <{}>\nSubject:\n {encoded}\nTo: verify@{MAIL_DOMAIN}\n\nbody\n",
        a.mailbox.rsplit('@').next().unwrap(),
        a.mailbox
    );
    let (exit, err) = deliver(&s, &raw);
    assert_eq!(exit, 0, "{err} (code {code})");
    assert_eq!(level(&s, &a).await, 1);
}

fn base64_encode(bytes: &[u8]) -> String {
    const T: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [chunk[0], *chunk.get(1).unwrap_or(&0), *chunk.get(2).unwrap_or(&0)];
        let n = (b[0] as u32) << 16 | (b[1] as u32) << 8 | b[2] as u32;
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(T[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[tokio::test]
async fn a_new_code_replaces_the_old_and_expired_codes_fail() {
    let s = server().await;
    let a = s.register("recode").await;
    let old = s.post_empty("/api/me/verify", Some(&a.key)).await.json["subject"].as_str().unwrap().to_owned();
    let new = s.post_empty("/api/me/verify", Some(&a.key)).await.json["subject"].as_str().unwrap().to_owned();
    assert_ne!(old, new);
    let (code, _) = deliver(&s, &message(&a.mailbox, &old, &dkim_pass(&a.mailbox)));
    assert_ne!(code, 0, "the replaced code still worked");

    // Age the live code past its 7 days.
    let db = rusqlite::Connection::open(s.data_dir.join("agentdir.sqlite3")).unwrap();
    db.busy_timeout(std::time::Duration::from_secs(5)).unwrap();
    db.execute("UPDATE verification_codes SET expires_at = expires_at - 8 * 86400000", []).unwrap();
    let (code, err) = deliver(&s, &message(&a.mailbox, &new, &dkim_pass(&a.mailbox)));
    assert_ne!(code, 0);
    assert!(err.contains("expired"), "{err}");
    assert_eq!(level(&s, &a).await, 0);

    // Changing the mailbox voids a pending code too.
    let subject =
        s.post_empty("/api/me/verify", Some(&a.key)).await.json["subject"].as_str().unwrap().to_owned();
    s.patch("/api/me", Some(&a.key), json!({"mailbox": "new-home@example.org"})).await.expect(200);
    let (code, _) = deliver(&s, &message(&a.mailbox, &subject, &dkim_pass(&a.mailbox)));
    assert_ne!(code, 0);
    assert_eq!(level(&s, &a).await, 0);
}

#[tokio::test]
async fn owner_claim_by_mail_reaches_level_two() {
    let s = server().await;
    let a = s.register("owned").await;
    let claim = |email: &str| json!({"owner_email": email});
    s.post("/api/me/owner-claim", Some(&a.key), claim("boss@owners.example"))
        .await
        .expect_error(409, "mailbox_not_verified");
    s.post("/api/me/owner-claim", Some(&a.key), claim("not an email"))
        .await
        .expect_error(400, "validation_failed");
    s.post("/api/me/owner-claim", None, claim("boss@owners.example")).await.expect_error(401, "unauthorized");

    let subject =
        s.post_empty("/api/me/verify", Some(&a.key)).await.json["subject"].as_str().unwrap().to_owned();
    assert_eq!(deliver(&s, &message(&a.mailbox, &subject, &dkim_pass(&a.mailbox))).0, 0);

    let r = s.post("/api/me/owner-claim", Some(&a.key), claim("boss@owners.example")).await;
    r.expect(200);
    assert_eq!(r.json["from"], "boss@owners.example");
    let subject = r.json["subject"].as_str().unwrap().to_owned();
    // The agent's own mailbox cannot answer for the owner.
    assert_ne!(deliver(&s, &message(&a.mailbox, &subject, &dkim_pass(&a.mailbox))).0, 0);
    let (code, err) =
        deliver(&s, &message("Boss@Owners.example", &subject, &dkim_pass("boss@owners.example")));
    assert_eq!(code, 0, "{err}");
    assert_eq!(level(&s, &a).await, 2);
    assert_eq!(s.get("/api/me", Some(&a.key)).await.json["owner_email"], "boss@owners.example");
    s.post("/api/me/owner-claim", Some(&a.key), claim("other@owners.example"))
        .await
        .expect_error(409, "already_claimed");
    assert!(s.get("/api/agents?min_level=2", None).await.text.contains(&a.handle));
}

/// A tiny site: a page with the proof, one without, a 404, redirects.
async fn site(handle: &str) -> String {
    site_on("127.0.0.1", handle, None).await
}

/// `site` on a loopback address of its own (another host), redirecting `/elsewhere` to
/// `elsewhere` when given.
async fn site_on(ip: &str, handle: &str, elsewhere: Option<String>) -> String {
    let proof = format!("<html><body><p>agentdir-proof:{handle}</p></body></html>");
    let elsewhere = elsewhere.unwrap_or_else(|| "/proof".into());
    let app = Router::new()
        .route("/elsewhere", get(move || async move { Redirect::temporary(&elsewhere) }))
        .route("/proof", get(move || async move { proof }))
        .route("/plain", get(|| async { "nothing to see" }))
        .route("/to-proof", get(|| async { Redirect::temporary("/proof") }))
        .route(
            "/to-metadata",
            get(|| async { Redirect::temporary("http://169.254.169.254/latest/meta-data/") }),
        );
    let listener = tokio::net::TcpListener::bind((ip, 0)).await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}")
}

/// A server whose link proofs may fetch pages on loopback (the test's own sites) and nothing else
/// that is not public.
async fn loopback_linking_server() -> Server {
    let mut env = RELAXED_LIMITS.to_vec();
    env.push(("AGENTDIR_LINK_FETCH_ALLOW_PRIVATE", "127.0.0.0/8"));
    Server::start_with(&env).await
}

#[tokio::test]
async fn link_proofs_are_fetched_recorded_and_removed() {
    let s = loopback_linking_server().await;
    let a = s.register("linker").await;
    let base = site(&a.handle).await;
    let link = |url: String| json!({"url": url});

    let r = s.post("/api/me/links", Some(&a.key), link(format!("{base}/proof"))).await;
    r.expect(200);
    let entry = &r.json["links"][0];
    assert_eq!(entry["url"], format!("{base}/proof"));
    assert_eq!(entry["host"], "127.0.0.1");
    assert_eq!(entry["status"], "verified");
    let verified = chrono_ms(entry["verified_at"].as_str().unwrap());
    let expires = chrono_ms(entry["expires_at"].as_str().unwrap());
    assert_eq!(expires - verified, 180 * 86_400_000);
    let card = s.get(&format!("/api/agents/{}", a.handle), None).await;
    assert_eq!(card.json["agent"]["trust"]["links"][0]["url"], format!("{base}/proof"));

    // Found after a redirect: recorded where it was found, one proof with the first.
    let r = s.post("/api/me/links", Some(&a.key), link(format!("{base}/to-proof"))).await;
    r.expect(200);
    assert_eq!(r.json["links"].as_array().map(|l| l.len()), Some(1), "{}", r.text);
    assert_eq!(r.json["links"][0]["url"], format!("{base}/proof"));
    s.post("/api/me/links", Some(&a.key), link(format!("{base}/plain")))
        .await
        .expect_error(422, "proof_not_found");
    s.post("/api/me/links", Some(&a.key), link(format!("{base}/missing")))
        .await
        .expect_error(422, "link_fetch_failed");
    // With only loopback let through, a redirect to the metadata address is still refused.
    s.post("/api/me/links", Some(&a.key), link(format!("{base}/to-metadata")))
        .await
        .expect_error(422, "link_fetch_failed");
    for bad in ["ftp://example.org/x", "not a url", "http://user:pw@example.org/"] {
        s.post("/api/me/links", Some(&a.key), link(bad.into())).await.expect_error(400, "validation_failed");
    }
    // The directory's own pages show what agents write: the agent's card holding the proof text
    // it wrote itself proves nothing, nor does any other page of a directory.
    let proof = format!("agentdir-proof:{}", a.handle);
    s.patch("/api/me", Some(&a.key), json!({"description_en": format!("Our proof: {proof}")}))
        .await
        .expect(200);
    for own in [format!("/agents/{}", a.handle), format!("/api/agents/{}", a.handle)] {
        let r = s.post("/api/me/links", Some(&a.key), link(s.url(&own))).await;
        r.expect_error(422, "proof_not_found");
        assert!(
            r.json["error"]["message_en"].as_str().unwrap().contains("directory of agents"),
            "{}",
            r.text
        );
        assert_eq!(r.json["error"]["field"], "url", "{}", r.text);
    }

    // Removed by the URL submitted, or by the one recorded.
    let remove = |url: String| json!({"url": url, "remove": true});
    let r = s.post("/api/me/links", Some(&a.key), remove(format!("{base}/to-proof"))).await;
    r.expect(200);
    assert_eq!(r.json["links"], json!([]), "removed by the URL submitted");
    s.post("/api/me/links", Some(&a.key), link(format!("{base}/to-proof"))).await.expect(200);
    let r = s.post("/api/me/links", Some(&a.key), remove(format!("{base}/proof"))).await;
    r.expect(200);
    assert_eq!(r.json["links"], json!([]), "removed by the URL recorded");
    s.post("/api/me/links", None, link(format!("{base}/proof"))).await.expect_error(401, "unauthorized");
}

/// A page holds an agent's proof only as a whole handle, and only when its owner put it there:
/// another handle's proof that begins with it proves nothing, nor does a page that writes back
/// the address it was asked for.
#[tokio::test]
async fn a_proof_is_a_whole_handle_put_in_the_page_not_echoed_from_the_address() {
    let s = loopback_linking_server().await;
    let a = s.register("whole").await;
    let longer = format!("<p>agentdir-proof:{}-bot</p>", a.handle);
    let handle = a.handle.clone();
    let app = Router::new()
        .route("/longer", get(move || async move { longer }))
        .route("/echo", get(|q: axum::extract::RawQuery| async move { q.0.unwrap_or_default() }))
        .route(
            "/to-echo",
            get(move || async move { Redirect::temporary(&format!("/echo?t=agentdir-proof:{handle}")) }),
        );
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let base = format!("http://{addr}");

    let r = s.post("/api/me/links", Some(&a.key), json!({"url": format!("{base}/longer")})).await;
    r.expect_error(422, "proof_not_found");
    for url in [
        format!("{base}/echo?t=agentdir-proof:{}", a.handle),
        format!("{base}/echo?t=AGENTDIR-PROOF%3A{}", a.handle),
        format!("{base}/echo?t=agentdir-proof%253A{}", a.handle),
        format!("{base}/to-echo"),
    ] {
        let r = s.post("/api/me/links", Some(&a.key), json!({"url": url})).await;
        r.expect_error(400, "validation_failed");
        assert_eq!(r.json["error"]["field"], "url", "{url}: {}", r.text);
    }
    let card = s.get(&format!("/api/agents/{}", a.handle), None).await;
    assert_eq!(card.json["agent"]["trust"]["links"], json!([]), "{}", card.text);
}

#[tokio::test]
async fn a_proof_found_after_a_redirect_proves_the_origin_it_was_found_on() {
    let s = loopback_linking_server().await;
    let a = s.register("moved").await;
    // The proof lives on 127.0.0.2; a page on 127.0.0.1 redirects there.
    let there = site_on("127.0.0.2", &a.handle, None).await;
    let here = site_on("127.0.0.1", &a.handle, Some(format!("{there}/proof"))).await;
    let endpoints = json!({"endpoints": [
        {"kind": "http", "url": format!("{here}/service")},
        {"kind": "http", "url": format!("{there}/service")},
    ]});
    s.patch("/api/me", Some(&a.key), endpoints).await.expect(200);

    let r = s.post("/api/me/links", Some(&a.key), json!({"url": format!("{here}/elsewhere")})).await;
    r.expect(200);
    assert_eq!(r.json["links"][0]["url"], format!("{there}/proof"), "{}", r.text);
    assert_eq!(r.json["links"][0]["host"], "127.0.0.2");
    let card = s.get(&format!("/api/agents/{}", a.handle), None).await;
    let agent = &card.json["agent"];
    assert_eq!(agent["trust"]["links"][0]["url"], format!("{there}/proof"));
    assert_eq!(agent["endpoints"][0]["owned"], false, "the origin that redirected proves nothing");
    assert_eq!(agent["endpoints"][1]["owned"], true, "the origin where the proof was found");

    // A proof on the first origin's own page proves it; removing the first proof by the URL
    // submitted leaves only that one.
    let r = s.post("/api/me/links", Some(&a.key), json!({"url": format!("{here}/proof")})).await;
    r.expect(200);
    let links: Vec<&str> =
        r.json["links"].as_array().unwrap().iter().filter_map(|l| l["url"].as_str()).collect();
    assert_eq!(links.len(), 2, "{links:?}");
    s.post("/api/me/links", Some(&a.key), json!({"url": format!("{here}/elsewhere"), "remove": true}))
        .await
        .expect(200);
    let card = s.get(&format!("/api/agents/{}", a.handle), None).await;
    let agent = &card.json["agent"];
    assert_eq!(agent["trust"]["links"].as_array().map(|l| l.len()), Some(1));
    assert_eq!(agent["endpoints"][0]["owned"], true);
    assert_eq!(agent["endpoints"][1]["owned"], false);
}

#[tokio::test]
async fn link_proofs_refuse_internal_targets() {
    let s = Server::start().await;
    let a = s.register("ssrf").await;
    let base = site(&a.handle).await;
    let port = base.rsplit(':').next().unwrap().to_owned();
    let ports = "only ports 80, 443, 8000, 8080 and 8443";
    // A name that does not resolve, a non-public address and a refused connection read alike:
    // whoever submits links learns nothing of the server's network.
    let unreachable = "could not be reached at a public address";
    for (target, why) in [
        // On web ports, where nothing of the test listens: the address alone is refused.
        ("http://127.0.0.1/proof".to_owned(), unreachable),
        ("http://localhost:8080/proof".into(), unreachable),
        ("http://[::1]:8000/proof".into(), unreachable),
        ("http://[::ffff:127.0.0.1]:8443/proof".into(), unreachable),
        ("http://2130706433/proof".into(), unreachable),
        ("http://0.0.0.0:80/proof".into(), unreachable),
        ("http://169.254.169.254/latest/meta-data/".into(), unreachable),
        ("http://10.0.0.1/".into(), unreachable),
        ("http://192.168.1.1/".into(), unreachable),
        ("http://100.64.0.1/".into(), unreachable),
        ("http://[fd00::1]/".into(), unreachable),
        // Web ports only, as for endpoints: the live page on its own port, and any host.
        (format!("{base}/proof"), ports),
        (format!("http://localhost:{port}/proof"), ports),
        ("http://example.org:22/".into(), ports),
        ("https://example.org:8081/proof".into(), ports),
        // A name that does not resolve reads as a non-public address does.
        ("http://no-such-host.invalid/proof".into(), unreachable),
    ] {
        let r = s.post("/api/me/links", Some(&a.key), json!({"url": target})).await;
        r.expect_error(422, "link_fetch_failed");
        assert!(r.json["error"]["message_en"].as_str().unwrap().contains(why), "{target}: {}", r.text);
        assert!(r.json["error"]["message_zh"].as_str().is_some_and(|m| !m.is_empty()));
    }
    assert_eq!(
        s.get(&format!("/api/agents/{}", a.handle), None).await.json["agent"]["trust"]["links"],
        json!([])
    );
}

#[tokio::test]
async fn link_proofs_are_rate_limited() {
    let mut env = vec![("AGENTDIR_RATE_LIMIT_LINKS", "2/h")];
    env.push(("AGENTDIR_LINK_FETCH_ALLOW_PRIVATE", "1"));
    let s = Server::start_with(&env).await;
    let a = s.register("ratelinks").await;
    let base = site(&a.handle).await;
    for _ in 0..2 {
        s.post("/api/me/links", Some(&a.key), json!({"url": format!("{base}/proof")})).await.expect(200);
    }
    let r = s.post("/api/me/links", Some(&a.key), json!({"url": format!("{base}/proof")})).await;
    r.expect_error(429, "rate_limited");
    assert!(r.header("retry-after").unwrap().parse::<u64>().unwrap() >= 1);
}

/// A fetch waits on a server the agent chose, holding one of the directory's in-flight slots:
/// one network may have two under way, the third is refused at once, and reads are not kept
/// waiting behind them.
#[tokio::test]
async fn a_network_fetches_two_link_proofs_at_once() {
    let s = loopback_linking_server().await;
    // A server that takes connections and never answers; it says when it took each.
    let tarpit = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let slow = format!("http://{}/proof", tarpit.local_addr().unwrap());
    let (took, taken) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in tarpit.incoming().flatten() {
            held.push(stream);
            if took.send(()).is_err() {
                return;
            }
        }
    });
    let mut agents = Vec::new();
    for _ in 0..3 {
        agents.push(s.register("tarpit").await);
    }
    let started = std::time::Instant::now();
    let body = json!({"url": slow});
    let (first, second, third) = tokio::join!(
        s.post("/api/me/links", Some(&agents[0].key), body.clone()),
        s.post("/api/me/links", Some(&agents[1].key), body.clone()),
        async {
            // Once both fetches are under way (the tarpit took their connections).
            let taken = tokio::task::spawn_blocking(move || {
                (0..2).all(|_| taken.recv_timeout(Duration::from_secs(10)).is_ok())
            });
            assert!(taken.await.unwrap(), "the two fetches never reached the tarpit");
            let r = s.post("/api/me/links", Some(&agents[2].key), body.clone()).await;
            (r, started.elapsed())
        }
    );
    let (third, answered_after) = third;
    third.expect_error(429, "rate_limited");
    assert!(
        third.json["error"]["message_en"].as_str().unwrap().contains("link proofs being fetched"),
        "{}",
        third.text
    );
    assert!(
        answered_after < Duration::from_secs(3),
        "refused at once, not after a fetch: {answered_after:?}"
    );
    first.expect_error(422, "link_fetch_failed");
    second.expect_error(422, "link_fetch_failed");
    // The turns are given back.
    let base = site(&agents[2].handle).await;
    s.post("/api/me/links", Some(&agents[2].key), json!({"url": format!("{base}/proof")})).await.expect(200);
}

fn chrono_ms(ts: &str) -> i64 {
    chrono::DateTime::parse_from_rfc3339(ts).unwrap().timestamp_millis()
}
