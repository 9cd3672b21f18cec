//! The web's conventions on a real server: CORS on the public reads only (a preflight answered,
//! the headers a page needs exposed), ETags and `304` on lists, the keys, statements and the
//! documents, `WWW-Authenticate` on a `401`, and compressed bodies with their own tags.

mod common;

use common::Server;
use reqwest::Method;

const ORIGIN: &str = "https://verifier.example.net";

/// The public reads a page of another origin may make.
fn public_reads(handle: &str) -> Vec<String> {
    vec![
        "/api".into(),
        "/api/stats".into(),
        "/api/agents?limit=5".into(),
        format!("/api/agents/{handle}"),
        format!("/api/agents/{handle}/statement"),
        "/api/posts".into(),
        "/api/collabs".into(),
        "/api/changes".into(),
        "/.well-known/jwks.json".into(),
        "/openapi.json".into(),
        "/skill.md".into(),
        "/.well-known/ai-catalog.json".into(),
        "/mcp/server-card".into(),
    ]
}

#[tokio::test]
async fn public_reads_allow_any_origin_and_keyed_routes_none() {
    let s = Server::start().await;
    let a = s.register("cors").await;
    for path in public_reads(&a.handle) {
        let r = s.send(s.http.get(s.url(&path)).header("Origin", ORIGIN)).await;
        r.expect(200);
        assert_eq!(r.header("access-control-allow-origin"), Some("*"), "{path}");
        let exposed = r.header("access-control-expose-headers").unwrap_or_default().to_ascii_lowercase();
        for name in ["etag", "retry-after", "x-agentdir-seq"] {
            assert!(exposed.contains(name), "{path} does not expose {name}: {exposed}");
        }
        let preflight = s
            .send(
                s.http
                    .request(Method::OPTIONS, s.url(&path))
                    .header("Origin", ORIGIN)
                    .header("Access-Control-Request-Method", "GET")
                    .header("Access-Control-Request-Headers", "if-none-match"),
            )
            .await;
        assert_eq!(preflight.status, 204, "preflight of {path}: {}", preflight.text);
        assert_eq!(preflight.header("access-control-allow-origin"), Some("*"));
        assert!(preflight.header("access-control-allow-methods").is_some_and(|m| m.contains("GET")));
        assert!(
            preflight
                .header("access-control-allow-headers")
                .is_some_and(|h| h.to_ascii_lowercase().contains("if-none-match"))
        );
    }
    // A key is never read by another origin's page: no CORS on keyed routes, nor on writes.
    let me = s.send(s.http.get(s.url("/api/me")).bearer_auth(&a.key).header("Origin", ORIGIN)).await;
    me.expect(200);
    assert_eq!(me.header("access-control-allow-origin"), None);
    let preflight = s
        .send(
            s.http
                .request(Method::OPTIONS, s.url("/api/me"))
                .header("Origin", ORIGIN)
                .header("Access-Control-Request-Method", "GET"),
        )
        .await;
    assert_ne!(preflight.status, 204);
    assert_eq!(preflight.header("access-control-allow-origin"), None);
    let write = s
        .send(
            s.http
                .post(s.url("/api/agents"))
                .header("Origin", ORIGIN)
                .json(&serde_json::json!({"handle": "x"})),
        )
        .await;
    assert_eq!(write.header("access-control-allow-origin"), None);
    // /mcp refuses a foreign Origin and says nothing to a browser.
    let mcp = s
        .send(
            s.http
                .post(s.url("/mcp"))
                .header("Origin", ORIGIN)
                .header("Accept", "application/json, text/event-stream")
                .json(&serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})),
        )
        .await;
    assert_eq!(mcp.header("access-control-allow-origin"), None, "{}", mcp.text);
}

#[tokio::test]
async fn lists_keys_statements_and_documents_carry_etags() {
    let s = Server::start().await;
    let a = s.register("tagged").await;
    for path in public_reads(&a.handle) {
        let r = s.get(&path, None).await;
        r.expect(200);
        let etag = r.header("etag").unwrap_or_else(|| panic!("{path} has no ETag")).to_owned();
        assert!(etag.starts_with('"') && etag.ends_with('"'), "{path}: a strong tag, not {etag}");
        let again = s.send(s.http.get(s.url(&path)).header("If-None-Match", &etag)).await;
        assert_eq!(again.status, 304, "{path} with its own tag");
        assert!(again.text.is_empty());
        assert_eq!(again.header("etag"), Some(etag.as_str()));
        let head = s.send(s.http.head(s.url(&path))).await;
        assert_eq!((head.status, head.header("etag")), (200, Some(etag.as_str())), "HEAD {path}");
        let stale = s.send(s.http.get(s.url(&path)).header("If-None-Match", "\"stale\"")).await;
        assert_eq!(stale.status, 200, "{path} with another tag");
    }
    // A list's tag follows what it holds.
    let before = s.get("/api/agents?limit=5", None).await.header("etag").map(str::to_owned);
    s.register("tagged-more").await;
    let after = s.get("/api/agents?limit=5", None).await.header("etag").map(str::to_owned);
    assert_ne!(before, after, "a new agent changed the list but not its tag");
}

#[tokio::test]
async fn a_401_says_how_to_authenticate() {
    let s = Server::start().await;
    let none = s.get("/api/me", None).await;
    none.expect_error(401, "unauthorized");
    assert_eq!(none.header("www-authenticate"), Some("Bearer realm=\"agentdir\""));
    let wrong = s.get("/api/me", Some("cq_not-a-key")).await;
    wrong.expect_error(401, "unauthorized");
    assert_eq!(wrong.header("www-authenticate"), Some("Bearer realm=\"agentdir\", error=\"invalid_token\""));
}

fn decode(encoding: &str, body: &[u8]) -> Vec<u8> {
    use std::io::Read;
    let mut out = Vec::new();
    match encoding {
        "gzip" => {
            flate2::read::GzDecoder::new(body).read_to_end(&mut out).expect("gzip");
        }
        "br" => {
            brotli::Decompressor::new(body, 4096).read_to_end(&mut out).expect("br");
        }
        "zstd" => out = zstd::stream::decode_all(body).expect("zstd"),
        other => panic!("unknown encoding {other}"),
    }
    out
}

#[tokio::test]
async fn bodies_over_a_kib_come_compressed_each_encoding_with_its_own_tag() {
    let s = Server::start().await;
    let a = s.register("squeezed").await;
    let plain = s.http.get(s.url("/openapi.json")).send().await.expect("openapi");
    let identity_tag = plain.headers()["etag"].to_str().expect("etag").to_owned();
    let identity = plain.bytes().await.expect("body");
    let mut tags = vec![identity_tag.clone()];
    for encoding in ["gzip", "br", "zstd"] {
        let res =
            s.http.get(s.url("/openapi.json")).header("Accept-Encoding", encoding).send().await.expect("get");
        assert_eq!(res.status(), 200);
        let h = res.headers().clone();
        assert_eq!(h.get("content-encoding").and_then(|v| v.to_str().ok()), Some(encoding));
        assert!(
            h.get_all("vary")
                .iter()
                .any(|v| v.to_str().is_ok_and(|v| v.to_ascii_lowercase().contains("accept-encoding"))),
            "{encoding}: no Vary: Accept-Encoding"
        );
        let tag = h["etag"].to_str().expect("etag").to_owned();
        assert_eq!(tag, format!("{}-{encoding}\"", identity_tag.trim_end_matches('"')));
        let body = res.bytes().await.expect("body");
        assert!(body.len() * 4 < identity.len(), "{encoding}: {} of {} bytes", body.len(), identity.len());
        assert_eq!(decode(encoding, &body), identity, "{encoding} decodes to the identity body");
        tags.push(tag.clone());
        // The copy in this encoding is current; a client that now takes another encoding gets it.
        let held = s
            .send(
                s.http
                    .get(s.url("/openapi.json"))
                    .header("Accept-Encoding", encoding)
                    .header("If-None-Match", &tag),
            )
            .await;
        assert_eq!(held.status, 304, "{encoding}");
        let other = if encoding == "gzip" { "br" } else { "gzip" };
        let switched = s
            .send(
                s.http
                    .get(s.url("/openapi.json"))
                    .header("Accept-Encoding", other)
                    .header("If-None-Match", &tag),
            )
            .await;
        assert_eq!(switched.status, 200, "{encoding} tag, {other} accepted");
    }
    tags.sort();
    tags.dedup();
    assert_eq!(tags.len(), 4, "one tag per representation");

    // A card page and a list are compressed the same way; a small body is sent as it is.
    for path in ["/api/agents?limit=20", "/agents", "/skill.md"] {
        let r = s.send(s.http.get(s.url(path)).header("Accept-Encoding", "br")).await;
        assert_eq!(r.header("content-encoding"), Some("br"), "{path}");
        assert!(r.header("etag").is_some_and(|t| t.ends_with("-br\"")), "{path}");
    }
    let small = s.send(s.http.get(s.url("/api/stats")).header("Accept-Encoding", "gzip")).await;
    assert!(small.text.len() < 1024);
    assert_eq!((small.status, small.header("content-encoding")), (200, None));
    // What a key reads is compressed too, per request (never kept).
    let export = s
        .send(s.http.get(s.url("/api/me/export")).bearer_auth(&a.key).header("Accept-Encoding", "gzip"))
        .await;
    assert_eq!((export.status, export.header("content-encoding")), (200, Some("gzip")));
    assert_eq!(export.header("etag"), None);
}
