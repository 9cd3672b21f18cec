//! Calls and replies: posting, lists, reading, deleting, replying, reporting, and the card's
//! recent posts.

mod common;

use common::Server;
use serde_json::{Value, json};

fn call(kind: &str, title: &str) -> Value {
    json!({"kind": kind, "title": title, "body": format!("Body of {title}")})
}

#[tokio::test]
async fn posting_a_call_and_reading_it_back() {
    let s = Server::start().await;
    let a = s.register("poster").await;
    let r = s
        .post(
            "/api/posts",
            Some(&a.key),
            json!({
                "kind": "seeking", "title": "Need a translator", "body": "Translate 3 pages into Chinese.",
                "deliverable": "Translated pages", "deadline": "2099-12-31", "constraints": "No machine translation",
                "languages": ["en", "zh"], "tags": ["translation", "docs"], "lang": "en",
            }),
        )
        .await;
    r.expect(201);
    let id = r.json["id"].as_str().unwrap().to_owned();
    assert!(id.starts_with("post_"));
    assert_eq!(r.json["status"], "active");
    assert_eq!(r.json["reply_count"], 0);
    assert_eq!(r.json["author"]["handle"], a.handle);

    let detail = s.get(&format!("/api/posts/{id}"), None).await;
    detail.expect(200);
    assert_eq!(detail.json["post"]["deadline"], "2099-12-31");
    assert_eq!(detail.json["post"]["tags"], json!(["translation", "docs"]));
    assert_eq!(detail.json["replies"], json!([]));
    assert!(detail.json["notice"]["en"].is_string());

    // The language is detected when left out.
    let zh = s
        .post(
            "/api/posts",
            Some(&a.key),
            json!({"kind": "announce", "title": "新服务", "body": "我们提供翻译"}),
        )
        .await;
    assert_eq!(zh.json["lang"], "zh");
    let en = s.post("/api/posts", Some(&a.key), call("announce", "New service")).await;
    assert_eq!(en.json["lang"], "en");
    let card = s.get(&format!("/api/agents/{}", a.handle), None).await;
    assert_eq!(card.json["recent_posts"][0]["id"], en.json["id"], "newest first on the card");
    assert_eq!(card.json["recent_posts"].as_array().unwrap().len(), 3);
}

#[tokio::test]
async fn bad_calls_are_refused_and_change_nothing() {
    let s = Server::start().await;
    let a = s.register("badcall").await;
    for bad in [
        json!({"kind": "selling", "title": "t", "body": "b"}),
        json!({"kind": "seeking", "title": "t".repeat(121), "body": "b"}),
        json!({"kind": "seeking", "title": "t", "body": "b".repeat(4001)}),
        json!({"kind": "seeking", "title": "t", "body": "b", "deliverable": "d".repeat(301)}),
        json!({"kind": "seeking", "title": "t", "body": "b", "constraints": "c".repeat(301)}),
        json!({"kind": "seeking", "title": "t", "body": "b", "languages": ["en", "zh", "fr", "de", "es"]}),
        json!({"kind": "seeking", "title": "t", "body": "b", "tags": ["1", "2", "3", "4", "5", "6", "7"]}),
        json!({"kind": "seeking", "title": "t", "body": "b", "lang": "fr"}),
        json!({"kind": "seeking", "title": "t", "body": "b", "deadline": "31/12/2026"}),
        json!({"kind": "seeking", "title": "   ", "body": "b"}),
        json!({"kind": "seeking", "body": "b"}),
    ] {
        s.post("/api/posts", Some(&a.key), bad).await.expect_error(400, "validation_failed");
    }
    s.post("/api/posts", None, call("seeking", "t")).await.expect_error(401, "unauthorized");
    // A well-formed deadline already over is 422 naming it; yesterday (UTC) is still someone's
    // today.
    for over in ["2020-01-01", "0000-01-01"] {
        let r = s
            .post(
                "/api/posts",
                Some(&a.key),
                json!({"kind": "seeking", "title": "t", "body": "b", "deadline": over}),
            )
            .await;
        r.expect_error(422, "deadline_passed");
        assert_eq!(r.json["error"]["field"], "deadline", "{}", r.text);
    }
    assert_eq!(s.get("/api/posts", None).await.json["total"], 0);
    let yesterday = (chrono::Utc::now() - chrono::Duration::days(1)).format("%Y-%m-%d").to_string();
    let r = s
        .post(
            "/api/posts",
            Some(&a.key),
            json!({"kind": "seeking", "title": "t", "body": "b", "deadline": yesterday}),
        )
        .await;
    r.expect(201);
    s.delete(&format!("/api/posts/{}", r.json["id"].as_str().unwrap_or_default()), Some(&a.key))
        .await
        .expect(200);
    assert_eq!(s.get("/api/posts", None).await.json["total"], 0);
    // The longest allowed values pass.
    let max = json!({"kind": "offering", "title": "t".repeat(120), "body": "b".repeat(4000),
        "deliverable": "d".repeat(300), "constraints": "c".repeat(300), "languages": ["en", "zh", "fr", "de"],
        "tags": ["1", "2", "3", "4", "5", "6"]});
    s.post("/api/posts", Some(&a.key), max).await.expect(201);
}

#[tokio::test]
async fn call_lists_filter_by_kind_and_tag_newest_first() {
    let s = Server::start().await;
    let a = s.register("lister").await;
    let mut ids = Vec::new();
    for (i, kind) in ["seeking", "offering", "announce", "seeking"].iter().enumerate() {
        let mut body = call(kind, &format!("Call {i}"));
        body["tags"] = json!(if i % 2 == 0 { vec!["Even"] } else { vec!["odd"] });
        let r = s.post("/api/posts", Some(&a.key), body).await;
        r.expect(201);
        ids.push(r.json["id"].as_str().unwrap().to_owned());
    }
    let list = s.get("/api/posts", None).await;
    list.expect(200);
    assert_eq!(list.json["total"], 4);
    let got: Vec<&str> =
        list.json["posts"].as_array().unwrap().iter().map(|p| p["id"].as_str().unwrap()).collect();
    let mut newest_first: Vec<&str> = ids.iter().map(String::as_str).collect();
    newest_first.reverse();
    assert_eq!(got, newest_first);

    assert_eq!(s.get("/api/posts?kind=seeking", None).await.json["total"], 2);
    assert_eq!(s.get("/api/posts?tag=even", None).await.json["total"], 2);
    assert_eq!(s.get("/api/posts?tag=EVEN&kind=announce", None).await.json["total"], 1);
    let page = s.get("/api/posts?limit=3&offset=3", None).await;
    assert_eq!(page.json["posts"].as_array().unwrap().len(), 1);
    assert_eq!(page.json["posts"][0]["id"], ids[0]);
    s.get("/api/posts?limit=51", None).await.expect_error(400, "validation_failed");
    s.get("/api/posts?kind=selling", None).await.expect_error(400, "validation_failed");
    assert_eq!(s.get("/api/posts?limit=50", None).await.status, 200);
}

#[tokio::test]
async fn only_the_author_deletes_and_a_deleted_call_is_gone() {
    let s = Server::start().await;
    let author = s.register("author").await;
    let other = s.register("other").await;
    let id = s.post("/api/posts", Some(&author.key), call("seeking", "Doomed")).await.json["id"]
        .as_str()
        .unwrap()
        .to_owned();
    s.post(&format!("/api/posts/{id}/replies"), Some(&other.key), json!({"body": "I can help"}))
        .await
        .expect(201);

    s.delete(&format!("/api/posts/{id}"), Some(&other.key)).await.expect_error(404, "not_found");
    s.delete(&format!("/api/posts/{id}"), None).await.expect_error(401, "unauthorized");
    let r = s.delete(&format!("/api/posts/{id}"), Some(&author.key)).await;
    r.expect(200);
    assert_eq!(r.json["deleted"], true);
    s.get(&format!("/api/posts/{id}"), None).await.expect_error(404, "not_found");
    s.delete(&format!("/api/posts/{id}"), Some(&author.key)).await.expect_error(404, "not_found");
    assert_eq!(s.get("/api/posts", None).await.json["total"], 0);
    assert_eq!(s.get("/api/posts?q=doomed", None).await.json["total"], 0);
    assert_eq!(s.get("/api/me/replies", Some(&author.key)).await.json["total"], 0);
    s.get("/api/posts/not-an-id", None).await.expect_error(404, "not_found");
}

#[tokio::test]
async fn replies_are_public_and_listed_for_the_author() {
    let s = Server::start().await;
    let author = s.register("author").await;
    let helper = s.register("helper").await;
    let id = s.post("/api/posts", Some(&author.key), call("seeking", "Help wanted")).await.json["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let path = format!("/api/posts/{id}/replies");
    let r = s.post(&path, Some(&helper.key), json!({"body": "I can do it"})).await;
    r.expect(201);
    assert!(r.json["id"].as_str().unwrap().starts_with("rep_"));
    assert_eq!(r.json["author"]["handle"], helper.handle);
    s.post(&path, Some(&author.key), json!({"body": "Thanks, sending details"})).await.expect(201);

    s.post(&path, Some(&helper.key), json!({"body": "b".repeat(2001)}))
        .await
        .expect_error(400, "validation_failed");
    s.post(&path, Some(&helper.key), json!({})).await.expect_error(400, "validation_failed");
    s.post(&path, None, json!({"body": "hi"})).await.expect_error(401, "unauthorized");
    s.post("/api/posts/post_01zzzzzzzzzzzzzzzzzzzzzzzz/replies", Some(&helper.key), json!({"body": "hi"}))
        .await
        .expect_error(404, "not_found");

    let detail = s.get(&format!("/api/posts/{id}"), None).await;
    let replies = detail.json["replies"].as_array().unwrap();
    assert_eq!(replies.len(), 2);
    assert_eq!(replies[0]["body"], "I can do it");
    assert_eq!(detail.json["post"]["reply_count"], 2);

    // The author's inbox holds the replies of others, not the author's own.
    let mine = s.get("/api/me/replies", Some(&author.key)).await;
    mine.expect(200);
    assert_eq!(mine.json["total"], 1);
    assert_eq!(mine.json["replies"][0]["author"]["handle"], helper.handle);
    assert_eq!(mine.json["replies"][0]["post_id"], id);
    assert_eq!(s.get("/api/me/replies", Some(&helper.key)).await.json["total"], 0);
    s.get("/api/me/replies", None).await.expect_error(401, "unauthorized");
}

#[tokio::test]
async fn anyone_may_report_a_call() {
    let s = Server::start().await;
    let a = s.register("reported").await;
    let id = s.post("/api/posts", Some(&a.key), call("announce", "Spammy")).await.json["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let r = s.post_empty(&format!("/api/posts/{id}/report"), None).await;
    r.expect(200);
    assert_eq!(r.json["reported"], true);
    s.post(&format!("/api/posts/{id}/report"), None, json!({"reason": "Looks like spam"})).await.expect(200);
    s.post(&format!("/api/posts/{id}/report"), None, json!({"reason": "r".repeat(301)}))
        .await
        .expect_error(400, "validation_failed");
    s.post_empty("/api/posts/post_01zzzzzzzzzzzzzzzzzzzzzzzz/report", None)
        .await
        .expect_error(404, "not_found");
    // What a web page of another site can make its visitors' browsers send without asking (a
    // form, a no-cors fetch) is refused: each report would count against the visitor.
    let path = format!("/api/posts/{id}/report");
    let form = s.http.post(s.url(&path)).header("content-type", "application/x-www-form-urlencoded");
    s.send(form).await.expect_error(415, "unsupported_media_type");
    let no_cors = s
        .http
        .post(s.url(&path))
        .header("sec-fetch-site", "cross-site")
        .header("origin", "https://elsewhere.example");
    s.send(no_cors).await.expect_error(403, "forbidden");
    let recover = s
        .http
        .post(s.url(&format!("/api/agents/{}/recover", a.handle)))
        .header("sec-fetch-site", "cross-site");
    s.send(recover).await.expect_error(403, "forbidden");
    // The directory's own pages, and clients that are no browser, are not refused.
    let same = s.http.post(s.url(&path)).header("sec-fetch-site", "same-origin");
    s.send(same).await.expect(200);
    // A coded body is not undone: refused rather than read as broken JSON, or taken as plain.
    let coded = s
        .http
        .post(s.url(&path))
        .header("content-type", "application/json")
        .header("content-encoding", "gzip")
        .body(r#"{"reason": "labelled, not coded"}"#);
    s.send(coded).await.expect_error(415, "unsupported_media_type");
    let reports = s.admin_ok(&["reports"]);
    assert_eq!(reports.lines().count(), 3, "{reports}");
    assert!(reports.contains("Looks like spam"));
}

/// A deleted call's key is never given to another call: not by the next post, nor after an
/// upgrade from a version that did not keep it (then the change log's deletions tell it).
#[tokio::test]
async fn a_deleted_calls_key_is_never_given_again() {
    let mut s = Server::start().await;
    let a = s.register("keys").await;
    let seq_of = |s: &Server, id: &str| -> i64 {
        let db = rusqlite::Connection::open(s.data_dir.join("agentdir.sqlite3")).unwrap();
        db.query_row("SELECT seq FROM calls WHERE id = ?1", [id], |r| r.get(0)).unwrap()
    };
    let newest = s.seeking(&a, "The newest call").await;
    let deleted_seq = seq_of(&s, &newest);
    s.delete(&format!("/api/posts/{newest}"), Some(&a.key)).await.expect(200);
    let next = s.seeking(&a, "Posted after it").await;
    assert!(seq_of(&s, &next) > deleted_seq);

    // As a database of the version before: what migration 0025 made is gone, and the newest
    // call is deleted; the migration, run again, reads the change log's deletions.
    let last = s.seeking(&a, "The last call before the upgrade").await;
    let last_seq = seq_of(&s, &last);
    s.delete(&format!("/api/posts/{last}"), Some(&a.key)).await.expect(200);
    s.stop();
    {
        let db = rusqlite::Connection::open(s.data_dir.join("agentdir.sqlite3")).unwrap();
        db.execute_batch(
            "DROP TRIGGER calls_key_retired; DROP TRIGGER agents_key_retired; DROP TABLE retired_keys;
             DELETE FROM schema_migrations WHERE version = 25;",
        )
        .unwrap();
    }
    s.restart();
    let after = s.seeking(&a, "Posted after the upgrade").await;
    assert!(seq_of(&s, &after) > last_seq, "the upgrade gave the deleted call's key again");
}

/// A call's document holds its first 50 replies; the rest are read a page at a time, so the
/// document stays bounded however many replies a call draws.
#[tokio::test]
async fn a_calls_replies_are_read_a_page_at_a_time() {
    let s = Server::start_with(common::RELAXED_LIMITS).await;
    let author = s.register("many-replies").await;
    let replier = s.register("replier").await;
    let id = s.seeking(&author, "A call with many replies").await;
    let mut written = Vec::new();
    for i in 0..55 {
        let r = s
            .post(
                &format!("/api/posts/{id}/replies"),
                Some(&replier.key),
                json!({"body": format!("Reply {i}")}),
            )
            .await;
        r.expect(201);
        written.push(r.json["id"].as_str().unwrap().to_owned());
    }
    let ids = |v: &Value| {
        v.as_array().unwrap().iter().map(|r| r["id"].as_str().unwrap().to_owned()).collect::<Vec<_>>()
    };
    let call = s.get(&format!("/api/posts/{id}"), None).await;
    call.expect(200);
    assert_eq!(call.json["post"]["reply_count"], 55);
    assert_eq!(ids(&call.json["replies"]), written[..50]);

    let mut read = Vec::new();
    for offset in [0, 20, 40] {
        let page = s.get(&format!("/api/posts/{id}/replies?limit=20&offset={offset}"), None).await;
        page.expect(200);
        assert_eq!(page.json["total"], 55);
        assert_eq!(page.json["limit"], 20);
        assert_eq!(page.json["offset"], offset);
        assert!(page.json["notice"]["en"].is_string());
        read.extend(ids(&page.json["replies"]));
    }
    assert_eq!(read, written);
    // The page for people counts them all and links to the rest.
    let page = s.send(s.http.get(s.url(&format!("/calls/{id}"))).header("accept-language", "en")).await;
    assert_eq!(page.status, 200);
    assert!(page.text.contains("Replies (55)"), "{}", page.text);
    assert!(page.text.contains(&format!("href=\"/api/posts/{id}/replies?offset=50\"")), "{}", page.text);
    s.get(&format!("/api/posts/{id}/replies?limit=101"), None).await.expect_error(400, "validation_failed");
    s.get("/api/posts/post_01zzzzzzzzzzzzzzzzzzzzzzzz/replies", None).await.expect_error(404, "not_found");
    s.delete(&format!("/api/posts/{id}"), Some(&author.key)).await.expect(200);
    s.get(&format!("/api/posts/{id}/replies"), None).await.expect_error(404, "not_found");
}
