//! Endpoints: where an agent can be reached (an A2A agent, an MCP server, a plain HTTP
//! service), and what the directory's last liveness check found there.

use std::sync::LazyLock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use url::Url;

use super::schema::declared;
use crate::time::Timestamp;

/// Endpoints one agent may list.
pub const MAX_ENDPOINTS: u32 = 3;
/// The only ports the directory fetches from (web ports): an endpoint may use no other (it is
/// refused when it is set), and neither may a link proof's URL nor any redirect hop of a check
/// or a proof (the fetch is refused there). Lifted with the address rule for local testing.
pub const ALLOWED_PORTS: [u16; 5] = [80, 443, 8000, 8080, 8443];

/// `ALLOWED_PORTS` as a sentence says them: "80, 443, 8000, 8080 and 8443" with `sep` and `last`.
pub fn allowed_ports_text(sep: &str, last: &str) -> String {
    let ports = ALLOWED_PORTS.map(|p| p.to_string());
    match ports.split_last() {
        Some((tail, [])) => tail.clone(),
        Some((tail, head)) => format!("{}{last}{tail}", head.join(sep)),
        None => String::new(),
    }
}
/// How often an endpoint is checked again, unless the operator says otherwise.
pub const DEFAULT_CHECK_INTERVAL: Duration = Duration::from_secs(6 * 3600);
/// Each scheduled check moves by up to this share of the interval either way, so checks of
/// endpoints set at the same moment spread out instead of recurring together.
pub const CHECK_JITTER: f64 = 0.1;
/// Deadline of one whole check (every request it makes).
pub const CHECK_DEADLINE: Duration = Duration::from_secs(10);
/// Checks running at once, all hosts together.
pub const CHECKS_AT_ONCE: usize = 4;
/// How much of an answer a check reads (an A2A card, an MCP answer); a longer one is
/// `too_large`.
pub const CHECK_READ_BYTES: usize = 256 * 1024;
/// Where an A2A agent publishes its card, at the origin of its URL.
pub const A2A_WELL_KNOWN: &str = "/.well-known/agent-card.json";
/// The newest MCP revision whose handshake is `initialize`.
pub const MCP_INITIALIZE_REVISION: &str = "2025-11-25";
/// The MCP revision whose handshake is `server/discover`.
pub const MCP_DISCOVER_REVISION: &str = "2026-07-28";

wire_enum! {
    /// What speaks at an endpoint (see `EndpointInput::kind`). No doc per variant: an input enum
    /// stays a plain `enum` in its schema, so a wrong value is told the values it may take.
    pub enum EndpointKind {
        A2a,
        Mcp,
        Http,
    }
}

wire_enum! {
    /// What the last check found.
    pub enum EndpointStatus {
        /// Not checked yet.
        Unchecked,
        /// Answered as its kind should.
        Live,
        /// Did not answer (no connection, timeout, a server error); `reason` says which.
        Down,
        /// Answered, but not as its kind should (no valid A2A card, not an MCP server, a redirect
        /// that is not followed); `reason` says which.
        Invalid,
    }
}

wire_enum! {
    /// Why an endpoint is `down` or `invalid`, in a few bounded words: never the text of another
    /// server's error, and never a difference between an address that was refused, one that could
    /// not be found and one that is not public (a check must not map a network for whoever lists
    /// endpoints).
    pub enum EndpointReason {
        /// No answer within the check's deadline.
        Timeout,
        /// No connection: the name did not resolve, the address is not public, or nothing
        /// accepted the connection.
        Unreachable,
        /// The TLS handshake failed (a certificate, a protocol, plain HTTP on an https URL).
        Tls,
        /// An HTTP status that is not what its kind answers (a 4xx, a 5xx).
        HttpStatus,
        /// A redirect the check does not follow: more than 3, an MCP POST sent to another origin,
        /// or to a URL the directory does not fetch.
        Redirect,
        /// a2a: no valid agent card at the URL nor at its origin's well-known path.
        NotA2aCard,
        /// mcp: the handshake or tools/list did not go as the protocol says.
        McpHandshake,
        /// The answer was larger than a check reads (256 KiB).
        TooLarge,
    }
}

wire_enum! {
    /// How an endpoint shows it is the agent's own, for what it exposes to count as the agent's
    /// (stricter than `owned`: a page with the proof text elsewhere on a shared origin does not do).
    pub enum EndpointProof {
        /// The proof text is in the endpoint's own answer: a field of the A2A card, the MCP
        /// server's instructions or description.
        Answer,
        /// The proof text is at the origin's `/.well-known/agentdir-proof`.
        WellKnown,
    }
}

wire_enum! {
    /// What an MCP server asks of its clients before it serves them.
    pub enum EndpointAuth {
        /// It answered 401 with an OAuth challenge (it is live; clients must authorise).
        Required,
    }
}

/// An http(s) URL on one of `ALLOWED_PORTS` (or the scheme's own port): what the schema of an
/// endpoint's URL says, so that the published schema and the server agree on the port rule.
pub static URL_PATTERN: LazyLock<String> = LazyLock::new(|| {
    let ports = ALLOWED_PORTS.map(|p| p.to_string()).join("|");
    format!("^[Hh][Tt][Tt][Pp][Ss]?://(\\[[0-9A-Fa-f:.]+\\]|[^\\s/?#@:\\[\\]]+)(:({ports}))?([/?#][^\\s]*)?$")
});

/// Set once at start when the operator lets fetches reach non-public addresses (local testing
/// only): endpoints may then use any port, and the schemas say so.
static PORT_RULE_LIFTED: AtomicBool = AtomicBool::new(false);

/// Lifts the port rule for this process; call it before any schema is published or compiled.
pub fn lift_port_rule() {
    PORT_RULE_LIFTED.store(true, Ordering::Relaxed);
}

pub fn port_rule_lifted() -> bool {
    PORT_RULE_LIFTED.load(Ordering::Relaxed)
}

fn url_rules(schema: &mut schemars::Schema) {
    super::reject_null(schema);
    if port_rule_lifted() {
        return;
    }
    if let Some(url) =
        schema.get_mut("properties").and_then(|p| p.get_mut("url")).and_then(|u| u.as_object_mut())
    {
        url.insert("pattern".into(), URL_PATTERN.as_str().into());
        url.insert(declared::KEYWORD.into(), serde_json::json!({"pattern": declared::ENDPOINT_PORT}));
    }
}

/// One endpoint as sent on registration or `PATCH /api/me`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[schemars(transform = url_rules)]
pub struct EndpointInput {
    /// `a2a`: an A2A agent, whose agent card is checked; `mcp`: an MCP server over streamable
    /// HTTP, whose handshake and tools/list are checked; `http`: any HTTP service, which must
    /// answer 2xx.
    pub kind: EndpointKind,
    #[schemars(
        with = "super::fields::HttpUrl",
        description = const_format::concatcp!(
            "An http(s) URL on a public address, on port 80, 443, 8000, 8080 or 8443 (a non-public address reads down, unreachable, when checked). a2a: the agent card's URL or the agent's origin (",
            A2A_WELL_KNOWN,
            " is tried there); mcp: the streamable HTTP endpoint; http: any page that answers 2xx."
        )
    )]
    pub url: String,
}

/// Where an endpoint's origin may publish the proof text instead of its answer.
pub const PROOF_WELL_KNOWN: &str = "/.well-known/agentdir-proof";
/// Skills or tools kept per endpoint.
pub const OBSERVED_PER_ENDPOINT: usize = 50;
/// Characters kept per skill or tool, all its texts together (cut at a word).
pub const OBSERVED_ENTRY_CHARS: usize = 200;
/// Characters of skills and tools kept per agent, all endpoints together: what an agent's
/// endpoints expose counts in search as one more field of its profile, no larger than one.
pub const OBSERVED_AGENT_CHARS: usize = 4_000;
/// Of an entry's characters, at most this many for its name, and for each tag.
const OBSERVED_NAME_CHARS: usize = 64;
const OBSERVED_TAG_CHARS: usize = 32;

/// A skill on an A2A card or a tool an MCP server lists, as a check saw it: other servers'
/// words, kept short (see [`OBSERVED_ENTRY_CHARS`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Observed {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// a2a only.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// a2a only.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub examples: Vec<String>,
}

impl Observed {
    /// An entry cut to [`OBSERVED_ENTRY_CHARS`] in all: the name first, then the description,
    /// the tags and the examples while room is left, each cut at a word. `None` without a name.
    pub fn kept(name: &str, description: Option<&str>, tags: &[&str], examples: &[&str]) -> Option<Observed> {
        let name = cut_at_word(name, OBSERVED_NAME_CHARS);
        if !super::schema::is_non_blank(&name) {
            return None;
        }
        let mut room = OBSERVED_ENTRY_CHARS - name.chars().count();
        // Past the name, a text is cut only between words: a word cut in half is dropped.
        let mut take = |text: &str, most: usize| -> Option<String> {
            let kept = cut_between_words(text, most.min(room));
            let n = kept.chars().count();
            (n > 0).then(|| {
                room -= n;
                kept
            })
        };
        let description = description.and_then(|d| take(d, usize::MAX));
        let tags = tags.iter().filter_map(|t| take(t, OBSERVED_TAG_CHARS)).collect();
        let examples = examples.iter().filter_map(|e| take(e, usize::MAX)).collect();
        Some(Observed { name, description, tags, examples })
    }

    /// Characters the entry holds, as the budgets count them.
    pub fn chars(&self) -> usize {
        self.texts().map(|t| t.chars().count()).sum()
    }

    /// Its texts, name first: what search reads of it.
    pub fn texts(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.name.as_str())
            .chain(self.description.as_deref())
            .chain(self.tags.iter().map(String::as_str))
            .chain(self.examples.iter().map(String::as_str))
    }
}

/// `text` without control characters or runs of white space, cut to at most `max` characters at
/// the last word boundary (a single longer word is cut where it must be).
pub fn cut_at_word(text: &str, max: usize) -> String {
    let (clean, cut) = cut_words(text, max);
    cut.unwrap_or_else(|| clean.chars().take(max).collect())
}

/// As [`cut_at_word`], but empty when not even the first word fits.
fn cut_between_words(text: &str, max: usize) -> String {
    cut_words(text, max).1.unwrap_or_default()
}

/// The cleaned text, and its cut at the last word boundary within `max` (the whole text when
/// it fits; `None` when no boundary is within reach).
fn cut_words(text: &str, max: usize) -> (String, Option<String>) {
    let clean: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let clean: String = clean.chars().filter(|c| !c.is_control()).collect();
    if clean.chars().count() <= max {
        return (clean.clone(), Some(clean));
    }
    let head: Vec<char> = clean.chars().take(max + 1).collect();
    // A word ends before a space, and beside a character of a script written without spaces
    // (Chinese, Japanese): there any character boundary is one.
    let cut = (1..=max)
        .rev()
        .find(|&at| head[at] == ' ' || unspaced(head[at - 1]) || unspaced(head[at]))
        .map(|at| head[..at].iter().collect::<String>().trim_end().to_owned())
        .filter(|kept| !kept.is_empty());
    (clean, cut)
}

/// A character of a script written without spaces between words: CJK punctuation, kana, Han
/// ideographs (the extensions too) and full-width forms.
fn unspaced(c: char) -> bool {
    matches!(c,
        '\u{3000}'..='\u{30FF}' | '\u{3400}'..='\u{4DBF}' | '\u{4E00}'..='\u{9FFF}'
        | '\u{F900}'..='\u{FAFF}' | '\u{FF00}'..='\u{FFEF}' | '\u{20000}'..='\u{3134F}')
}

/// What each endpoint of an agent (its findings, in the card's order) exposes as the agent's:
/// nothing unless it is live and proven; within the agent's [`OBSERVED_AGENT_CHARS`], entries in
/// endpoint order, then list order, while the budget lasts.
pub fn counted_observed<'a>(findings: impl Iterator<Item = &'a Finding>) -> Vec<Vec<Observed>> {
    let mut left = OBSERVED_AGENT_CHARS;
    findings
        .map(|f| {
            let counts = f.status() == EndpointStatus::Live && f.proof.is_some();
            let list: &[Observed] = if counts { &f.observed } else { &[] };
            list.iter()
                .take_while(|o| {
                    let n = o.chars();
                    let fits = n <= left;
                    if fits {
                        left -= n;
                    }
                    fits
                })
                .cloned()
                .collect()
        })
        .collect()
}

/// Pages of `tools/list` a check follows before its count stops (a server that pages forever).
pub const TOOL_PAGES_COUNTED: usize = 10;

/// One endpoint as the card shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct EndpointView {
    pub kind: EndpointKind,
    pub url: String,
    pub status: EndpointStatus,
    /// When the status last changed (when the endpoint was set, while unchecked).
    pub status_since: Timestamp,
    /// A live link proof of this agent sits on the same origin (scheme, host and port): the
    /// agent shows it controls that server.
    pub owned: bool,
    /// a2a: the name on its card; mcp: the server's name. Null until a check finds it.
    pub name: Option<String>,
    /// a2a: the card's protocol version; mcp: the protocol revision it speaks.
    pub protocol_version: Option<String>,
    /// a2a: the skills on its card.
    pub skill_count: Option<u32>,
    #[schemars(description = const_format::concatcp!(
        "mcp: the tools it lists, counted over at most ", TOOL_PAGES_COUNTED,
        " pages of tools/list (a server that pages past them has more)."
    ))]
    pub tool_count: Option<u32>,
    /// mcp: `required` when it answered 401 with an OAuth challenge.
    pub auth: Option<EndpointAuth>,
    /// Why it is `down` or `invalid` (null otherwise).
    #[schemars(schema_with = "super::schema::open_set_or_null::<EndpointReason>")]
    pub reason: Option<EndpointReason>,
    /// How the endpoint itself shows it is this agent's (its own answer holds the agent's proof
    /// text, or its origin's `/.well-known/agentdir-proof` does); null when it does not. Only
    /// then, and while it is live, what it exposes is shown and searched as the agent's, and one
    /// endpoint URL counts for one agent: the first that proved it.
    pub proof: Option<EndpointProof>,
    /// a2a, proven and live: the skills on its card (at most 50, 200 characters each, 4,000 for
    /// all of the agent's endpoints), other servers' words as the check saw them.
    pub skills: Option<Vec<Observed>>,
    /// mcp, proven and live: the tools it lists (the same bounds as `skills`).
    pub tools: Option<Vec<Observed>>,
}

/// What one check found: the part of an endpoint a check may change.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Finding {
    pub status: Option<EndpointStatus>,
    /// Why the status is `down` or `invalid`.
    pub reason: Option<EndpointReason>,
    pub name: Option<String>,
    pub protocol_version: Option<String>,
    /// Skills (a2a) or tools (mcp).
    pub count: Option<u32>,
    pub auth_required: bool,
    /// How the endpoint proved it is the agent's (see `EndpointView::proof`).
    pub proof: Option<EndpointProof>,
    /// Skills (a2a) or tools (mcp) of a proven, live endpoint, at most
    /// [`OBSERVED_PER_ENDPOINT`], each within [`OBSERVED_ENTRY_CHARS`].
    pub observed: Vec<Observed>,
}

impl Finding {
    pub fn live() -> Finding {
        Finding { status: Some(EndpointStatus::Live), ..Finding::default() }
    }

    pub fn down(reason: EndpointReason) -> Finding {
        Finding { status: Some(EndpointStatus::Down), reason: Some(reason), ..Finding::default() }
    }

    pub fn invalid(reason: EndpointReason) -> Finding {
        Finding { status: Some(EndpointStatus::Invalid), reason: Some(reason), ..Finding::default() }
    }

    pub fn status(&self) -> EndpointStatus {
        self.status.unwrap_or(EndpointStatus::Unchecked)
    }
}

/// `url` with its host name's trailing dots dropped (`example.org.` is `example.org`): one host
/// to endpoint URLs, link proofs and the owned rule alike.
pub fn drop_trailing_dots(url: &mut Url) {
    if let Some(host) =
        url.host_str().filter(|h| h.ends_with('.')).map(|h| h.trim_end_matches('.').to_owned())
        && !host.is_empty()
    {
        let _ = url.set_host(Some(&host));
    }
}

/// The origin of an http(s) URL (`https://host:port`), as a browser compares them, the host
/// without trailing dots (endpoint URLs are kept without them; a link proof keeps the URL where
/// its text was found).
pub fn origin(url: &str) -> Option<String> {
    let mut u = Url::parse(url).ok()?;
    drop_trailing_dots(&mut u);
    match u.origin() {
        o @ url::Origin::Tuple(..) => Some(o.ascii_serialization()),
        url::Origin::Opaque(_) => None,
    }
}

/// Whether an endpoint at `url` is owned: one of `live_proof_urls` (the agent's link proofs
/// that have not expired) has the same origin.
pub fn is_owned<'a>(url: &str, mut live_proof_urls: impl Iterator<Item = &'a str>) -> bool {
    let Some(mine) = origin(url) else { return false };
    live_proof_urls.any(|p| origin(p).as_deref() == Some(mine.as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_origin_is_the_same_with_a_trailing_dot_on_its_host() {
        assert!(is_owned("http://localhost:8080/mcp", ["http://localhost.:8080/about"].into_iter()));
        assert!(is_owned("https://a.example/x", ["https://A.EXAMPLE../proof"].into_iter()));
        assert!(!is_owned("https://a.example/x", ["https://a.example:8443/proof"].into_iter()));
    }

    #[test]
    fn the_url_pattern_is_the_port_rule() {
        let re = regex::Regex::new(&URL_PATTERN).expect("pattern");
        for ok in [
            "https://a.example",
            "http://a.example:8080/mcp",
            "https://[2001:db8::1]:8443/x?y#z",
            "HTTPS://A.EXAMPLE:443",
        ] {
            assert!(re.is_match(ok), "{ok}");
        }
        for bad in [
            "https://a.example:22/",
            "http://a.example:80800",
            "ftp://a.example",
            "https://u@a.example",
            "https://a.example:/",
        ] {
            assert!(!re.is_match(bad), "{bad}");
        }
    }

    #[test]
    fn ownership_compares_origins() {
        let proofs = ["https://example.com/about", "http://other.org:8080/x"];
        assert!(is_owned("https://example.com/mcp", proofs.iter().copied()));
        assert!(is_owned("https://EXAMPLE.com:443/a2a", proofs.iter().copied()));
        assert!(!is_owned("http://example.com/mcp", proofs.iter().copied()));
        assert!(!is_owned("https://sub.example.com/mcp", proofs.iter().copied()));
        assert!(is_owned("http://other.org:8080/", proofs.iter().copied()));
        assert!(!is_owned("http://other.org/", proofs.iter().copied()));
        assert!(!is_owned("not a url", proofs.iter().copied()));
    }

    #[test]
    fn what_a_check_keeps_of_a_skill_is_bounded_and_cut_at_a_word() {
        assert_eq!(cut_at_word("  Echoes   text\tloudly. ", 100), "Echoes text loudly.");
        assert_eq!(cut_at_word("Echoes text loudly.", 12), "Echoes text");
        assert_eq!(cut_at_word("Supercalifragilistic", 5), "Super");
        assert_eq!(cut_between_words("Supercalifragilistic", 5), "");
        let long = "word ".repeat(100);
        let kept = Observed::kept("tide_table", Some(&long), &["tides", "harbour"], &["when is high water"])
            .unwrap();
        assert!(kept.chars() <= OBSERVED_ENTRY_CHARS, "{}", kept.chars());
        assert!(kept.description.as_deref().is_some_and(|d| d.ends_with("word")));
        // The description took the room: no tags, no examples past the bound.
        assert!(kept.tags.is_empty() && kept.examples.is_empty());
        let short = Observed::kept("Echo", Some("Echoes text."), &["echo"], &["say hi"]).unwrap();
        assert_eq!(short.texts().collect::<Vec<_>>(), ["Echo", "Echoes text.", "echo", "say hi"]);
        assert_eq!(Observed::kept("  ", Some("no name"), &[], &[]), None);
        assert_eq!(Observed::kept("\u{200b}\u{200b}", Some("an invisible name"), &[], &[]), None);
        // Chinese has no spaces: a word may end at any character, so a long description is cut,
        // not dropped.
        let chinese = "把播客音频转写成中文字幕并按时间轴输出SRT文件".repeat(20);
        let kept = Observed::kept("中文字幕", Some(&chinese), &[], &[]).unwrap();
        let description = kept.description.expect("the description, cut");
        assert_eq!(description.chars().count(), OBSERVED_ENTRY_CHARS - 4);
        assert!(chinese.starts_with(&description));
        assert_eq!(cut_between_words("README翻译成中文", 9), "README翻译成");
        assert_eq!(cut_between_words("README翻译", 5), "");
    }

    #[test]
    fn only_live_proven_endpoints_count_within_the_agents_budget() {
        let entry = Observed::kept("x", Some(&"y ".repeat(99)), &[], &[]).unwrap();
        let n = entry.chars();
        let found = |status, proof: Option<EndpointProof>, count: usize| Finding {
            status: Some(status),
            proof,
            observed: vec![entry.clone(); count],
            ..Finding::default()
        };
        let findings = [
            found(EndpointStatus::Live, Some(EndpointProof::Answer), OBSERVED_PER_ENDPOINT),
            found(EndpointStatus::Live, None, 3),
            found(EndpointStatus::Down, Some(EndpointProof::WellKnown), 3),
            found(EndpointStatus::Live, Some(EndpointProof::WellKnown), 3),
        ];
        let counted = counted_observed(findings.iter());
        assert_eq!(counted[0].len(), OBSERVED_AGENT_CHARS / n);
        assert!(counted[1].is_empty() && counted[2].is_empty());
        // The budget was spent by the first endpoint.
        assert!(counted[3].len() <= 1);
        assert!(counted.iter().flatten().map(Observed::chars).sum::<usize>() <= OBSERVED_AGENT_CHARS);
    }
}
