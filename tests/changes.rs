//! The public change feed, `GET /api/changes`, through the real server: compaction and order,
//! paging without gaps or repeats while writes happen, deletions (deleted and hidden calls,
//! suspended agents), collaborations only once confirmed, nothing private, the 410 after the
//! retention, ETags, and a full sync equal to what the lists show — by the example mirror in
//! docs/ too.

mod common;

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use common::mirror::{self, lists};
use common::{Agent, RELAXED_LIMITS, Server};
use serde_json::{Value, json};

/// Every entry from `after` to the end, page by page.
async fn read_all(s: &Server, after: Option<&str>, limit: u32) -> (Vec<Value>, String) {
    let mut cursor = after.map(str::to_owned);
    let mut entries = Vec::new();
    loop {
        let path = match &cursor {
            Some(c) => format!("/api/changes?limit={limit}&after={c}"),
            None => format!("/api/changes?limit={limit}"),
        };
        let page = s.get(&path, None).await;
        page.expect(200);
        let changes = page.json["changes"].as_array().expect("changes").clone();
        assert!(changes.len() <= limit as usize);
        entries.extend(changes);
        cursor = Some(page.json["next"].as_str().expect("next").to_owned());
        if !page.json["has_more"].as_bool().expect("has_more") {
            return (entries, cursor.unwrap_or_default());
        }
    }
}

fn key(entry: &Value) -> (String, String) {
    (entry["kind"].as_str().unwrap().to_owned(), entry["id"].as_str().unwrap().to_owned())
}

/// The state a mirror holds after applying `entries` in order.
fn apply(mirror: &mut BTreeMap<(String, String), Value>, entries: &[Value]) {
    for e in entries {
        match e["op"].as_str() {
            Some("upsert") => {
                mirror.insert(key(e), e["data"].clone());
            }
            Some("delete") => {
                assert!(e.get("data").is_none(), "a delete carries no data: {e}");
                mirror.remove(&key(e));
            }
            other => panic!("unknown op {other:?} in {e}"),
        }
    }
}

/// Two claimed agents with different owners, so their confirmed collaboration is evidence.
async fn collaboration(s: &Server) -> (Agent, Agent, String) {
    let a = s.claimed("collab-a", "owner-a@example.org").await;
    let b = s.claimed("collab-b", "owner-b@example.org").await;
    let r =
        s.post("/api/collabs", Some(&a.key), json!({"partner": b.handle, "summary": "Built a thing"})).await;
    r.expect(201);
    (a, b, r.json["collab"]["id"].as_str().unwrap().to_owned())
}

#[tokio::test]
async fn each_entity_appears_once_at_its_latest_change_oldest_first() {
    let s = Server::start().await;
    let a = s.register("first").await;
    let b = s.register("second").await;
    let call = s.seeking(&b, "An early call").await;
    // `a` changes after everything else: it moves to the end of the feed with its new name.
    s.patch("/api/me", Some(&a.key), json!({"name": "Renamed first"})).await.expect(200);

    let (entries, _) = read_all(&s, None, 100).await;
    let keys: Vec<(String, String)> = entries.iter().map(key).collect();
    assert_eq!(
        keys,
        vec![
            ("call".to_owned(), call.clone()),
            ("agent".to_owned(), b.handle.clone()),
            ("agent".to_owned(), a.handle.clone()),
        ],
        "{entries:#?}"
    );
    assert_eq!(entries[2]["data"]["name"], "Renamed first");
    assert_eq!(entries[2]["data"], s.get(&format!("/api/agents/{}", a.handle), None).await.json["agent"]);
    assert_eq!(entries[0]["data"]["title"], "An early call");
    for e in &entries {
        assert_eq!(e["op"], "upsert");
        assert!(e["at"].as_str().unwrap().ends_with('Z'));
        assert!(e["cursor"].is_string());
    }

    // Read-your-writes: an answered write is in the feed at once.
    let (_, next) = read_all(&s, None, 100).await;
    let reply =
        s.post(&format!("/api/posts/{call}/replies"), Some(&a.key), json!({"body": "I can help."})).await;
    reply.expect(201);
    let (after, _) = read_all(&s, Some(&next), 100).await;
    let changed: Vec<(String, String)> = after.iter().map(key).collect();
    assert!(changed.contains(&("call".to_owned(), call.clone())), "{changed:?}");
    let call_entry = after.iter().find(|e| e["id"] == call.as_str()).unwrap();
    assert_eq!(call_entry["data"]["reply_count"], 1);
    // With nothing new, the page is empty and `next` is the cursor given.
    let (_, latest) = read_all(&s, Some(&next), 100).await;
    let idle = s.get(&format!("/api/changes?after={latest}"), None).await;
    assert_eq!(idle.json["changes"], json!([]));
    assert_eq!(idle.json["next"], latest.as_str());
    assert_eq!(idle.json["has_more"], false);
}

#[tokio::test]
async fn pages_have_no_gaps_or_repeats_while_writes_happen_between_them() {
    let s = Server::start().await;
    let mut agents = Vec::new();
    for _ in 0..8 {
        agents.push(s.register("pager").await);
    }
    let mut mirror = BTreeMap::new();
    let mut cursor: Option<String> = None;
    let mut seen_cursors = Vec::new();
    let mut step = 0;
    loop {
        let path = match &cursor {
            Some(c) => format!("/api/changes?limit=3&after={c}"),
            None => "/api/changes?limit=3".to_owned(),
        };
        let page = s.get(&path, None).await;
        page.expect(200);
        let changes = page.json["changes"].as_array().unwrap().clone();
        for e in &changes {
            seen_cursors.push(e["cursor"].as_str().unwrap().to_owned());
        }
        apply(&mut mirror, &changes);
        cursor = Some(page.json["next"].as_str().unwrap().to_owned());
        // Between pages: new entities, and changes to ones already read.
        if step < 6 {
            let a = &agents[step];
            s.seeking(a, &format!("Written between pages {step}")).await;
            s.patch("/api/me", Some(&agents[0].key), json!({"tagline": format!("step {step}")}))
                .await
                .expect(200);
            if step == 3 {
                agents.push(s.register("late").await);
            }
        }
        step += 1;
        if !page.json["has_more"].as_bool().unwrap() && step > 6 {
            break;
        }
    }
    // No entry was handed out twice.
    let mut unique = seen_cursors.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), seen_cursors.len(), "a cursor repeated: {seen_cursors:?}");
    // Nothing was missed: the mirror equals the lists.
    assert_eq!(mirror, lists(&s).await);
}

#[tokio::test]
async fn deleted_hidden_and_suspended_entities_become_deletions() {
    let s = Server::start().await;
    let author = s.register("deleter").await;
    let other = s.register("bystander").await;
    let deleted = s.seeking(&author, "To be deleted").await;
    let hidden = s.seeking(&author, "To be hidden").await;
    let of_suspended = s.seeking(&other, "By an agent to be suspended").await;
    let (_, start) = read_all(&s, None, 100).await;

    s.delete(&format!("/api/posts/{deleted}"), Some(&author.key)).await.expect(200);
    s.admin_ok(&["hide-call", "--category", "spam", &hidden]);
    s.admin_ok(&["suspend", "--category", "abuse", &other.handle]);
    let (entries, mid) = read_all(&s, Some(&start), 100).await;
    let ops: HashMap<(String, String), String> =
        entries.iter().map(|e| (key(e), e["op"].as_str().unwrap().to_owned())).collect();
    for (kind, id) in
        [("call", &deleted), ("call", &hidden), ("call", &of_suspended), ("agent", &other.handle)]
    {
        assert_eq!(
            ops.get(&(kind.to_owned(), id.clone())).map(String::as_str),
            Some("delete"),
            "{kind} {id}: {ops:?}"
        );
    }
    // The author of the deleted and hidden calls is still there (its card changed).
    assert_eq!(ops.get(&("agent".to_owned(), author.handle.clone())).map(String::as_str), Some("upsert"));

    // Restoring brings them back as upserts.
    s.admin_ok(&["restore-call", &hidden]);
    s.admin_ok(&["restore", &other.handle]);
    let (entries, _) = read_all(&s, Some(&mid), 100).await;
    let ops: HashMap<(String, String), String> =
        entries.iter().map(|e| (key(e), e["op"].as_str().unwrap().to_owned())).collect();
    for (kind, id) in [("call", &hidden), ("call", &of_suspended), ("agent", &other.handle)] {
        assert_eq!(
            ops.get(&(kind.to_owned(), id.clone())).map(String::as_str),
            Some("upsert"),
            "{kind} {id}"
        );
    }
    let (all, _) = read_all(&s, None, 100).await;
    let mut mirror = BTreeMap::new();
    apply(&mut mirror, &all);
    assert_eq!(mirror, lists(&s).await);
}

#[tokio::test]
async fn collaborations_appear_only_once_confirmed_and_nothing_private_ever() {
    let s = Server::start().await;
    let (a, b, proposed) = collaboration(&s).await;
    let declined = {
        let r = s
            .post("/api/collabs", Some(&b.key), json!({"partner": a.handle, "summary": "Declined work"}))
            .await;
        r.expect(201);
        r.json["collab"]["id"].as_str().unwrap().to_owned()
    };
    s.post_empty(&format!("/api/collabs/{declined}/decline"), Some(&a.key)).await.expect(200);
    // A contact request between them, accepted, with both mailboxes shown to the parties.
    let offering = s.offering(&b).await;
    let request = s.request(&a, &b, &offering).await;
    s.post_empty(&format!("/api/requests/{request}/accept"), Some(&b.key)).await.expect(200);

    let (entries, before) = read_all(&s, None, 100).await;
    let text = serde_json::to_string(&entries).unwrap();
    for private in [proposed.as_str(), &declined, &request, &a.mailbox, &b.mailbox, "owner-a@example.org"] {
        assert!(!text.contains(private), "{private} is in the feed");
    }
    assert!(entries.iter().all(|e| ["agent", "call", "collab"].contains(&e["kind"].as_str().unwrap())));

    s.post_empty(&format!("/api/collabs/{proposed}/confirm"), Some(&b.key)).await.expect(200);
    let (entries, after) = read_all(&s, Some(&before), 100).await;
    let collab = entries.iter().find(|e| e["kind"] == "collab").expect("the confirmed collaboration");
    assert_eq!((collab["id"].as_str(), collab["op"].as_str()), (Some(proposed.as_str()), Some("upsert")));
    assert_eq!(collab["data"]["status"], "confirmed");
    assert_eq!(collab["data"]["request_id"], Value::Null);
    // Its evidence changed both cards.
    for agent in [&a, &b] {
        let e = entries.iter().find(|e| e["id"] == agent.handle.as_str()).expect("the card changed");
        assert_eq!(e["data"], s.get(&format!("/api/agents/{}", agent.handle), None).await.json["agent"]);
    }
    // A suspended party takes it out of GET /api/collabs, and so out of the feed.
    s.admin_ok(&["suspend", "--category", "abuse", &a.handle]);
    let (entries, _) = read_all(&s, Some(&after), 100).await;
    let collab = entries.iter().find(|e| e["kind"] == "collab").expect("the collaboration left the list");
    assert_eq!(collab["op"], "delete");
    // A mailbox made public is on the card, and so in the feed.
    s.patch("/api/me", Some(&b.key), json!({"contact_public": true})).await.expect(200);
    let (entries, _) = read_all(&s, None, 100).await;
    let card = entries.iter().find(|e| e["id"] == b.handle.as_str()).unwrap();
    assert_eq!(card["data"]["contact"]["email"], b.mailbox.as_str());
}

/// The feed's answer to `cursor` once it is refused, or after 20 s (the server's upkeep forgets
/// old deletions at its next pass, not at once).
#[cfg(feature = "test-clock")]
async fn once_refused(s: &Server, cursor: &str) -> common::Resp {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let r = s.get(&format!("/api/changes?after={cursor}"), None).await;
        if r.status == 410 || Instant::now() > deadline {
            return r;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// On the moved clock of the `test-clock` feature: the retention passes without waiting.
#[cfg(feature = "test-clock")]
#[tokio::test]
async fn a_cursor_older_than_the_remembered_deletions_is_410() {
    let mut env = RELAXED_LIMITS.to_vec();
    env.push(("AGENTDIR_CHANGES_RETENTION", "1h"));
    let s = Server::start_with(&env).await;
    let a = s.register("retention").await;
    let kept = s.seeking(&a, "Kept").await;
    let gone = s.seeking(&a, "Gone").await;
    let (_, old) = read_all(&s, None, 100).await;
    s.delete(&format!("/api/posts/{gone}"), Some(&a.key)).await.expect(200);
    let (deleted, _) = read_all(&s, Some(&old), 100).await;
    assert!(deleted.iter().any(|e| e["id"] == gone.as_str() && e["op"] == "delete"));

    // Past the retention the deletion is forgotten, and a cursor from before it is refused
    // (polled: the test waits for the server's next upkeep pass, not for time to pass).
    s.clock_ahead(Duration::from_secs(2 * 3_600));
    let expired = once_refused(&s, &old).await;
    expired.expect_error(410, "cursor_expired");
    assert_eq!(expired.json["error"]["field"], "after");
    // From the beginning everything still public is there, and the deletion is not; read a
    // page of one at a time, so the cursors stand before the forgotten deletion: a reader that
    // started after it was forgotten missed nothing, and reaches the end.
    let (all, _) = read_all(&s, None, 1).await;
    assert!(all.iter().any(|e| e["id"] == kept.as_str()));
    assert!(!all.iter().any(|e| e["id"] == gone.as_str()));
    let mut mirror = BTreeMap::new();
    apply(&mut mirror, &all);
    assert_eq!(mirror, lists(&s).await);

    // Such a cursor, held while another deletion is forgotten, is refused in its turn.
    let first = s.get("/api/changes?limit=1", None).await;
    let inside = first.json["next"].as_str().expect("next").to_owned();
    assert_eq!(inside.split('_').count(), 3, "a cursor before the forgotten deletion says so: {inside}");
    let second = s.seeking(&a, "Gone too").await;
    s.delete(&format!("/api/posts/{second}"), Some(&a.key)).await.expect(200);
    s.get(&format!("/api/changes?after={inside}"), None).await.expect(200);
    s.clock_ahead(Duration::from_secs(2 * 3_600));
    let expired = once_refused(&s, &inside).await;
    expired.expect_error(410, "cursor_expired");
    let (again, _) = read_all(&s, None, 1).await;
    let mut mirror = BTreeMap::new();
    apply(&mut mirror, &again);
    assert_eq!(mirror, lists(&s).await);

    // A deletion made before a reading began, forgotten while it reads, cannot have been missed
    // by it (the reader never saw what it was about): the reading goes on to the end.
    let before = s.seeking(&a, "Deleted before the reading").await;
    s.delete(&format!("/api/posts/{before}"), Some(&a.key)).await.expect(200);
    let reading = s.get("/api/changes?limit=1", None).await.json["next"].as_str().expect("next").to_owned();
    s.clock_ahead(Duration::from_secs(2 * 3_600));
    let deadline = Instant::now() + Duration::from_secs(20);
    while read_all(&s, None, 100).await.0.iter().any(|e| e["id"] == before.as_str()) {
        assert!(Instant::now() < deadline, "the deletion was never forgotten");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let (rest, _) = read_all(&s, Some(&reading), 1).await;
    let mut mirror = BTreeMap::new();
    apply(&mut mirror, &again[..1]);
    apply(&mut mirror, &rest);
    assert_eq!(mirror, lists(&s).await);
}

#[tokio::test]
async fn bad_cursors_and_limits_are_400_and_pages_carry_etags() {
    let s = Server::start().await;
    let a = s.register("etag").await;
    s.seeking(&a, "Tagged").await;
    let (_, next) = read_all(&s, None, 100).await;
    let epoch = next.split_once('_').expect("epoch_seq").0;
    // A seq past the published pattern's twelve digits (one past the database's signed seq read
    // the feed from its start), and the epoch as the server does not write it.
    let (too_long, upper) = (format!("{epoch}_1zzzzzzzzzzzz"), format!("{}_1", epoch.to_uppercase()));
    for bad in [
        "nope",
        "abc_1_2_3",
        "abc_1_",
        "",
        &format!("{next}000000000000"),
        "zzzzzzzzzzzzzz_1",
        &too_long,
        &upper,
    ] {
        let r = s.get(&format!("/api/changes?after={bad}"), None).await;
        r.expect_error(400, "validation_failed");
        assert_eq!(r.json["error"]["field"], "after", "{bad}: {}", r.text);
    }
    // Of the shape, another feed's (another epoch):
    // not this feed's, so read it from the beginning.
    for other in ["0_0", "zzzzzzzz_1"] {
        let r = s.get(&format!("/api/changes?after={other}"), None).await;
        r.expect_error(410, "cursor_expired");
        assert_eq!(r.json["error"]["field"], "after", "{other}: {}", r.text);
    }
    // A cursor of this feed past the newest seq handed out was never issued: a client holding
    // one would silently miss what comes next.
    let ahead = format!("{next}0");
    let r = s.get(&format!("/api/changes?after={ahead}"), None).await;
    r.expect_error(400, "validation_failed");
    assert_eq!(r.json["error"]["field"], "after", "{}", r.text);
    // Nor does anything that happens later make it one: the seqs it would skip were handed out
    // since, to other cursors.
    let r = s.get(&format!("/api/changes?after={next}"), None).await;
    r.expect(200);
    assert_eq!(r.json["changes"], Value::Array(vec![]));
    assert_eq!(r.json["next"], next.as_str());
    // A seq written with leading zeros (the pattern admits them) is the same position: with
    // nothing new it comes back as it was given.
    let padded = format!("{epoch}_00000{}", &next[epoch.len() + 1..]);
    let r = s.get(&format!("/api/changes?after={padded}"), None).await;
    r.expect(200);
    assert_eq!(r.json["changes"], Value::Array(vec![]));
    assert_eq!(r.json["next"], padded.as_str());
    for bad in ["0", "1001", "-1", "many"] {
        let r = s.get(&format!("/api/changes?limit={bad}"), None).await;
        r.expect_error(400, "validation_failed");
        assert_eq!(r.json["error"]["field"], "limit");
    }
    s.get("/api/changes?limit=1000", None).await.expect(200);

    let first = s.get("/api/changes", None).await;
    first.expect(200);
    assert_eq!(first.header("cache-control"), Some("no-cache"));
    let etag = first.header("etag").expect("an ETag").to_owned();
    let again = s.send(s.http.get(s.url("/api/changes")).header("if-none-match", &etag)).await;
    assert_eq!(again.status, 304);
    assert!(again.text.is_empty());
    assert_eq!(again.header("etag"), Some(etag.as_str()));
    // A change makes the same request a new page with a new tag.
    s.seeking(&a, "Another").await;
    let changed = s.send(s.http.get(s.url("/api/changes")).header("if-none-match", &etag)).await;
    changed.expect(200);
    assert_ne!(changed.header("etag"), Some(etag.as_str()));
}

#[tokio::test]
async fn the_example_mirror_keeps_a_copy_equal_to_the_lists() {
    let s = Server::start().await;
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("mirror.json");
    let run_mirror = || mirror::run(&s.base, &copy);
    let a = s.register("mirrored").await;
    let b = s.register("mirrored").await;
    let c1 = s.seeking(&a, "First mirrored call").await;
    assert_eq!(run_mirror(), lists(&s).await);

    // Changes, a deletion and a suspension since: the next run catches up from its cursor.
    s.seeking(&b, "Second mirrored call").await;
    s.delete(&format!("/api/posts/{c1}"), Some(&a.key)).await.expect(200);
    s.admin_ok(&["suspend", "--category", "abuse", &b.handle]);
    s.patch("/api/me", Some(&a.key), json!({"tagline": "Mirrored and changed"})).await.expect(200);
    assert_eq!(run_mirror(), lists(&s).await);
}
