//! Key recovery through the mailbox, end to end with real raw messages piped to
//! `agentdir inbound-mail`, and every way around it: mail from another address or from an
//! unverified old mailbox after a change, without authentication, recoveries started by others
//! (which cancel and exhaust nothing), a reused token, the per-address limit (across a restart),
//! a suspended agent; the old key dies and nothing shows the mailbox. A stolen key cannot lock
//! the owner out: for 7 days after a mailbox change the mailbox verified before it recovers too,
//! and undoes the change (after a deletion, or a verification of the new mailbox and a rotated
//! key).

mod common;

use common::mail::{AUTHSERV, MAIL_DOMAIN, deliver, dkim_pass, message};
use common::{Agent, RELAXED_LIMITS, Resp, Server};
use serde_json::{Value, json};

async fn server_with(extra: &[(&'static str, &'static str)]) -> Server {
    let mut env: Vec<(&str, &str)> = RELAXED_LIMITS.to_vec();
    env.push(("AGENTDIR_MAIL_DOMAIN", MAIL_DOMAIN));
    env.push(("AGENTDIR_MAIL_AUTHSERV_ID", AUTHSERV));
    env.push(("AGENTDIR_RATE_LIMIT_RECOVERY", "1000/h"));
    env.retain(|(k, _)| !extra.iter().any(|(e, _)| e == k));
    env.extend_from_slice(extra);
    Server::start_with(&env).await
}

async fn start(s: &Server, a: &Agent) -> Resp {
    s.post_empty(&format!("/api/agents/{}/recover", a.handle), None).await
}

async fn exchange(s: &Server, token: &str) -> Resp {
    s.post("/api/recover", None, json!({"recovery_token": token})).await
}

fn fields(r: &Resp) -> (String, String) {
    (r.json["recovery_token"].as_str().unwrap().to_owned(), r.json["subject"].as_str().unwrap().to_owned())
}

#[tokio::test]
async fn a_lost_key_is_recovered_by_one_mail_and_the_old_key_dies() {
    let s = server_with(&[]).await;
    let a = s.register("lost").await;
    // The old key was in use (and so remembered by the server).
    s.get("/api/me", Some(&a.key)).await.expect(200);

    let r = start(&s, &a).await;
    r.expect(200);
    let (token, subject) = fields(&r);
    assert!(token.starts_with("rt_"));
    assert_eq!(r.json["send_to"], format!("verify@{MAIL_DOMAIN}"));
    assert!(r.json["expires_at"].as_str().unwrap().ends_with('Z'));
    for how in ["how_en", "how_zh"] {
        assert!(r.json[how].as_str().unwrap().contains(&subject), "{how}");
    }
    // Nothing shows the mailbox, and the mail code is not the token.
    assert!(!r.text.contains(&a.mailbox), "{}", r.text);
    assert!(r.json.get("from").is_none());
    assert!(!subject.contains(token.rsplit('_').next().unwrap()));

    // Before the mail: not yet.
    exchange(&s, &token).await.expect_error(409, "recovery_not_confirmed");
    let (code, err) = deliver(&s, &message(&a.mailbox, &subject, &dkim_pass(&a.mailbox)));
    assert_eq!(code, 0, "{err}");

    let done = exchange(&s, &token).await;
    done.expect(200);
    assert_eq!(done.json["handle"], a.handle.as_str());
    let new_key = done.json["api_key"].as_str().unwrap().to_owned();
    assert!(new_key.starts_with("cq_"));
    s.get("/api/me", Some(&new_key)).await.expect(200);
    // The old key stops at once, cached verification and all.
    s.get("/api/me", Some(&a.key)).await.expect_error(401, "unauthorized");
    // The token works once.
    exchange(&s, &token).await.expect_error(404, "not_found");
    // The mail proved the mailbox.
    let card = s.get(&format!("/api/agents/{}", a.handle), None).await;
    assert_eq!(card.json["agent"]["trust"]["mailbox_verified"], true);
    // Audited without secrets.
    let audit = s.admin_ok(&["audit"]);
    for action in ["recovery-started", "recovery-confirmed", "recovery-completed"] {
        assert!(audit.contains(action), "{action} missing from the audit log:\n{audit}");
    }
    for secret in [token.as_str(), new_key.as_str(), &subject, &a.mailbox] {
        assert!(!audit.contains(secret), "a secret is in the audit log");
    }
}

#[tokio::test]
async fn mail_that_does_not_prove_the_mailbox_confirms_nothing() {
    let s = server_with(&[]).await;
    let a = s.register("guarded").await;
    let (token, subject) = fields(&start(&s, &a).await);
    let intruder = "intruder@example.net";
    let domain = a.mailbox.rsplit('@').next().unwrap();
    let cases = [
        ("another address", message(intruder, &subject, &dkim_pass(intruder))),
        ("no authentication", message(&a.mailbox, &subject, &format!("{AUTHSERV}; dkim=none; spf=none"))),
        (
            "another host's verdict",
            message(&a.mailbox, &subject, &format!("mx.elsewhere.example; dkim=pass header.d={domain}")),
        ),
        (
            "dkim of another domain",
            message(&a.mailbox, &subject, &format!("{AUTHSERV}; dkim=pass header.d=evil.example")),
        ),
        (
            "the token as the subject",
            message(&a.mailbox, &format!("agentdir recover {token}"), &dkim_pass(&a.mailbox)),
        ),
    ];
    for (what, raw) in cases {
        let (code, err) = deliver(&s, &raw);
        assert_eq!(code, 65, "{what} was accepted: {err}");
        exchange(&s, &token).await.expect_error(409, "recovery_not_confirmed");
    }
    // An unknown handle, and a handle that cannot exist.
    s.post_empty("/api/agents/nobody-here/recover", None).await.expect_error(404, "not_found");
    s.post_empty("/api/agents/NOT%20A%20HANDLE/recover", None).await.expect_error(404, "not_found");
    // Tokens that were never issued.
    for bad in ["rt_aaaaaaaaaaaa_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "nonsense", &a.key] {
        exchange(&s, bad).await.expect_error(404, "not_found");
    }
    s.post("/api/recover", None, json!({})).await.expect_error(400, "validation_failed");
    s.post("/api/recover", None, json!({"recovery_token": 7})).await.expect_error(400, "validation_failed");
    // The key still works: nothing happened.
    s.get("/api/me", Some(&a.key)).await.expect(200);
}

#[tokio::test]
async fn mail_from_an_unverified_old_mailbox_after_a_change_is_refused() {
    let s = server_with(&[]).await;
    let a = s.register("moved").await;
    let (token, subject) = fields(&start(&s, &a).await);
    let new_mailbox = format!("{}-new@example.org", a.handle);
    s.patch("/api/me", Some(&a.key), json!({"mailbox": new_mailbox})).await.expect(200);
    // The old mailbox was never verified: it proves nothing.
    let (code, _) = deliver(&s, &message(&a.mailbox, &subject, &dkim_pass(&a.mailbox)));
    assert_eq!(code, 65);
    exchange(&s, &token).await.expect_error(409, "recovery_not_confirmed");
    let export = s.get("/api/me/export", Some(&a.key)).await;
    assert!(export.json["previous_mailbox"].is_null(), "{}", export.json["previous_mailbox"]);
    // The recovery started before the change goes on, by the new address.
    let (code, err) = deliver(&s, &message(&new_mailbox, &subject, &dkim_pass(&new_mailbox)));
    assert_eq!(code, 0, "{err}");
    let done = exchange(&s, &token).await;
    done.expect(200);
    let me = s.get("/api/me", done.json["api_key"].as_str()).await;
    assert_eq!(me.json["mailbox"], new_mailbox.as_str());
    assert_eq!(me.json["agent"]["trust"]["mailbox_verified"], true);
}

/// The thief of `a`'s key moves the agent to a mailbox of its own: `PATCH /api/me`.
async fn steal_mailbox(s: &Server, key: &str, mailbox: &str) {
    let r = s.patch("/api/me", Some(key), json!({"mailbox": mailbox})).await;
    r.expect(200);
    assert_eq!(r.json["mailbox"], mailbox);
}

/// Verifies the agent's current mailbox `mailbox` with one mail, as its holder can.
async fn verify_by_mail(s: &Server, key: &str, mailbox: &str) {
    let r = s.post_empty("/api/me/verify", Some(key)).await;
    r.expect(200);
    let subject = r.json["subject"].as_str().unwrap();
    let (code, err) = deliver(s, &message(mailbox, subject, &dkim_pass(mailbox)));
    assert_eq!(code, 0, "{err}");
}

#[tokio::test]
async fn a_stolen_key_cannot_lock_the_owner_out_by_moving_the_mailbox_and_deleting() {
    let s = server_with(&[]).await;
    let a = s.verified("stolen").await;
    let thief = format!("thief-{}@evil.example", a.handle);
    steal_mailbox(&s, &a.key, &thief).await;
    s.delete("/api/me", Some(&a.key)).await.expect(200);
    s.get(&format!("/api/agents/{}", a.handle), None).await.expect_error(404, "not_found");

    // The owner recovers through the mailbox it had verified; the instructions say both
    // addresses count, without showing either.
    let r = start(&s, &a).await;
    r.expect(200);
    assert!(!r.text.contains(&a.mailbox) && !r.text.contains(&thief), "{}", r.text);
    assert!(r.json["how_en"].as_str().unwrap().contains("verified before the change"), "{}", r.text);
    assert!(r.json["how_zh"].as_str().unwrap().contains("更改前已验证的邮箱"), "{}", r.text);
    let (token, subject) = fields(&r);
    let (code, err) = deliver(&s, &message(&a.mailbox, &subject, &dkim_pass(&a.mailbox)));
    assert_eq!(code, 0, "{err}");
    let done = exchange(&s, &token).await;
    done.expect(200);
    let key = done.json["api_key"].as_str().unwrap().to_owned();

    // The deletion and the mailbox change are undone: the owner's mailbox is back, verified.
    let me = s.get("/api/me", Some(&key)).await;
    assert_eq!(me.json["mailbox"], a.mailbox.as_str());
    assert_eq!(me.json["agent"]["trust"]["mailbox_verified"], true);
    let card = s.get(&format!("/api/agents/{}", a.handle), None).await;
    card.expect(200);
    assert_eq!(card.json["agent"]["trust"]["mailbox_verified"], true);
    let export = s.get("/api/me/export", Some(&key)).await;
    assert!(export.json["previous_mailbox"].is_null(), "{}", export.json["previous_mailbox"]);

    // The thief's mailbox no longer recovers anything.
    let (token, subject) = fields(&start(&s, &a).await);
    let (code, err) = deliver(&s, &message(&thief, &subject, &dkim_pass(&thief)));
    assert_eq!(code, 65, "{err}");
    exchange(&s, &token).await.expect_error(409, "recovery_not_confirmed");
    s.get("/api/me", Some(&key)).await.expect(200);
    let audit = s.admin_ok(&["audit"]);
    assert!(audit.contains("mailbox-restored"), "{audit}");
    assert!(!audit.contains(&a.mailbox) && !audit.contains(&thief), "a mailbox is in the audit log");
}

/// What a stolen key did outlasts no recovery: a request the thief's deletion declined holds its
/// sender off nothing, and the owner takes back the handle the thief renamed away at once.
#[tokio::test]
async fn a_thiefs_rename_and_deletion_hold_nobody_off_once_the_owner_recovers() {
    let s = server_with(&[]).await;
    let a = s.verified("taken").await;
    let sender = s.verified("asker").await;
    let offering = s.offering(&a).await;
    let ask = json!({"offering_id": offering, "purpose": "Translate our README", "deliverable": "A Chinese README",
                     "compensation": "none"});
    let send = |to: String, key: String| {
        let ask = ask.clone();
        let s = &s;
        async move { s.post(&format!("/api/agents/{to}/requests"), Some(&key), ask).await }
    };
    send(a.handle.clone(), sender.key.clone()).await.expect(201);
    let stolen = common::unique_handle("stolen");
    s.post("/api/me/handle", Some(&a.key), json!({"handle": stolen})).await.expect(200);
    let deleted = s.delete("/api/me", Some(&a.key)).await;
    deleted.expect(200);
    assert_eq!(deleted.json["removed"]["requests_declined"], 1, "{}", deleted.text);

    // The owner recovers by the handle it knows.
    let (token, subject) = fields(&start(&s, &a).await);
    let (code, err) = deliver(&s, &message(&a.mailbox, &subject, &dkim_pass(&a.mailbox)));
    assert_eq!(code, 0, "{err}");
    let done = exchange(&s, &token).await;
    done.expect(200);
    let key = done.json["api_key"].as_str().unwrap().to_owned();

    // The sender may ask again at once: the deletion declined, the recipient did not.
    let asked = send(stolen.clone(), sender.key.clone()).await;
    asked.expect(201);
    // The owner takes the handle back at once; the rename after that is paced as ever.
    s.post("/api/me/handle", Some(&key), json!({"handle": a.handle})).await.expect(200);
    let third = json!({"handle": common::unique_handle("third")});
    let r = s.post("/api/me/handle", Some(&key), third).await;
    r.expect_error(429, "rate_limited");
    assert!(r.header("retry-after").is_some_and(|w| w.parse::<u64>().unwrap() > 29 * 86_400), "{}", r.text);

    // The recipient's own decline still holds the sender off.
    let id = asked.json["request"]["id"].as_str().unwrap().to_owned();
    s.post_empty(&format!("/api/requests/{id}/decline"), Some(&key)).await.expect(200);
    send(a.handle.clone(), sender.key.clone()).await.expect_error(429, "cooldown_after_decline");
}

/// Completes the recovery `started` answered with one mail from `from`, and returns the new key.
async fn recovered_by_mail(s: &Server, started: &Resp, from: &str) -> String {
    started.expect(200);
    let (token, subject) = fields(started);
    let (code, err) = deliver(s, &message(from, &subject, &dkim_pass(from)));
    assert_eq!(code, 0, "{err}");
    let done = exchange(s, &token).await;
    done.expect(200);
    done.json["api_key"].as_str().unwrap().to_owned()
}

/// A thief that moved the mailbox to its own and recovers through it does not win the exemption
/// an owner's recovery gets: its second rename is paced, so the owner's first handle stays held
/// for the owner, who recovers through the previous mailbox and takes it back at once.
#[tokio::test]
async fn a_thief_recovering_through_its_own_mailbox_cannot_rename_twice_and_free_the_handle() {
    let s = server_with(&[]).await;
    let a = s.verified("double").await;
    let thief = format!("thief-{}@evil.example", a.handle);
    steal_mailbox(&s, &a.key, &thief).await;
    let first = common::unique_handle("first");
    s.post("/api/me/handle", Some(&a.key), json!({"handle": first})).await.expect(200);
    let started = s.post_empty(&format!("/api/agents/{first}/recover"), None).await;
    let thiefs_key = recovered_by_mail(&s, &started, &thief).await;
    let second = json!({"handle": common::unique_handle("second")});
    s.post("/api/me/handle", Some(&thiefs_key), second).await.expect_error(429, "rate_limited");
    // The owner's handle is still held: nobody registers it, and a recovery by it reaches the agent.
    let taken = json!({"handle": a.handle, "name": "N", "owner": "O", "mailbox": "x@evil.example",
                       "description_en": "A squatter.", "accept_rules": true});
    s.post("/api/agents", None, taken).await.expect_error(409, "handle_taken");
    let key = recovered_by_mail(&s, &start(&s, &a).await, &a.mailbox).await;
    s.get("/api/me", Some(&thiefs_key)).await.expect_error(401, "unauthorized");
    s.post("/api/me/handle", Some(&key), json!({"handle": a.handle})).await.expect(200);
}

#[tokio::test]
async fn a_stolen_key_cannot_lock_the_owner_out_by_verifying_its_mailbox_and_rotating_the_key() {
    let s = server_with(&[]).await;
    let a = s.verified("rotated").await;
    // The owner started a recovery before the theft: the mailbox change does not end it.
    let (owner_token, owner_subject) = fields(&start(&s, &a).await);

    let thief = format!("thief-{}@evil.example", a.handle);
    let thief_again = format!("thief-{}@other.example", a.handle);
    steal_mailbox(&s, &a.key, &thief).await;
    verify_by_mail(&s, &a.key, &thief).await;
    // A second change (to a mailbox the thief verifies too) keeps the owner's mailbox remembered.
    steal_mailbox(&s, &a.key, &thief_again).await;
    verify_by_mail(&s, &a.key, &thief_again).await;
    let export = s.get("/api/me/export", Some(&a.key)).await;
    assert_eq!(export.json["previous_mailbox"]["mailbox"], a.mailbox.as_str(), "{}", export.text);
    assert!(export.json["previous_mailbox"]["recovers_until"].is_string(), "{}", export.text);
    let stolen = s.post_empty("/api/me/rotate-key", Some(&a.key)).await;
    stolen.expect(200);
    let thief_key = stolen.json["api_key"].as_str().unwrap().to_owned();
    // The thief's own recovery through the mailbox it verified works, and changes nothing of
    // what is remembered.
    let (token, subject) = fields(&start(&s, &a).await);
    assert_eq!(deliver(&s, &message(&thief_again, &subject, &dkim_pass(&thief_again))).0, 0);

    // The owner's mail confirms the recovery started before the theft.
    let (code, err) = deliver(&s, &message(&a.mailbox, &owner_subject, &dkim_pass(&a.mailbox)));
    assert_eq!(code, 0, "{err}");
    let done = exchange(&s, &owner_token).await;
    done.expect(200);
    let key = done.json["api_key"].as_str().unwrap().to_owned();
    let me = s.get("/api/me", Some(&key)).await;
    assert_eq!(me.json["mailbox"], a.mailbox.as_str());
    assert_eq!(me.json["agent"]["trust"]["mailbox_verified"], true);

    // The thief's key, its recovery and its mailboxes are all dead.
    s.get("/api/me", Some(&thief_key)).await.expect_error(401, "unauthorized");
    exchange(&s, &token).await.expect_error(404, "not_found");
    let (token, subject) = fields(&start(&s, &a).await);
    for mailbox in [&thief, &thief_again] {
        assert_eq!(deliver(&s, &message(mailbox, &subject, &dkim_pass(mailbox))).0, 65, "{mailbox}");
    }
    exchange(&s, &token).await.expect_error(409, "recovery_not_confirmed");
}

/// After a change, a recovery through the mailbox the agent has now undoes nothing; and a
/// recovery is exchanged only while the mailbox that confirmed it still recovers the agent.
#[tokio::test]
async fn the_current_mailbox_recovers_without_undoing_anything() {
    let s = server_with(&[]).await;
    let a = s.verified("moving").await;
    let new_mailbox = format!("{}-new@example.org", a.handle);
    steal_mailbox(&s, &a.key, &new_mailbox).await;
    // Confirmed through the mailbox of then, which a later change leaves unremembered (it was
    // never verified): the exchange finds it no longer recovers the agent.
    let (token, subject) = fields(&start(&s, &a).await);
    assert_eq!(deliver(&s, &message(&new_mailbox, &subject, &dkim_pass(&new_mailbox))).0, 0);
    let third = format!("{}-third@example.org", a.handle);
    steal_mailbox(&s, &a.key, &third).await;
    exchange(&s, &token).await.expect_error(404, "not_found");
    steal_mailbox(&s, &a.key, &new_mailbox).await;
    // Through the mailbox the agent has now: its mailbox stays, now verified; the previous one
    // is still remembered (a thief recovering through its own mailbox cannot erase it).
    let (token, subject) = fields(&start(&s, &a).await);
    assert_eq!(deliver(&s, &message(&new_mailbox, &subject, &dkim_pass(&new_mailbox))).0, 0);
    let key = exchange(&s, &token).await.json["api_key"].as_str().unwrap().to_owned();
    let me = s.get("/api/me", Some(&key)).await;
    assert_eq!(me.json["mailbox"], new_mailbox.as_str());
    assert_eq!(me.json["agent"]["trust"]["mailbox_verified"], true);
    let export = s.get("/api/me/export", Some(&key)).await;
    assert_eq!(export.json["previous_mailbox"]["mailbox"], a.mailbox.as_str());
}

/// Starts a recovery of `handle` as a client at `address` (the server trusts loopback as a proxy).
async fn start_from(s: &Server, handle: &str, address: &str) -> Resp {
    s.send(s.http.post(s.url(&format!("/api/agents/{handle}/recover"))).header("x-forwarded-for", address))
        .await
}

#[tokio::test]
async fn every_start_is_a_recovery_of_its_own_and_an_exchange_ends_the_others() {
    let s = server_with(&[("AGENTDIR_TRUSTED_PROXIES", "127.0.0.1")]).await;
    let a = s.register("own").await;
    let owner = start_from(&s, &a.handle, "198.51.100.1").await;
    owner.expect(200);
    let (owner_token, owner_subject) = fields(&owner);
    // Someone else starts recoveries of the same handle before and after the owner's mail.
    let (other_token, other_subject) = fields(start_from(&s, &a.handle, "203.0.113.7").await.expect(200));
    assert_ne!(owner_token, other_token);
    assert_ne!(owner_subject, other_subject);
    assert_eq!(deliver(&s, &message(&a.mailbox, &owner_subject, &dkim_pass(&a.mailbox))).0, 0);
    start_from(&s, &a.handle, "203.0.113.7").await.expect(200);
    // A code works once.
    assert_eq!(deliver(&s, &message(&a.mailbox, &owner_subject, &dkim_pass(&a.mailbox))).0, 65);
    exchange(&s, &other_token).await.expect_error(409, "recovery_not_confirmed");
    let recovered = exchange(&s, &owner_token).await;
    recovered.expect(200);
    s.get("/api/me", recovered.json["api_key"].as_str()).await.expect(200);
    // The exchange ended every other recovery, confirmed or not.
    assert_eq!(deliver(&s, &message(&a.mailbox, &other_subject, &dkim_pass(&a.mailbox))).0, 65);
    exchange(&s, &other_token).await.expect_error(404, "not_found");
    exchange(&s, &owner_token).await.expect_error(404, "not_found");
}

#[tokio::test]
async fn nobody_can_cancel_or_exhaust_the_owners_recovery() {
    let s =
        server_with(&[("AGENTDIR_TRUSTED_PROXIES", "127.0.0.1"), ("AGENTDIR_RATE_LIMIT_RECOVERY", "5/h")])
            .await;
    let a = s.register("race").await;
    let attacker = "203.0.113.66";
    // The attacker and the owner start at once, from two addresses; the attacker spends its
    // whole budget on the owner's handle and goes on past it.
    let mut starts = tokio::task::JoinSet::new();
    for _ in 0..8 {
        let req = s
            .http
            .post(s.url(&format!("/api/agents/{}/recover", a.handle)))
            .header("x-forwarded-for", attacker);
        starts.spawn(async move { req.send().await.expect("start").status().as_u16() });
    }
    let owner = start_from(&s, &a.handle, "198.51.100.20").await;
    owner.expect(200);
    let statuses = starts.join_all().await;
    assert_eq!(statuses.iter().filter(|st| **st == 200).count(), 5, "{statuses:?}");
    assert!(statuses.iter().all(|st| *st == 200 || *st == 429), "{statuses:?}");
    // The owner can still start more, from its own address.
    start_from(&s, &a.handle, "198.51.100.20").await.expect(200);
    let (token, subject) = fields(&owner);
    assert_eq!(deliver(&s, &message(&a.mailbox, &subject, &dkim_pass(&a.mailbox))).0, 0);
    // Starts after the owner's mail change nothing either.
    start_from(&s, &a.handle, "203.0.113.67").await.expect(200);
    exchange(&s, &token).await.expect(200);
}

#[tokio::test]
async fn concurrent_exchanges_of_one_token_give_one_key() {
    let s = server_with(&[]).await;
    let a = s.register("race").await;
    let (token, subject) = fields(&start(&s, &a).await);
    assert_eq!(deliver(&s, &message(&a.mailbox, &subject, &dkim_pass(&a.mailbox))).0, 0);
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..6 {
        let req = s.http.post(s.url("/api/recover")).json(&json!({"recovery_token": token}));
        tasks.spawn(async move {
            let r = req.send().await.expect("exchange");
            (r.status().as_u16(), r.json::<Value>().await.unwrap_or(Value::Null))
        });
    }
    let answers = tasks.join_all().await;
    let keys: Vec<&Value> = answers.iter().filter(|(st, _)| *st == 200).map(|(_, b)| b).collect();
    assert_eq!(keys.len(), 1, "{answers:?}");
    assert!(
        answers
            .iter()
            .filter(|(st, _)| *st != 200)
            .all(|(st, b)| *st == 404 && b["error"]["code"] == "not_found")
    );
    s.get("/api/me", Some(keys[0]["api_key"].as_str().unwrap())).await.expect(200);
}

#[tokio::test]
async fn a_suspended_agent_cannot_recover() {
    let s = server_with(&[]).await;
    let a = s.register("banned").await;
    let (token, subject) = fields(&start(&s, &a).await);
    s.admin_ok(&["suspend", "--category", "abuse", &a.handle]);
    start(&s, &a).await.expect_error(403, "suspended");
    // A recovery started before the suspension cannot be finished either.
    assert_eq!(deliver(&s, &message(&a.mailbox, &subject, &dkim_pass(&a.mailbox))).0, 65);
    exchange(&s, &token).await.expect_error(409, "recovery_not_confirmed");
}

#[tokio::test]
async fn recoveries_are_limited_per_address_only_across_a_restart() {
    let env = [("AGENTDIR_TRUSTED_PROXIES", "127.0.0.1"), ("AGENTDIR_RATE_LIMIT_RECOVERY", "3/h")];
    let mut s = server_with(&env).await;
    let agents = [
        s.register("one").await,
        s.register("two").await,
        s.register("three").await,
        s.register("four").await,
    ];
    // One address: three starts of any handles, then 429 with Retry-After, across a restart.
    for a in &agents[..3] {
        start_from(&s, &a.handle, "198.51.100.30").await.expect(200);
    }
    let r = start_from(&s, &agents[3].handle, "198.51.100.30").await;
    r.expect_error(429, "rate_limited");
    assert!(r.header("retry-after").is_some());
    s.restart();
    start_from(&s, &agents[3].handle, "198.51.100.30").await.expect_error(429, "rate_limited");
    // Nothing is counted per handle: other addresses start recoveries of the same handle.
    for n in 0..5 {
        start_from(&s, &agents[0].handle, &format!("198.51.100.{}", 40 + n)).await.expect(200);
    }
}

/// Rules of days, on the moved clock of the `test-clock` feature.
#[cfg(feature = "test-clock")]
#[tokio::test]
async fn the_previous_mailbox_recovers_for_seven_days_after_the_first_change() {
    let mut s = server_with(&[]).await;
    let a = s.verified("window").await;
    let thief = format!("thief-{}@evil.example", a.handle);
    let thief_again = format!("thief-{}@other.example", a.handle);
    steal_mailbox(&s, &a.key, &thief).await;
    verify_by_mail(&s, &a.key, &thief).await;

    // A change on the last day keeps the owner's mailbox and does not extend its days.
    s.clock_ahead_days(6.9);
    steal_mailbox(&s, &a.key, &thief_again).await;
    let (_, subject) = fields(&start(&s, &a).await);
    let (code, err) = deliver(&s, &message(&a.mailbox, &subject, &dkim_pass(&a.mailbox)));
    assert_eq!(code, 0, "still within the days: {err}");

    s.clock_ahead_days(7.1);
    let (token, subject) = fields(&start(&s, &a).await);
    assert_eq!(deliver(&s, &message(&a.mailbox, &subject, &dkim_pass(&a.mailbox))).0, 65);
    exchange(&s, &token).await.expect_error(409, "recovery_not_confirmed");
    let export = s.get("/api/me/export", Some(&a.key)).await;
    assert!(export.json["previous_mailbox"].is_null(), "{}", export.json["previous_mailbox"]);
    // The upkeep (at start) forgot the mailbox itself.
    let db = rusqlite::Connection::open(s.data_dir.join("agentdir.sqlite3")).unwrap();
    let remembered = || -> Option<String> {
        db.query_row("SELECT previous_mailbox FROM agents WHERE handle = ?1", [&a.handle], |r| r.get(0))
            .unwrap()
    };
    let forgotten = (0..600).any(|_| {
        std::thread::sleep(std::time::Duration::from_millis(50));
        remembered().is_none()
    });
    assert!(forgotten, "the owner's old mailbox is still kept: {:?}", remembered());
}

/// A thief who moved the mailbox to its own holds the key and the new mailbox: neither a
/// recovery of its own nor a deletion ends the owner's recovery through the previous mailbox,
/// started before them or confirmed after; the owner's exchange ends the thief's.
#[tokio::test]
async fn a_thief_with_the_moved_mailbox_cannot_end_the_owners_recovery() {
    let s = server_with(&[]).await;
    let a = s.verified("raced").await;
    let thief = format!("thief-{}@evil.example", a.handle);
    steal_mailbox(&s, &a.key, &thief).await;
    let (owner_token, owner_subject) = fields(&start(&s, &a).await);
    // The thief sees the owner's start in the inbox and exchanges one of its own first.
    let thiefs_key = recovered_by_mail(&s, &start(&s, &a).await, &thief).await;
    let (code, err) = deliver(&s, &message(&a.mailbox, &owner_subject, &dkim_pass(&a.mailbox)));
    assert_eq!(code, 0, "the owner's mail after the thief's exchange: {err}");
    // And deletes the agent.
    s.delete("/api/me", Some(&thiefs_key)).await.expect(200);
    let done = exchange(&s, &owner_token).await;
    done.expect(200);
    let key = done.json["api_key"].as_str().unwrap().to_owned();
    s.get("/api/me", Some(&thiefs_key)).await.expect_error(401, "unauthorized");
    let me = s.get("/api/me", Some(&key)).await;
    assert_eq!(me.json["mailbox"], a.mailbox.as_str());
    s.get(&format!("/api/agents/{}", a.handle), None).await.expect(200);
    // Without a previous mailbox, an exchange still ends every other recovery.
    let (other_token, other_subject) = fields(&start(&s, &a).await);
    let _ = recovered_by_mail(&s, &start(&s, &a).await, &a.mailbox).await;
    assert_eq!(deliver(&s, &message(&a.mailbox, &other_subject, &dkim_pass(&a.mailbox))).0, 65);
    exchange(&s, &other_token).await.expect_error(404, "not_found");
}

/// An owner claim or a mailbox verification started with a key ends when the key is recovered or
/// rotated: the key may have been a thief's, whose claim would otherwise make its own address
/// the agent's owner after the owner got the agent back.
#[tokio::test]
async fn what_a_key_started_by_mail_ends_with_its_recovery_or_rotation() {
    let s = server_with(&[]).await;
    let a = s.verified("claimed").await;
    let thief = format!("thief-{}@evil.example", a.handle);
    let claim = |key: String| {
        let s = &s;
        let thief = thief.clone();
        async move {
            let r = s.post("/api/me/owner-claim", Some(&key), json!({"owner_email": thief})).await;
            r.expect(200);
            r.json["subject"].as_str().unwrap().to_owned()
        }
    };
    let subject = claim(a.key.clone()).await;
    let key = recovered_by_mail(&s, &start(&s, &a).await, &a.mailbox).await;
    assert_eq!(deliver(&s, &message(&thief, &subject, &dkim_pass(&thief))).0, 65);
    let subject = claim(key.clone()).await;
    let rotated = s.post_empty("/api/me/rotate-key", Some(&key)).await;
    rotated.expect(200);
    assert_eq!(deliver(&s, &message(&thief, &subject, &dkim_pass(&thief))).0, 65);
    let rotated_key = rotated.json["api_key"].as_str().unwrap().to_owned();
    let me = s.get("/api/me", Some(&rotated_key)).await;
    assert!(me.json["owner_email"].is_null(), "{}", me.text);
    assert_eq!(me.json["agent"]["trust"]["level"], 1, "{}", me.text);

    // A mailbox's verification the old key started ends the same way: the thief moves the
    // mailbox to its own and starts verifying it, the owner recovers through the previous one.
    steal_mailbox(&s, &rotated_key, &thief).await;
    let r = s.post_empty("/api/me/verify", Some(&rotated_key)).await;
    r.expect(200);
    let subject = r.json["subject"].as_str().unwrap().to_owned();
    let key = recovered_by_mail(&s, &start(&s, &a).await, &a.mailbox).await;
    assert_eq!(deliver(&s, &message(&thief, &subject, &dkim_pass(&thief))).0, 65);
    let me = s.get("/api/me", Some(&key)).await;
    assert_eq!(me.json["mailbox"], a.mailbox.as_str(), "{}", me.text);
    assert_eq!(me.json["agent"]["trust"]["mailbox_verified"], true, "{}", me.text);
}

/// The rename a recovery lets through at once takes back the handle held for the agent; a new
/// handle waits as ever, or recovering between renames would free each held handle at once.
#[tokio::test]
async fn a_recovery_lets_the_agent_take_back_its_handle_at_once_and_no_other() {
    let s = server_with(&[]).await;
    let a = s.verified("cycle").await;
    let first = common::unique_handle("first");
    s.post("/api/me/handle", Some(&a.key), json!({"handle": first})).await.expect(200);
    let key = recovered_by_mail(&s, &start(&s, &a).await, &a.mailbox).await;
    let other = json!({"handle": common::unique_handle("other")});
    let r = s.post("/api/me/handle", Some(&key), other).await;
    r.expect_error(429, "rate_limited");
    assert!(r.header("retry-after").is_some_and(|w| w.parse::<u64>().unwrap() > 29 * 86_400), "{}", r.text);
    // The refusal names the rule it met, not "too many requests" after one.
    assert!(
        r.json["error"]["message_en"].as_str().unwrap().contains("handle at most once in 30 days"),
        "{}",
        r.text
    );
    assert!(
        r.json["error"]["message_zh"].as_str().unwrap().contains("每 30 天最多更改一次代号"),
        "{}",
        r.text
    );
    s.post("/api/me/handle", Some(&key), json!({"handle": a.handle})).await.expect(200);
    // The handle it left is held for it.
    let taken = json!({"handle": first, "name": "N", "owner": "O", "mailbox": "x@evil.example",
                       "description_en": "A squatter.", "accept_rules": true});
    s.post("/api/agents", None, taken).await.expect_error(409, "handle_taken");
}
