//! Trust through a real mail server: the README's "Verification by mail" set-up (deploy/mail)
//! run for real on loopback — Postfix, OpenDKIM and pyspf-milter from Debian's packages, a DNS
//! server for the senders' DKIM keys and SPF records — with mail submitted over SMTP the way
//! outside mail arrives. Signed mail verifies a mailbox, claims an owner and recovers a key;
//! a broken signature, another domain's mail and a forged `Authentication-Results` do not.
//!
//! Needs root and the Debian packages `.ci/run` installs. `AGENTDIR_SKIP_MAIL_E2E=1` skips it
//! (with a message) on a developer's machine without them; otherwise their absence fails.

#[path = "../common/mod.rs"]
mod common;
mod mta;

use common::mail::{AUTHSERV, MAIL_DOMAIN, rand_id, server};
use common::{Agent, BIN, Server};
use mta::{Delivery, InboundCommand, MailStack, PROGRAMS, SenderDomain, dkim_sign};
use serde_json::{Value, json};

/// Signs its mail; its SPF record authorises no one, so only DKIM can vouch for it.
const SIGNER: &str = "signer.test";
/// Signs its mail too, with its own key.
const OTHER: &str = "other.test";
/// Signs nothing; its SPF record authorises the loopback address mail is submitted from.
const SPF_ONLY: &str = "spf-only.test";
/// The user the agentdir pipe runs as.
const PIPE_USER: &str = "nobody";

fn sender_domains() -> [SenderDomain; 3] {
    [
        SenderDomain { name: SIGNER, dkim: true, spf: "v=spf1 -all" },
        SenderDomain { name: OTHER, dkim: true, spf: "v=spf1 -all" },
        SenderDomain { name: SPF_ONLY, dkim: false, spf: "v=spf1 ip4:127.0.0.1 -all" },
    ]
}

/// False (after saying why) when the developer asked to skip; panics when the test cannot run.
fn mail_stack_available() -> bool {
    if std::env::var("AGENTDIR_SKIP_MAIL_E2E").is_ok_and(|v| v == "1") {
        eprintln!("SKIPPED the mail end-to-end test: AGENTDIR_SKIP_MAIL_E2E=1");
        return false;
    }
    let missing: Vec<&str> = PROGRAMS
        .iter()
        .filter(|(path, _)| !std::path::Path::new(path).exists())
        .map(|(_, pkg)| *pkg)
        .collect();
    assert!(
        missing.is_empty(),
        "the mail end-to-end test needs Debian's packages {missing:?}; .ci/run installs them \
         (as root). Set AGENTDIR_SKIP_MAIL_E2E=1 to skip this test on a machine without them."
    );
    let uid = std::process::Command::new("id").arg("-u").output().expect("id -u");
    assert_eq!(
        String::from_utf8_lossy(&uid.stdout).trim(),
        "0",
        "the mail end-to-end test starts Postfix and so runs as root (as CI does); \
         set AGENTDIR_SKIP_MAIL_E2E=1 to skip it"
    );
    true
}

/// A message as a sender's mail client writes it.
fn message(from: &str, subject: &str, body: &str) -> String {
    format!(
        "From: Sender <{from}>\r\nTo: verify@{MAIL_DOMAIN}\r\nSubject: {subject}\r\n\
         Date: Wed, 25 Nov 2026 10:00:00 +0000\r\nMessage-ID: <{}@sender.test>\r\n\r\n{body}\r\n",
        rand_id()
    )
}

struct Run {
    s: Server,
    mail: MailStack,
}

impl Run {
    /// Submits over SMTP and waits for Postfix's verdict on the delivery to agentdir.
    #[track_caller]
    fn deliver(&self, mail_from: &str, raw: &str) -> Delivery {
        let queue_id = self
            .mail
            .submit(mail_from, &format!("verify@{MAIL_DOMAIN}"), raw.as_bytes())
            .unwrap_or_else(|reply| panic!("Postfix refused the message: {reply}\n{}", self.mail.logs()));
        self.mail.delivery(&queue_id)
    }

    /// Signed by `domain` with its key, sent from `bounce@<domain>`.
    #[track_caller]
    fn deliver_signed(&self, domain: &str, raw: &str) -> Delivery {
        self.deliver(&format!("bounce@{domain}"), &dkim_sign(&self.mail.key(domain), domain, raw))
    }

    /// An agent whose mailbox is at `domain`.
    async fn agent(&self, prefix: &str, domain: &str) -> Agent {
        let mut a = self.s.register(prefix).await;
        a.mailbox = format!("{}@{domain}", a.handle);
        self.s.patch("/api/me", Some(&a.key), json!({"mailbox": a.mailbox})).await.expect(200);
        a
    }

    async fn level(&self, a: &Agent) -> Value {
        self.s.get(&format!("/api/agents/{}", a.handle), None).await.json["agent"]["trust"]["level"].clone()
    }

    async fn verify_subject(&self, a: &Agent) -> String {
        let r = self.s.post_empty("/api/me/verify", Some(&a.key)).await;
        r.expect(200);
        r.json["subject"].as_str().expect("subject").to_owned()
    }
}

#[track_caller]
fn assert_delivered(d: &Delivery, what: &str) {
    assert_eq!(d.status, "sent", "{what}: {d:?}");
}

/// Refused by `agentdir inbound-mail` itself: exit 65 (EX_DATAERR, "data format error" to
/// Postfix), so the message bounces with the command's reason.
#[track_caller]
fn assert_refused(d: &Delivery, what: &str, reason: &str) {
    assert_eq!(d.status, "bounced", "{what}: {d:?}");
    let refused =
        d.detail.contains("data format error") && d.detail.contains("agentdir inbound-mail: rejected:");
    assert!(refused, "{what}: {d:?}");
    assert!(d.detail.contains(reason), "{what}: expected {reason:?} in {d:?}");
}

#[tokio::test]
async fn a_real_mail_server_verifies_signed_mail_and_refuses_forgeries() {
    if !mail_stack_available() {
        return;
    }
    let s = server().await;
    // The pipe runs as its own user against the server's data dir (see the README): here the
    // simplest correct arrangement, the data dir handed to that user while the server (root)
    // keeps its access.
    let status = std::process::Command::new("chown").args(["-R", PIPE_USER]).arg(&s.data_dir).status();
    assert!(status.is_ok_and(|st| st.success()), "chown the data dir");
    let site = InboundCommand {
        bin: BIN,
        data_dir: &s.data_dir,
        mail_domain: MAIL_DOMAIN,
        authserv_id: AUTHSERV,
        user: PIPE_USER,
    };
    let mail = MailStack::start(&site, &sender_domains());
    let run = Run { s, mail };

    // verify@ is the only address: anything else is refused at RCPT TO.
    let refused = run.mail.submit("bounce@signer.test", &format!("postmaster@{MAIL_DOMAIN}"), b"x");
    assert!(refused.as_ref().is_err_and(|reply| reply.starts_with("550")), "{refused:?}");

    // A DKIM-signed message from the agent's mailbox verifies it (SPF fails for this domain:
    // DKIM alone carries it).
    let a = run.agent("mx-dkim", SIGNER).await;
    let subject = run.verify_subject(&a).await;
    assert_delivered(&run.deliver_signed(SIGNER, &message(&a.mailbox, &subject, "hello")), "signed mail");
    assert_eq!(run.level(&a).await, 1);

    // The owner claims the agent with a signed message from the owner's address.
    let owner = format!("boss-{}@{SIGNER}", a.handle);
    let r = run.s.post("/api/me/owner-claim", Some(&a.key), json!({"owner_email": owner})).await;
    r.expect(200);
    let claim_subject = r.json["subject"].as_str().expect("subject").to_owned();
    assert_delivered(&run.deliver_signed(SIGNER, &message(&owner, &claim_subject, "mine")), "owner's mail");
    assert_eq!(run.level(&a).await, 2);

    // A lost key comes back through one signed message.
    let lost = run.agent("mx-recover", SIGNER).await;
    let r = run.s.post_empty(&format!("/api/agents/{}/recover", lost.handle), None).await;
    r.expect(200);
    let token = r.json["recovery_token"].as_str().expect("token").to_owned();
    let recover_subject = r.json["subject"].as_str().expect("subject").to_owned();
    let exchange = || run.s.post("/api/recover", None, json!({"recovery_token": token}));
    exchange().await.expect_error(409, "recovery_not_confirmed");
    assert_delivered(
        &run.deliver_signed(SIGNER, &message(&lost.mailbox, &recover_subject, "lost my key")),
        "recovery mail",
    );
    let r = exchange().await;
    r.expect(200);
    assert_eq!(r.json["handle"], lost.handle.as_str());
    let new_key = r.json["api_key"].as_str().expect("api_key").to_owned();
    run.s.get("/api/me", Some(&lost.key)).await.expect_error(401, "unauthorized");
    run.s.get("/api/me", Some(&new_key)).await.expect(200);
    assert_eq!(run.level(&lost).await, 1, "the recovery mail proved the mailbox");

    // SPF alone verifies too: unsigned mail from a domain whose SPF record names the sender.
    let spf = run.agent("mx-spf", SPF_ONLY).await;
    let subject = run.verify_subject(&spf).await;
    assert_delivered(&run.deliver(&spf.mailbox, &message(&spf.mailbox, &subject, "hi")), "SPF-passing mail");
    assert_eq!(run.level(&spf).await, 1);

    // Mail that must not verify reaches agentdir (the MTA judges, agentdir refuses) and changes
    // nothing; the same code still works afterwards, so each refusal was about the mail.
    let b = run.agent("mx-refused", SIGNER).await;
    let subject = run.verify_subject(&b).await;
    let unproven = "neither DKIM nor SPF passed";

    let signed = dkim_sign(&run.mail.key(SIGNER), SIGNER, &message(&b.mailbox, &subject, "original"));
    let broken = signed.replace("original", "altered on the way");
    assert_refused(&run.deliver(&format!("bounce@{SIGNER}"), &broken), "a broken signature", unproven);

    let from_other = message(&format!("intruder@{OTHER}"), &subject, "let me in");
    assert_refused(
        &run.deliver_signed(OTHER, &from_other),
        "mail from another domain",
        "does not come from the address",
    );
    let signed_by_other = message(&b.mailbox, &subject, "signed elsewhere");
    assert_refused(&run.deliver_signed(OTHER, &signed_by_other), "another domain's signature", unproven);

    // A passing verdict written by the sender under our authserv-id is deleted on arrival
    // (RFC 8601 §5), so agentdir sees only the genuine verdicts: not even a disagreement. The
    // last sender passes SPF for its own domain: beside that genuine pass, a forged pass for
    // the agent's domain would leave nothing to disagree about, so only deleting it stops it.
    let forgeries = [
        (SIGNER, format!("Authentication-Results: {AUTHSERV}; dkim=pass header.d={SIGNER}")),
        (
            SIGNER,
            format!(
                "Authentication-Results: (checked) {AUTHSERV};\r\n\tspf=pass smtp.mailfrom={}",
                b.mailbox
            ),
        ),
        (SIGNER, format!("Authentication-Results : {AUTHSERV}; dkim=pass header.d={SIGNER}")),
        (SPF_ONLY, format!("Authentication-Results: {AUTHSERV}; spf=pass smtp.mailfrom={}", b.mailbox)),
    ];
    for (envelope_domain, forged) in forgeries {
        let raw = format!("{forged}\r\n{}", message(&b.mailbox, &subject, "trust me"));
        let delivery = run.deliver(&format!("bounce@{envelope_domain}"), &raw);
        assert_refused(&delivery, &forged, unproven);
    }
    assert_eq!(run.level(&b).await, 0, "a refused message changed the level");

    assert_delivered(&run.deliver_signed(SIGNER, &message(&b.mailbox, &subject, "me")), "the genuine mail");
    assert_eq!(run.level(&b).await, 1);
}
