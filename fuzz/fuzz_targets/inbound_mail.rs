//! Raw bytes as an MTA's pipe transport hands them to `agentdir inbound-mail`, up to the verdict
//! it gives before it touches the database: `parse_message`, then `authenticate` against the
//! configured authserv-id.

#![no_main]

use agentdir::inbound_mail::{self, AuthMethod, MAX_MESSAGE_BYTES, MailRejection};
use libfuzzer_sys::fuzz_target;

const AUTHSERV_ID: &str = "mx.agentdir.example";

fuzz_target!(|data: &[u8]| {
    // The command reads at most one byte more than the cap.
    let raw = &data[..data.len().min(MAX_MESSAGE_BYTES + 1)];
    let message = match inbound_mail::parse_message(raw) {
        Ok(m) => m,
        Err(reason) => return one_line(&reason),
    };

    // The From mailbox and its domain are what the trust rules compare.
    assert!(!message.from_domain.is_empty(), "{message:?}");
    let at = message.from.rfind('@').expect("the From address has an @");
    assert_eq!(&message.from[at + 1..], message.from_domain, "{message:?}");
    assert!(at > 0, "empty local part: {message:?}");
    assert!(!message.from.chars().any(|c| c.is_control() || c == '<' || c == '>'), "{message:?}");
    assert!(!message.from_domain.chars().any(char::is_whitespace), "{message:?}");
    assert_eq!(message.subject.trim(), message.subject, "the subject is trimmed");
    for ar in &message.authentication_results {
        assert!(!ar.authserv_id.is_empty());
        assert!(!ar.malformed || ar.results.is_empty(), "{ar:?}");
    }

    let verdict = inbound_mail::authenticate(&message, AUTHSERV_ID);
    // The authserv-id compares case-insensitively.
    let upper = inbound_mail::authenticate(&message, &AUTHSERV_ID.to_ascii_uppercase());
    assert_eq!(verdict.as_ref().ok(), upper.as_ref().ok());
    match verdict {
        Ok(method) => {
            let ours = |ar: &&inbound_mail::AuthenticationResults| {
                ar.authserv_id.eq_ignore_ascii_case(AUTHSERV_ID) && !ar.malformed
            };
            let name = match method {
                AuthMethod::Dkim => "dkim",
                AuthMethod::Spf => "spf",
            };
            let passed = message
                .authentication_results
                .iter()
                .filter(ours)
                .flat_map(|ar| &ar.results)
                .any(|r| r.method == name && r.result == "pass");
            assert!(passed, "{method:?} accepted without a pass from {AUTHSERV_ID}: {message:?}");
        }
        Err(reason) => one_line(&reason),
    }
});

/// A rejection is logged as one line of printable text.
fn one_line(reason: &MailRejection) {
    let text = reason.to_string();
    assert!(!text.is_empty());
    assert!(!text.chars().any(char::is_control), "{text:?}");
}
