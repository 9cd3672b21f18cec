//! Restarting the server on the same data dir keeps everything: agents and keys, offerings,
//! calls and replies, requests in their states, collaborations, and search.

mod common;

use common::Server;
use serde_json::json;

#[tokio::test]
async fn everything_survives_a_restart() {
    let mut s = Server::start().await;
    let a = s.claimed("keep-a", "a@owners.example").await;
    let b = s.claimed("keep-b", "b@owners.example").await;
    let offering = s.offering(&b).await;
    s.patch(
        "/api/me",
        Some(&a.key),
        json!({"description_zh": "我们提供中文翻译和本地化服务", "contact_policy": {"weekly_cap": 7}}),
    )
    .await
    .expect(200);
    let call = s
        .post(
            "/api/posts",
            Some(&a.key),
            json!({"kind": "seeking", "title": "Persistent call", "body": "Survives restarts"}),
        )
        .await;
    let call_id = call.json["id"].as_str().unwrap().to_owned();
    s.post(&format!("/api/posts/{call_id}/replies"), Some(&b.key), json!({"body": "Still here"}))
        .await
        .expect(201);
    let req = s.request(&a, &b, &offering).await;
    s.post_empty(&format!("/api/requests/{req}/accept"), Some(&b.key)).await.expect(200);
    let collab = s
        .post(
            "/api/collabs",
            Some(&a.key),
            json!({"partner": b.handle, "summary": "Done", "request_id": req}),
        )
        .await;
    let collab_id = collab.json["collab"]["id"].as_str().unwrap().to_owned();
    s.post_empty(&format!("/api/collabs/{collab_id}/confirm"), Some(&b.key)).await.expect(200);

    let card_before = s.get(&format!("/api/agents/{}", a.handle), None).await.json;
    let stats_before = s.get("/api/stats", None).await.json;

    s.restart();

    // Keys still work (verified afresh: the in-memory cache is gone).
    s.get("/api/me", Some(&a.key)).await.expect(200);
    let card_after = s.get(&format!("/api/agents/{}", a.handle), None).await.json;
    assert_eq!(card_before, card_after);
    assert_eq!(card_after["agent"]["trust"]["level"], 2);
    assert_eq!(card_after["evidence"]["confirmed_collaborations"], 1);
    assert_eq!(stats_before, s.get("/api/stats", None).await.json);
    let detail = s.get(&format!("/api/posts/{call_id}"), None).await;
    assert_eq!(detail.json["replies"][0]["body"], "Still here");
    let r = s.get(&format!("/api/requests/{req}"), Some(&a.key)).await;
    assert_eq!(r.json["request"]["status"], "accepted");
    assert_eq!(r.json["request"]["mailboxes"]["recipient"], b.mailbox);
    assert_eq!(s.get("/api/collabs", None).await.json["collabs"][0]["id"], collab_id);
    // Search still finds what was indexed before the restart.
    assert_eq!(s.get("/api/agents?q=翻译", None).await.json["agents"][0]["handle"], a.handle);
    assert_eq!(s.get("/api/posts?q=persistent", None).await.json["posts"][0]["id"], call_id);
    // Writes still work, and state written before the restart still constrains them.
    let a_offering = s.offering(&a).await;
    s.request(&b, &a, &a_offering).await;
    let again =
        json!({"purpose": "p", "deliverable": "d", "compensation": "none", "offering_id": a_offering});
    s.post(&format!("/api/agents/{}/requests", a.handle), Some(&b.key), again)
        .await
        .expect_error(409, "already_pending");
}

/// A backup restored over the database while the search index stays (or the last writes lost
/// with the machine) leaves the index ahead of the database: the server rebuilds it at start,
/// so the writes after the restore are found and the lost ones are not.
#[tokio::test]
async fn an_index_ahead_of_a_restored_database_is_rebuilt() {
    // By words alone: the vectors are read from the database, the words from the index.
    let mut s = Server::start_with(&[("AGENTDIR_SEARCH_MODE", "words")]).await;
    s.register("kept").await;
    let backup = s.data_dir.join("restore-me.sqlite3");
    s.admin_ok(&["backup", backup.to_str().expect("utf-8 path")]);
    let lost = register_about(&s, "lost", "walrus").await;
    s.register("lost-too").await;
    s.stop();
    for side in ["agentdir.sqlite3-wal", "agentdir.sqlite3-shm"] {
        let _ = std::fs::remove_file(s.data_dir.join(side));
    }
    std::fs::copy(&backup, s.data_dir.join("agentdir.sqlite3")).expect("restore the backup");
    s.restart();
    let new = register_about(&s, "new", "penguin").await;
    let found = |r: &common::Resp| -> Vec<String> {
        r.json["agents"]
            .as_array()
            .expect("agents")
            .iter()
            .map(|a| a["handle"].as_str().unwrap().to_owned())
            .collect()
    };
    let penguins = s.get("/api/agents?q=penguin", None).await;
    assert_eq!(found(&penguins), vec![new.clone()], "{}", penguins.text);
    let walruses = s.get("/api/agents?q=walrus", None).await;
    assert!(
        !found(&walruses).contains(&new),
        "an old entry of the index names the new agent: {}",
        walruses.text
    );
    assert!(!found(&walruses).contains(&lost), "{}", walruses.text);
}

/// A backup restored over the database beside an index built from another copy of it (here,
/// an older backup restored into a fresh data dir and written to): the index's seqs name other
/// entries, and it is not ahead of the database. Its epoch tells, and the server rebuilds it.
#[tokio::test]
async fn an_index_of_another_copy_of_the_database_is_rebuilt() {
    let words = [("AGENTDIR_SEARCH_MODE", "words")];
    let s = Server::start_with(&words).await;
    s.register("kept").await;
    let backups = tempfile::tempdir().expect("temp dir");
    let older = backups.path().join("older.sqlite3");
    s.admin_ok(&["backup", older.to_str().expect("utf-8 path")]);
    let mut tides = Vec::new();
    for i in 0..5 {
        tides.push(register_about(&s, &format!("tide{i}"), "tidepool").await);
    }
    let newer = backups.path().join("newer.sqlite3");
    s.admin_ok(&["backup", newer.to_str().expect("utf-8 path")]);

    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::copy(&older, dir.path().join("agentdir.sqlite3")).expect("restore the older backup");
    std::fs::copy(
        backups.path().join("older.sqlite3.signing-keys.json"),
        dir.path().join("signing-keys.json"),
    )
    .expect("its keys");
    let mut restored = Server::start_in(dir.path(), &words).await;
    // Fewer writes than the newer backup holds since the older: the index stays behind it.
    register_about(&restored, "moon", "moonbeam").await;
    restored.stop();
    for side in ["agentdir.sqlite3-wal", "agentdir.sqlite3-shm"] {
        let _ = std::fs::remove_file(dir.path().join(side));
    }
    std::fs::copy(&newer, dir.path().join("agentdir.sqlite3"))
        .expect("restore the newer backup in its place");
    restored.restart();

    let handles = |r: &common::Resp| -> Vec<String> {
        let mut h: Vec<String> = r.json["agents"]
            .as_array()
            .expect("agents")
            .iter()
            .map(|a| a["handle"].as_str().unwrap().to_owned())
            .collect();
        h.sort();
        h
    };
    let moons = restored.get("/api/agents?q=moonbeam", None).await;
    assert_eq!(handles(&moons), Vec::<String>::new(), "{}", moons.text);
    let found = restored.get("/api/agents?q=tidepool", None).await;
    tides.sort();
    assert_eq!(handles(&found), tides, "{}", found.text);
}

/// Registers an agent whose profile is about `word`; its handle.
async fn register_about(s: &Server, prefix: &str, word: &str) -> String {
    let handle = format!("{prefix}-{word}-{}", std::process::id());
    let r = s
        .post(
            "/api/agents",
            None,
            json!({"handle": handle, "name": "n", "owner": "o", "mailbox": format!("{handle}@example.org"),
                   "accept_rules": true, "tagline": format!("A {word} agent"),
                   "description_en": format!("Works with {word} all day."), "capabilities": [word]}),
        )
        .await;
    r.expect(201);
    handle
}
