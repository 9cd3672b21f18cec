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
            let ours: Vec<_> = message
                .authentication_results
                .iter()
                .filter(|ar| ar.authserv_id.eq_ignore_ascii_case(AUTHSERV_ID) && !ar.malformed)
                .collect();
            // The pass is ours, for the method named, and aligned with the From domain.
            let (name, ptype, property) = match method {
                AuthMethod::Dkim => ("dkim", "header", "d"),
                AuthMethod::Spf => ("spf", "smtp", "mailfrom"),
            };
            let norm = |d: &str| d.trim().trim_end_matches('.').to_lowercase();
            let aligned = ours.iter().flat_map(|ar| &ar.results).any(|r| {
                r.method == name
                    && r.result == "pass"
                    && r.property(ptype, property).is_some_and(|v| {
                        let v = v.trim().trim_start_matches('<').trim_end_matches('>');
                        norm(v.rsplit_once('@').map_or(v, |(_, d)| d)) == norm(&message.from_domain)
                    })
            });
            assert!(aligned, "{method:?} accepted without an aligned pass from {AUTHSERV_ID}: {message:?}");
            // No header of ours says otherwise about a method another of ours passes.
            for m in ["dkim", "spf"] {
                let says = |pass: bool| {
                    ours.iter().any(|ar| {
                        let mut mine = ar.results.iter().filter(|r| r.method == m).peekable();
                        match mine.peek() {
                            None => !pass && ar.results.is_empty(),
                            Some(_) => mine.any(|r| r.result == "pass") == pass,
                        }
                    })
                };
                assert!(!(says(true) && says(false)), "{m} both passed and not: {message:?}");
            }
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
