//! Inbound verification mail: turns one raw RFC 5322 message (as an MTA's pipe transport hands it)
//! into the few facts the trust rules need — the `From` mailbox, the decoded `Subject` and the
//! `Authentication-Results` headers (RFC 8601) — and decides whether the receiving MTA
//! authenticated the `From` domain by DKIM or SPF.
//!
//! It owns no state and knows nothing about codes or agents: the caller compares `from` with the
//! address that must send the message and looks for the expected subject.
//!
//! Trust boundary: an `Authentication-Results` header is only as honest as the host that wrote it,
//! so only headers whose authserv-id is the configured one count. A sender can write such a
//! header too; RFC 8601 §5 requires the receiving MTA to delete (or rename) incoming
//! `Authentication-Results` headers that carry its own authserv-id before its DKIM/SPF milter adds
//! the genuine one. This module cannot tell a forged header with our id from the genuine one
//! (their position depends on the MTA), so the MTA must strip such headers on arrival. As
//! defence in depth it refuses a message whose headers with our id disagree about a method (a
//! forged pass beside the genuine failure), never trusts a field written with whitespace before
//! its colon (which strip rules keyed on the exact name miss), and takes DKIM only with
//! `header.d` aligned to the From domain.

use std::fmt::Write as _;

use mail_parser::{Address, HeaderName, MessageParser};

/// Larger input is refused before parsing; the caller should read at most one byte more than this.
pub const MAX_MESSAGE_BYTES: usize = 64 * 1024 * 1024;

/// The facts of one inbound message that the trust rules use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InboundMessage {
    /// The `From` mailbox address (`local@domain`), lower-cased; never the display name.
    pub from: String,
    /// The domain part of `from`, lower-cased.
    pub from_domain: String,
    /// The subject with encoded words decoded and folding removed, trimmed.
    pub subject: String,
    /// The `Message-ID` without angle brackets, when present.
    pub message_id: Option<String>,
    /// Every `Authentication-Results` header whose authserv-id could be read, in header order
    /// (top first), whoever added it.
    pub authentication_results: Vec<AuthenticationResults>,
}

/// One parsed `Authentication-Results` header (RFC 8601 §2.2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthenticationResults {
    /// The authserv-id as written (compare it case-insensitively).
    pub authserv_id: String,
    /// The optional authres-version that follows the authserv-id.
    pub version: Option<u32>,
    /// The resinfo entries; empty for `none` or when `malformed`.
    pub results: Vec<ResInfo>,
    /// The authserv-id was readable but the rest was not: such a header proves nothing.
    pub malformed: bool,
}

/// One `method=result` entry with its reason and properties.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResInfo {
    /// Lower-cased method name, e.g. `dkim`, `spf`.
    pub method: String,
    /// Lower-cased result, e.g. `pass`, `fail`, `none`.
    pub result: String,
    pub reason: Option<String>,
    pub properties: Vec<Property>,
}

/// A `ptype.property=value` entry. Some MTAs also write bare `key=value` entries (Microsoft's
/// `action=none`); those keep an empty `ptype`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Property {
    /// Lower-cased, e.g. `header`, `smtp`.
    pub ptype: String,
    /// Lower-cased, e.g. `d`, `mailfrom`.
    pub name: String,
    /// As written, quotes removed.
    pub value: String,
}

impl ResInfo {
    /// The value of `ptype.name`, compared case-insensitively.
    pub fn property(&self, ptype: &str, name: &str) -> Option<&str> {
        self.properties
            .iter()
            .find(|p| p.ptype.eq_ignore_ascii_case(ptype) && p.name.eq_ignore_ascii_case(name))
            .map(|p| p.value.as_str())
    }
}

/// Which check authenticated the `From` domain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthMethod {
    Dkim,
    Spf,
}

/// Why a message was not accepted; `Display` is a one-line English reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MailRejection {
    #[error("the message is empty")]
    Empty,
    #[error("the message is larger than {} MiB", MAX_MESSAGE_BYTES / (1024 * 1024))]
    TooLarge,
    #[error("the input is not an RFC 5322 message (no header fields)")]
    NotAMessage,
    #[error("the message has no From header")]
    MissingFrom,
    #[error("the message has more than one From header")]
    MultipleFrom,
    #[error("the From header must name exactly one mailbox")]
    FromNotSingleMailbox,
    #[error("the From address is not a valid mailbox address")]
    InvalidFrom,
    #[error("the message has no Subject header")]
    MissingSubject,
    #[error("the message has more than one Subject header")]
    MultipleSubject,
    #[error("the message has no Authentication-Results header from {authserv_id}")]
    NoAuthenticationResults { authserv_id: String },
    #[error("the Authentication-Results headers from {authserv_id} disagree about {method}")]
    Conflicting { method: &'static str, authserv_id: String },
    #[error("neither DKIM nor SPF passed for {domain} at {authserv_id} (seen: {seen})")]
    NotAuthenticated {
        domain: String,
        authserv_id: String,
        /// A short, sanitised summary of the results that were considered.
        seen: String,
    },
}

/// Parses one raw message (CRLF or LF line endings, any header order, folding and RFC 2047
/// encoding). Only the top-level header block matters, so MIME bodies are not decoded.
pub fn parse_message(raw: &[u8]) -> Result<InboundMessage, MailRejection> {
    if raw.iter().all(u8::is_ascii_whitespace) {
        return Err(MailRejection::Empty);
    }
    if raw.len() > MAX_MESSAGE_BYTES {
        return Err(MailRejection::TooLarge);
    }
    let message = MessageParser::new().parse_headers(raw).ok_or(MailRejection::NotAMessage)?;
    if message.headers().is_empty() {
        return Err(MailRejection::NotAMessage);
    }

    let count = |name: HeaderName<'_>| message.headers().iter().filter(|h| h.name == name).count();

    // Two From or Subject fields are invalid (RFC 5322 §3.6) and would let the field that DKIM
    // signed differ from the one read here.
    match count(HeaderName::From) {
        0 => return Err(MailRejection::MissingFrom),
        1 => {}
        _ => return Err(MailRejection::MultipleFrom),
    }
    let (from, from_domain) = single_mailbox(message.from())?;

    let subject = match count(HeaderName::Subject) {
        0 => return Err(MailRejection::MissingSubject),
        1 => message.subject().unwrap_or_default().trim().to_string(),
        _ => return Err(MailRejection::MultipleSubject),
    };

    let message_id = message.message_id().map(str::trim).filter(|id| !id.is_empty()).map(str::to_string);

    let authentication_results = message
        .headers()
        .iter()
        .filter(|h| h.name == HeaderName::AuthenticationResults)
        .filter(|h| name_is_plain(raw, h.offset_field as usize, h.offset_start as usize))
        .filter_map(|h| raw.get(h.offset_start as usize..h.offset_end as usize))
        .filter_map(|value| parse_authentication_results(&String::from_utf8_lossy(value)))
        .collect();

    Ok(InboundMessage { from, from_domain, subject, message_id, authentication_results })
}

/// Whether a field's name is written without whitespace before its colon. A field written
/// `Authentication-Results :` is one an MTA's strip rule may miss, so it is never trusted.
fn name_is_plain(raw: &[u8], name_start: usize, value_start: usize) -> bool {
    raw.get(name_start..value_start.saturating_sub(1))
        .is_some_and(|name| name.last().is_some_and(|b| !b.is_ascii_whitespace()))
}

fn single_mailbox(address: Option<&Address<'_>>) -> Result<(String, String), MailRejection> {
    let list = match address {
        None => return Err(MailRejection::InvalidFrom),
        Some(address) => address.as_list().ok_or(MailRejection::FromNotSingleMailbox)?,
    };
    let [mailbox] = list else {
        return Err(MailRejection::FromNotSingleMailbox);
    };
    let address = mailbox.address.as_deref().map(str::trim).ok_or(MailRejection::InvalidFrom)?.to_lowercase();
    let Some((local, domain)) = address.rsplit_once('@') else {
        return Err(MailRejection::InvalidFrom);
    };
    // The local part may legitimately be quoted (and so hold spaces); the domain, which the
    // authentication results are matched against, must be a plain host name.
    let bad_domain_char = |c: char| c.is_whitespace() || "@\"()[]\\<>,;:".contains(c) || c.is_control();
    if local.is_empty()
        || domain.is_empty()
        || address.chars().any(|c| c.is_control() || c == '<' || c == '>')
        || domain.chars().any(bad_domain_char)
        || domain.starts_with('.')
        || domain.contains("..")
    {
        return Err(MailRejection::InvalidFrom);
    }
    let domain = domain.to_string();
    Ok((address, domain))
}

/// `is_authenticated` with the reason when it fails.
///
/// Only `Authentication-Results` headers whose authserv-id equals `authserv_id`
/// (case-insensitive) count; headers with any other authserv-id are ignored. The message passes
/// when one of ours holds `dkim=pass` with `header.d` equal to the From domain, or `spf=pass`
/// with an `smtp.mailfrom` whose domain is the From domain — unless two of ours disagree about
/// the same method (one passes it, another gives it any other result or says `none`): a forged
/// header beside the genuine one, which an MTA that does not strip them lets through. Headers
/// that agree (one milter stamps dkim, another spf) still pass.
pub fn authenticate(msg: &InboundMessage, authserv_id: &str) -> Result<AuthMethod, MailRejection> {
    let wanted = authserv_id.trim();
    let ours: Vec<&AuthenticationResults> = msg
        .authentication_results
        .iter()
        .filter(|ar| !wanted.is_empty() && ar.authserv_id.eq_ignore_ascii_case(wanted))
        .collect();
    if ours.is_empty() {
        return Err(MailRejection::NoAuthenticationResults { authserv_id: sanitize(wanted) });
    }
    let readable: Vec<&AuthenticationResults> = ours.iter().copied().filter(|ar| !ar.malformed).collect();
    for method in ["dkim", "spf"] {
        let verdicts: Vec<Verdict> = readable.iter().map(|ar| ar.verdict(method)).collect();
        if verdicts.contains(&Verdict::Pass) && verdicts.contains(&Verdict::Other) {
            return Err(MailRejection::Conflicting { method, authserv_id: sanitize(wanted) });
        }
    }
    let results = || readable.iter().flat_map(|ar| ar.results.iter());
    let domain = msg.from_domain.as_str();
    let dkim_ok = |r: &ResInfo| {
        r.method == "dkim"
            && r.result == "pass"
            && r.property("header", "d").is_some_and(|d| same_domain(d, domain))
    };
    let spf_ok = |r: &ResInfo| {
        r.method == "spf"
            && r.result == "pass"
            && r.property("smtp", "mailfrom").is_some_and(|m| same_domain(domain_of(m), domain))
    };
    if results().any(dkim_ok) {
        return Ok(AuthMethod::Dkim);
    }
    if results().any(spf_ok) {
        return Ok(AuthMethod::Spf);
    }
    Err(MailRejection::NotAuthenticated {
        domain: sanitize(domain),
        authserv_id: sanitize(wanted),
        seen: summarize(&ours),
    })
}

/// What one header says about one method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    /// At least one result for the method passed.
    Pass,
    /// The method was reported without a pass, or the header says `none` (nothing passed).
    Other,
    /// The header does not mention the method.
    Silent,
}

impl AuthenticationResults {
    fn verdict(&self, method: &str) -> Verdict {
        let mut mentioned = self.results.iter().filter(|r| r.method == method).peekable();
        if mentioned.peek().is_none() {
            return if self.results.is_empty() { Verdict::Other } else { Verdict::Silent };
        }
        if mentioned.any(|r| r.result == "pass") { Verdict::Pass } else { Verdict::Other }
    }
}

/// True when `authenticate` passes; see there for the rule.
pub fn is_authenticated(msg: &InboundMessage, authserv_id: &str) -> bool {
    authenticate(msg, authserv_id).is_ok()
}

/// The domain of an address-like property value: `user@example.com`, `@example.com`,
/// `<user@example.com>` or a bare `example.com`.
fn domain_of(value: &str) -> &str {
    let value = value.trim().trim_start_matches('<').trim_end_matches('>');
    value.rsplit_once('@').map_or(value, |(_, domain)| domain)
}

fn same_domain(a: &str, b: &str) -> bool {
    let norm = |d: &str| d.trim().trim_end_matches('.').to_lowercase();
    let a = norm(a);
    !a.is_empty() && a == norm(b)
}

/// Sender-controlled text ends up in a one-line reason: keep it printable and short.
fn sanitize(text: &str) -> String {
    const MAX: usize = 80;
    let mut out: String = text.chars().map(|c| if c.is_control() { ' ' } else { c }).take(MAX).collect();
    if text.chars().count() > MAX {
        out.push('…');
    }
    out
}

fn summarize(ours: &[&AuthenticationResults]) -> String {
    const MAX_ENTRIES: usize = 6;
    let mut parts = Vec::new();
    let mut malformed = 0;
    for ar in ours {
        if ar.malformed {
            malformed += 1;
            continue;
        }
        for r in &ar.results {
            let mut part = format!("{}={}", sanitize(&r.method), sanitize(&r.result));
            let detail = match r.method.as_str() {
                "dkim" => r.property("header", "d").map(|d| ("header.d", d)),
                "spf" => r.property("smtp", "mailfrom").map(|m| ("smtp.mailfrom", m)),
                _ => None,
            };
            if let Some((key, value)) = detail {
                let _ = write!(part, " {key}={}", sanitize(value));
            }
            parts.push(part);
        }
    }
    let total = parts.len();
    parts.truncate(MAX_ENTRIES);
    if total > MAX_ENTRIES {
        parts.push(format!("and {} more", total - MAX_ENTRIES));
    }
    if malformed > 0 {
        parts.push(format!("{malformed} unparsable header(s)"));
    }
    if parts.is_empty() { "no results".to_string() } else { parts.join(", ") }
}

/// Parses the value of one `Authentication-Results` header (everything after the colon,
/// folding included). `None` when not even the authserv-id can be read.
pub fn parse_authentication_results(value: &str) -> Option<AuthenticationResults> {
    let mut lx = Lexer::new(value);
    lx.skip_cfws().ok()?;
    let authserv_id = lx.value().ok()?;
    if authserv_id.is_empty() || authserv_id.contains('=') {
        // `spf=pass ...` with no authserv-id at all (some MTAs write that) names no host.
        return None;
    }
    let mut header =
        AuthenticationResults { authserv_id, version: None, results: Vec::new(), malformed: false };
    match parse_rest(&mut lx) {
        Ok((version, results)) => {
            header.version = version;
            header.results = results;
        }
        Err(Malformed) => header.malformed = true,
    }
    Some(header)
}

#[derive(Debug)]
struct Malformed;

type Parsed<T> = Result<T, Malformed>;

fn parse_rest(lx: &mut Lexer<'_>) -> Parsed<(Option<u32>, Vec<ResInfo>)> {
    lx.skip_cfws()?;
    let version = lx.number()?;
    let mut results = Vec::new();
    loop {
        lx.skip_cfws()?;
        if lx.at_end() {
            break;
        }
        if !lx.eat(b';') {
            return Err(Malformed);
        }
        lx.skip_cfws()?;
        if lx.at_end() {
            // A trailing `;` is common and harmless.
            break;
        }
        let method = lx.token()?.to_ascii_lowercase();
        lx.skip_cfws()?;
        if lx.eat(b'/') {
            lx.skip_cfws()?;
            lx.number()?.ok_or(Malformed)?;
            lx.skip_cfws()?;
        }
        if !lx.eat(b'=') {
            if method == "none" {
                continue;
            }
            return Err(Malformed);
        }
        lx.skip_cfws()?;
        let result = lx.token()?.to_ascii_lowercase();
        let mut info = ResInfo { method, result, reason: None, properties: Vec::new() };
        loop {
            lx.skip_cfws()?;
            if lx.at_end() || lx.peek() == Some(b';') {
                break;
            }
            let key = lx.token()?.to_ascii_lowercase();
            lx.skip_cfws()?;
            let (ptype, name) = if let Some((ptype, name)) = key.split_once('.') {
                (ptype.to_string(), name.to_string())
            } else if lx.eat(b'.') {
                lx.skip_cfws()?;
                let name = lx.token()?.to_ascii_lowercase();
                lx.skip_cfws()?;
                (key, name)
            } else {
                (String::new(), key)
            };
            if !lx.eat(b'=') {
                return Err(Malformed);
            }
            lx.skip_cfws()?;
            let value = lx.value()?;
            if ptype.is_empty() && name == "reason" {
                info.reason = Some(value);
            } else {
                info.properties.push(Property { ptype, name, value });
            }
        }
        results.push(info);
    }
    Ok((version, results))
}

/// A cursor over a header value. All delimiters are ASCII, so byte positions that stop on them
/// are always char boundaries.
struct Lexer<'a> {
    s: &'a str,
    pos: usize,
}

impl<'a> Lexer<'a> {
    fn new(s: &'a str) -> Self {
        Lexer { s, pos: 0 }
    }

    fn peek(&self) -> Option<u8> {
        self.s.as_bytes().get(self.pos).copied()
    }

    fn at_end(&self) -> bool {
        self.pos >= self.s.len()
    }

    fn eat(&mut self, c: u8) -> bool {
        if self.peek() == Some(c) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    /// Skips folding white space and (nested) comments; comments may hold `;`, `=` and quotes.
    fn skip_cfws(&mut self) -> Parsed<()> {
        loop {
            match self.peek() {
                Some(b' ' | b'\t' | b'\r' | b'\n') => self.pos += 1,
                Some(b'(') => {
                    let mut depth = 0usize;
                    loop {
                        match self.peek() {
                            None => return Err(Malformed),
                            Some(b'\\') => self.pos += 2,
                            Some(b'(') => {
                                depth += 1;
                                self.pos += 1;
                            }
                            Some(b')') => {
                                depth -= 1;
                                self.pos += 1;
                                if depth == 0 {
                                    break;
                                }
                            }
                            Some(_) => self.pos += 1,
                        }
                    }
                }
                _ => return Ok(()),
            }
        }
    }

    /// An RFC 2045 token; `.` is allowed, so `header.d` is one token.
    fn token(&mut self) -> Parsed<&'a str> {
        let start = self.pos;
        while let Some(c) = self.peek() {
            let special = b"()<>@,;:\\\"/[]?=".contains(&c);
            if c <= b' ' || c == 0x7f || special {
                break;
            }
            self.pos += 1;
        }
        if self.pos == start {
            return Err(Malformed);
        }
        self.s.get(start..self.pos).ok_or(Malformed)
    }

    /// Optional decimal digits (authres-version, method-version).
    fn number(&mut self) -> Parsed<Option<u32>> {
        let start = self.pos;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.pos += 1;
        }
        if self.pos == start {
            return Ok(None);
        }
        let digits = self.s.get(start..self.pos).ok_or(Malformed)?;
        digits.parse().map(Some).map_err(|_| Malformed)
    }

    /// A quoted string, or a run of anything but white space, `;` and `(`. The run is lenient on
    /// purpose: values such as `header.b=ab/c+d=` or `smtp.mailfrom=user@example.com` are not
    /// RFC 2045 tokens but are what MTAs write. A quoted local part may be followed by `@domain`.
    fn value(&mut self) -> Parsed<String> {
        let mut out = String::new();
        if self.peek() == Some(b'"') {
            out.push_str(&self.quoted()?);
            if self.peek() != Some(b'@') {
                return Ok(out);
            }
        }
        let start = self.pos;
        while let Some(c) = self.peek() {
            if matches!(c, b' ' | b'\t' | b'\r' | b'\n' | b';' | b'(') {
                break;
            }
            self.pos += 1;
        }
        out.push_str(self.s.get(start..self.pos).ok_or(Malformed)?);
        if out.is_empty() {
            return Err(Malformed);
        }
        Ok(out)
    }

    fn quoted(&mut self) -> Parsed<String> {
        if !self.eat(b'"') {
            return Err(Malformed);
        }
        let mut out = String::new();
        let mut chars = self.s.get(self.pos..).ok_or(Malformed)?.char_indices();
        while let Some((i, c)) = chars.next() {
            match c {
                '"' => {
                    self.pos += i + 1;
                    return Ok(out);
                }
                '\\' => match chars.next() {
                    Some((_, escaped)) => out.push(escaped),
                    None => return Err(Malformed),
                },
                // Folding inside a quoted string is not part of its content.
                '\r' | '\n' => {}
                c => out.push(c),
            }
        }
        Err(Malformed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> Vec<u8> {
        let path = format!("{}/tests/fixtures/mail/{name}", env!("CARGO_MANIFEST_DIR"));
        std::fs::read(&path).unwrap_or_else(|e| panic!("fixture {path}: {e}"))
    }

    const ID: &str = "mx.agentdir.example";

    fn parse_fixture(name: &str) -> InboundMessage {
        parse_message(&fixture(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
    }
    fn authenticated(name: &str) -> Result<AuthMethod, MailRejection> {
        authenticate(&parse_fixture(name), ID)
    }

    const CODE_SUBJECT: &str = "agentdir verify K7Q2-M9XD-4TPA";

    #[test]
    fn genuine_dkim_pass() {
        let msg = parse_fixture("genuine_dkim_pass.eml");
        assert_eq!(msg.from, "alice@example.com");
        assert_eq!(msg.from_domain, "example.com");
        assert_eq!(msg.subject, CODE_SUBJECT);
        assert_eq!(msg.message_id.as_deref(), Some("genuine_dkim_pass@mail.example.com"));
        // Ours and Gmail's; the ARC-Authentication-Results header is a different field.
        assert_eq!(msg.authentication_results.len(), 2);
        assert_eq!(authenticate(&msg, ID), Ok(AuthMethod::Dkim));
        assert!(is_authenticated(&msg, "MX.AGENTDIR.EXAMPLE"));
        assert!(!is_authenticated(&msg, "mx.google.com"));
        assert!(!is_authenticated(&msg, ""));
    }

    #[test]
    fn genuine_spf_pass_only() {
        let msg = parse_fixture("genuine_spf_pass.eml");
        assert_eq!(msg.from, "bob@example.org");
        assert_eq!(authenticate(&msg, ID), Ok(AuthMethod::Spf));
    }

    #[test]
    fn wrong_authserv_id_is_ignored() {
        let err = authenticated("wrong_authserv_id.eml").unwrap_err();
        assert_eq!(err, MailRejection::NoAuthenticationResults { authserv_id: ID.into() });
        assert_eq!(
            err.to_string(),
            "the message has no Authentication-Results header from mx.agentdir.example"
        );
        // The same message does pass for the host that stamped it.
        assert!(is_authenticated(&parse_fixture("wrong_authserv_id.eml"), "mx.other.example"));
    }

    #[test]
    fn missing_authentication_results() {
        let err = authenticated("missing_ar.eml").unwrap_err();
        assert!(matches!(err, MailRejection::NoAuthenticationResults { .. }));
    }

    #[test]
    fn dkim_fail_is_rejected() {
        let err = authenticated("dkim_fail.eml").unwrap_err();
        assert_eq!(
            err.to_string(),
            "neither DKIM nor SPF passed for example.com at mx.agentdir.example \
             (seen: dkim=fail header.d=example.com, spf=none smtp.mailfrom=example.com)"
        );
        let msg = parse_fixture("dkim_fail.eml");
        let dkim = &msg.authentication_results[0].results[0];
        assert_eq!(dkim.reason.as_deref(), Some("signature verification failed"));
    }

    #[test]
    fn spf_fail_is_rejected() {
        let err = authenticated("spf_fail.eml").unwrap_err();
        assert!(matches!(err, MailRejection::NotAuthenticated { .. }), "{err}");
    }

    #[test]
    fn pass_for_another_domain_is_rejected() {
        let err = authenticated("dkim_other_domain.eml").unwrap_err();
        assert!(err.to_string().contains("dkim=pass header.d=evil.example"), "{err}");
        assert!(err.to_string().contains("for example.com"), "{err}");
    }

    #[test]
    fn display_name_trick_yields_the_real_mailbox() {
        let msg = parse_fixture("from_display_name_trick.eml");
        // The caller compares this with the expected sender and refuses.
        assert_eq!(msg.from, "mallory@evil.example");
        assert_ne!(msg.from, "alice@example.com");
        // Mallory's own domain is authenticated, which proves nothing about Alice.
        assert_eq!(authenticate(&msg, ID), Ok(AuthMethod::Dkim));

        let raw = b"From: alice@example.com <mallory@evil.example>\r\nSubject: x\r\n\r\n";
        assert_eq!(parse_message(raw).map(|m| m.from), Ok("mallory@evil.example".into()));
    }

    #[test]
    fn folded_subject_and_lowercase_names() {
        let msg = parse_fixture("folded_subject.eml");
        assert_eq!(msg.from, "alice@example.com");
        assert_eq!(msg.subject, CODE_SUBJECT);
        assert_eq!(authenticate(&msg, ID), Ok(AuthMethod::Dkim));
    }

    #[test]
    fn encoded_word_subject() {
        let msg = parse_fixture("encoded_subject.eml");
        assert_eq!(msg.from, "alice@example.com");
        assert_eq!(msg.subject, "验证 邮箱 — agentdir verify K7Q2-M9XD-4TPA ✓");
        assert!(msg.subject.contains(CODE_SUBJECT));
        assert_eq!(authenticate(&msg, ID), Ok(AuthMethod::Dkim));
    }

    #[test]
    fn lf_only_line_endings() {
        let raw = fixture("lf_only.eml");
        assert!(!raw.contains(&b'\r'));
        let msg = parse_message(&raw).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(msg.subject, CODE_SUBJECT);
        assert_eq!(authenticate(&msg, ID), Ok(AuthMethod::Dkim));
    }

    #[test]
    fn multipart_body() {
        let msg = parse_fixture("multipart.eml");
        assert_eq!(msg.subject, CODE_SUBJECT);
        assert_eq!(msg.authentication_results.len(), 1);
        assert_eq!(authenticate(&msg, ID), Ok(AuthMethod::Dkim));
    }

    #[test]
    fn results_inside_the_body_do_not_count() {
        let err = authenticated("ar_in_body.eml").unwrap_err();
        assert!(matches!(err, MailRejection::NotAuthenticated { .. }), "{err}");
    }

    #[test]
    fn comments_and_quoted_strings() {
        let msg = parse_fixture("ar_comments_quoted.eml");
        let ar = &msg.authentication_results[0];
        assert_eq!(ar.authserv_id, "MX.AgentDir.Example");
        assert_eq!(ar.version, Some(1));
        assert!(!ar.malformed);
        assert_eq!(ar.results.len(), 2);
        let dkim = &ar.results[0];
        assert_eq!((dkim.method.as_str(), dkim.result.as_str()), ("dkim", "pass"));
        assert_eq!(dkim.reason.as_deref(), Some("sig ok; \"really\" (yes)"));
        assert_eq!(dkim.property("header", "d"), Some("Example.COM"));
        assert_eq!(dkim.property("header", "i"), Some("@example.com"));
        let spf = &ar.results[1];
        assert_eq!(spf.result, "neutral");
        assert_eq!(spf.property("smtp", "mailfrom"), Some("weird local@example.com"));
        assert_eq!(authenticate(&msg, ID), Ok(AuthMethod::Dkim));
    }

    #[test]
    fn several_headers_with_our_id() {
        assert_eq!(authenticated("multiple_ours.eml"), Ok(AuthMethod::Spf));
    }

    #[test]
    fn other_host_pass_does_not_override_ours() {
        let err = authenticated("other_host_pass_ours_fail.eml").unwrap_err();
        assert!(matches!(err, MailRejection::NotAuthenticated { .. }), "{err}");
    }

    #[test]
    fn two_from_headers_are_rejected() {
        assert_eq!(parse_message(&fixture("multiple_from.eml")), Err(MailRejection::MultipleFrom));
    }

    #[test]
    fn from_and_subject_shape() {
        let cases: &[(&[u8], MailRejection)] = &[
            (b"", MailRejection::Empty),
            (b" \r\n", MailRejection::Empty),
            (b"Subject: hi\r\n\r\nbody", MailRejection::MissingFrom),
            (b"From: a@example.com\r\n\r\nbody", MailRejection::MissingSubject),
            (b"From: a@example.com\r\nSubject: a\r\nSubject: b\r\n\r\n", MailRejection::MultipleSubject),
            (
                b"From: a@example.com, b@example.com\r\nSubject: x\r\n\r\n",
                MailRejection::FromNotSingleMailbox,
            ),
            (b"From: team: a@example.com;\r\nSubject: x\r\n\r\n", MailRejection::FromNotSingleMailbox),
            (b"From: Alice\r\nSubject: x\r\n\r\n", MailRejection::InvalidFrom),
            (b"From: <@example.com>\r\nSubject: x\r\n\r\n", MailRejection::InvalidFrom),
        ];
        for (raw, want) in cases {
            assert_eq!(
                parse_message(raw).as_ref().map(|m| &m.from),
                Err(want),
                "{}",
                String::from_utf8_lossy(raw)
            );
        }
        let mut huge = b"From: a@example.com\r\nSubject: x\r\n\r\n".to_vec();
        huge.resize(MAX_MESSAGE_BYTES + 1, b'a');
        assert_eq!(parse_message(&huge), Err(MailRejection::TooLarge));
        // Text with no header fields at all.
        assert!(parse_message(b"\x00\x01\x02 not a message").is_err());
    }

    #[test]
    fn quoted_local_part() {
        let raw = b"From: Alice <\"Alice Smith\"@Example.com>\r\nSubject: s\r\n\r\n";
        let msg = parse_message(raw).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(msg.from, "\"alice smith\"@example.com");
        assert_eq!(msg.from_domain, "example.com");
        // Without angle brackets mail-parser reads the quoted part as a display name; the
        // leftover `@example.com` is refused rather than guessed at.
        let raw = b"From: \"Alice Smith\"@Example.com\r\nSubject: s\r\n\r\n";
        assert_eq!(parse_message(raw), Err(MailRejection::InvalidFrom));
    }

    #[test]
    fn from_with_comment_and_odd_case() {
        let raw = b"fRoM: (Alice) Alice.Smith+tag@Sub.Example.COM (home)\nsubject: \n\n";
        let msg = parse_message(raw).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(msg.from, "alice.smith+tag@sub.example.com");
        assert_eq!(msg.from_domain, "sub.example.com");
        assert_eq!(msg.subject, "");
    }

    #[test]
    fn mbox_from_line_from_a_pipe_transport() {
        // Exim's pipe transport and Postfix `pipe flags=F` put an mbox "From " line first.
        let mut raw = b"From bounce@example.com  Tue Nov  3 10:15:02 2026\r\n".to_vec();
        raw.extend_from_slice(&fixture("genuine_dkim_pass.eml"));
        let msg = parse_message(&raw).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(msg.from, "alice@example.com");
        assert_eq!(msg.subject, CODE_SUBJECT);
        assert_eq!(authenticate(&msg, ID), Ok(AuthMethod::Dkim));
    }

    #[test]
    fn legacy_charsets_in_encoded_words() {
        // GB18030 and ISO-2022-JP, as Chinese and Japanese mail clients still send them.
        for (subject, want) in [
            ("=?GB18030?B?0enWpCBhZ2VudGRpciB2ZXJpZnkgSzdRMg==?=", "验证 agentdir verify K7Q2"),
            ("=?ISO-2022-JP?B?GyRCOCE+WhsoQiBhZ2VudGRpciB2ZXJpZnkgSzdRMg==?=", "検証 agentdir verify K7Q2"),
            ("=?ISO-8859-1?Q?V=E9rifier?= agentdir verify K7Q2", "Vérifier agentdir verify K7Q2"),
        ] {
            let raw = format!("From: a@example.com\r\nSubject: {subject}\r\n\r\n");
            let msg = parse_message(raw.as_bytes()).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(msg.subject, want);
        }
    }

    fn ar(value: &str) -> AuthenticationResults {
        parse_authentication_results(value).unwrap_or_else(|| panic!("unparsed: {value}"))
    }

    #[test]
    fn real_world_headers() {
        let gmail = ar(" mx.google.com;\r\n       dkim=pass header.i=@example.com \
            header.s=20230601 header.b=AbCdEf12;\r\n       spf=pass (google.com: domain of \
            alice@example.com designates 209.85.220.41 as permitted sender) \
            smtp.mailfrom=alice@example.com;\r\n       dmarc=pass (p=NONE sp=QUARANTINE \
            dis=NONE) header.from=example.com\r\n");
        assert_eq!(gmail.authserv_id, "mx.google.com");
        let methods: Vec<_> = gmail.results.iter().map(|r| r.method.as_str()).collect();
        assert_eq!(methods, ["dkim", "spf", "dmarc"]);
        assert_eq!(gmail.results[1].property("smtp", "mailfrom"), Some("alice@example.com"));

        let rspamd = ar(" mx.example.org;\r\n\tdkim=pass header.d=example.com header.s=dkim \
            header.b=Xyz/+1=;\r\n\tspf=pass (mx.example.org: domain of \"bounce+x@example.com\" \
            designates 192.0.2.4 as permitted sender) smtp.mailfrom=\"bounce+x@example.com\";\r\n\t\
            dmarc=pass (policy=none) header.from=example.com");
        assert!(!rspamd.malformed);
        assert_eq!(rspamd.results[0].property("header", "b"), Some("Xyz/+1="));
        assert_eq!(rspamd.results[1].property("smtp", "mailfrom"), Some("bounce+x@example.com"));

        // Microsoft writes no authserv-id at all: such a header names no host.
        assert_eq!(
            parse_authentication_results(
                " spf=pass (sender IP is 198.51.100.1) smtp.mailfrom=example.com; dkim=pass \
                 (signature was verified) header.d=example.com;dmarc=pass action=none \
                 header.from=example.com;compauth=pass reason=100"
            ),
            None
        );
        let ms_tail = ar(" x.example; dmarc=pass action=none header.from=example.com");
        assert_eq!(ms_tail.results[0].property("", "action"), Some("none"));

        // RFC 8601 appendix B.
        let none = ar(" example.com 1; none");
        assert_eq!((none.version, none.results.len(), none.malformed), (Some(1), 0, false));
        let b6 = ar(" example.com;\r\n  dkim=pass reason=\"good signature\"\r\n    \
            header.i=@mail-router.example.net;\r\n  dkim=fail reason=\"bad signature\"\r\n    \
            header.i=@newyork.example.com");
        assert_eq!(b6.results.len(), 2);
        assert_eq!(b6.results[1].reason.as_deref(), Some("bad signature"));
        let quoted_id = ar(" \"example.com\"; auth=pass (cram-md5) smtp.auth=sender@example.net;");
        assert_eq!(quoted_id.authserv_id, "example.com");
        assert_eq!(quoted_id.results[0].property("smtp", "auth"), Some("sender@example.net"));
    }

    #[test]
    fn malformed_headers_prove_nothing() {
        for value in [
            " mx.agentdir.example; dkim=pass header.d=example.com (unclosed",
            " mx.agentdir.example; dkim=pass header.d=\"example.com",
            " mx.agentdir.example; dkim header.d=example.com",
            " mx.agentdir.example; =pass",
            " mx.agentdir.example dkim=pass header.d=example.com",
            " mx.agentdir.example; dkim=pass header.d",
            " mx.agentdir.example 99999999999; dkim=pass header.d=example.com",
        ] {
            let parsed = ar(value);
            assert!(parsed.malformed, "{value}");
            assert!(parsed.results.is_empty(), "{value}");
        }
        for value in ["", "   ", " ; dkim=pass", " (only a comment)", " (unclosed"] {
            assert_eq!(parse_authentication_results(value), None, "{value:?}");
        }

        let raw = "Authentication-Results: mx.agentdir.example; dkim=pass header.d=example.com (x\r\n\
                   From: a@example.com\r\nSubject: s\r\n\r\n";
        let msg = parse_message(raw.as_bytes()).unwrap_or_else(|e| panic!("{e}"));
        let err = authenticate(&msg, ID).unwrap_err();
        assert!(err.to_string().ends_with("(seen: 1 unparsable header(s))"), "{err}");
    }

    #[test]
    fn spf_mailfrom_bare_domain_and_header_i() {
        let msg = |ar: &str| {
            let raw = format!("Authentication-Results: {ar}\r\nFrom: a@example.com\r\nSubject: s\r\n\r\n");
            parse_message(raw.as_bytes()).unwrap_or_else(|e| panic!("{e}"))
        };
        let pass = [
            "mx.agentdir.example; spf=pass smtp.mailfrom=example.com",
            "mx.agentdir.example; spf=pass smtp.mailfrom=<bounce@EXAMPLE.com>",
            "mx.agentdir.example; dkim=fail header.d=example.com; dkim=pass header.d=example.com",
        ];
        for ar in pass {
            assert!(is_authenticated(&msg(ar), ID), "{ar}");
        }
        let fail = [
            "mx.agentdir.example; spf=pass smtp.mailfrom=sub.example.com",
            "mx.agentdir.example; spf=pass smtp.helo=example.com",
            "mx.agentdir.example; spf=pass smtp.mailfrom=",
            "mx.agentdir.example; dkim=pass header.d=example.com.evil.example",
            "mx.agentdir.example; dkim=pass header.d=notexample.com",
            "mx.agentdir.example; dkim=pass",
            // header.i does not stand in for header.d.
            "mx.agentdir.example; dkim=pass header.i=@example.com",
            "mx.agentdir.example; dkim=pass header.i=a@Example.Com.",
            "mx.agentdir.example; dkim=pass header.i=a@example.com header.d=other.example",
            "mx.agentdir.example; dkim=neutral header.d=example.com",
            "mx.agentdir.example; dmarc=pass header.from=example.com",
            "mx.agentdir.example.evil; dkim=pass header.d=example.com",
            "mx; dkim=pass header.d=example.com",
        ];
        for ar in fail {
            assert!(!is_authenticated(&msg(ar), ID), "{ar}");
        }
    }

    #[test]
    fn rejection_reasons_are_one_line() {
        let raw = "Authentication-Results: mx.agentdir.example; dkim=fail header.d=\"a\r\n b\"\r\n\
                   From: a@example.com\r\nSubject: s\r\n\r\n";
        let msg = parse_message(raw.as_bytes()).unwrap_or_else(|e| panic!("{e}"));
        let reason = authenticate(&msg, ID).unwrap_err().to_string();
        assert!(!reason.contains(['\r', '\n']), "{reason:?}");
        let long = format!("mx.agentdir.example; dkim=fail header.d={}", "x".repeat(500));
        let raw = format!("Authentication-Results: {long}\r\nFrom: a@example.com\r\nSubject: s\r\n\r\n");
        let msg = parse_message(raw.as_bytes()).unwrap_or_else(|e| panic!("{e}"));
        assert!(authenticate(&msg, ID).unwrap_err().to_string().len() < 300);
    }

    fn with_headers(headers: &str) -> InboundMessage {
        let raw = format!("{headers}From: a@example.com\r\nSubject: s\r\n\r\nbody\r\n");
        parse_message(raw.as_bytes()).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn a_forged_pass_beside_the_genuine_failure_is_refused() {
        let forged = "Authentication-Results: mx.agentdir.example; dkim=pass header.d=example.com\r\n";
        for genuine in [
            "Authentication-Results: mx.agentdir.example; dkim=fail header.d=example.com\r\n",
            "Authentication-Results: mx.agentdir.example; dkim=none\r\n",
            "Authentication-Results: mx.agentdir.example; none\r\n",
            "Authentication-Results: MX.AGENTDIR.EXAMPLE; dkim=neutral (bad format) header.d=example.com\r\n",
        ] {
            for headers in [format!("{forged}{genuine}"), format!("{genuine}{forged}")] {
                let err = authenticate(&with_headers(&headers), ID).unwrap_err();
                assert!(matches!(err, MailRejection::Conflicting { method: "dkim", .. }), "{headers}: {err}");
            }
        }
        let spf = "Authentication-Results: mx.agentdir.example; spf=pass smtp.mailfrom=example.com\r\n\
                   Authentication-Results: mx.agentdir.example; spf=softfail smtp.mailfrom=example.com\r\n";
        let err = authenticate(&with_headers(spf), ID).unwrap_err();
        assert!(matches!(err, MailRejection::Conflicting { method: "spf", .. }), "{err}");
        assert_eq!(
            err.to_string(),
            "the Authentication-Results headers from mx.agentdir.example disagree about spf"
        );
    }

    #[test]
    fn separate_milters_that_agree_still_verify() {
        let headers = "Authentication-Results: mx.agentdir.example; dkim=pass header.d=example.com\r\n\
                       Authentication-Results: mx.agentdir.example; spf=pass smtp.mailfrom=example.com\r\n\
                       Authentication-Results: mx.agentdir.example; dmarc=pass header.from=example.com\r\n\
                       Authentication-Results: other.example; dkim=fail header.d=example.com\r\n";
        assert_eq!(authenticate(&with_headers(headers), ID), Ok(AuthMethod::Dkim));
        // One milter's spf failure says nothing against another's dkim pass.
        let headers = "Authentication-Results: mx.agentdir.example; dkim=pass header.d=example.com\r\n\
                       Authentication-Results: mx.agentdir.example; spf=fail smtp.mailfrom=example.com\r\n";
        assert_eq!(authenticate(&with_headers(headers), ID), Ok(AuthMethod::Dkim));
    }

    #[test]
    fn a_field_name_with_space_before_the_colon_is_never_trusted() {
        for name in ["Authentication-Results :", "Authentication-Results\t:", "authentication-results  :"] {
            let headers = format!("{name} mx.agentdir.example; dkim=pass header.d=example.com\r\n");
            let msg = with_headers(&headers);
            assert!(msg.authentication_results.is_empty(), "{name}");
            assert!(matches!(authenticate(&msg, ID), Err(MailRejection::NoAuthenticationResults { .. })));
            // Beside the genuine failure it neither passes nor counts as a second opinion.
            let genuine = "Authentication-Results: mx.agentdir.example; dkim=fail header.d=example.com\r\n";
            let err = authenticate(&with_headers(&format!("{headers}{genuine}")), ID).unwrap_err();
            assert!(matches!(err, MailRejection::NotAuthenticated { .. }), "{err}");
        }
        // Any letter case of the name itself is a plain name.
        let headers = "AUTHENTICATION-RESULTS: mx.agentdir.example; dkim=pass header.d=example.com\r\n";
        assert_eq!(authenticate(&with_headers(headers), ID), Ok(AuthMethod::Dkim));
    }
}
