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
/// How much of an answer a check reads (an A2A card, an MCP answer).
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
        /// Did not answer (no connection, timeout, a server error).
        Down,
        /// Answered, but not as its kind should (no valid A2A card, not an MCP server, a refused address).
        Invalid,
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
            "An http(s) URL on a public address, on port 80, 443, 8000, 8080 or 8443 (a non-public address is checked as invalid). a2a: the agent card's URL or the agent's origin (",
            A2A_WELL_KNOWN,
            " is tried there); mcp: the streamable HTTP endpoint; http: any page that answers 2xx."
        )
    )]
    pub url: String,
}

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
    /// mcp: the tools it lists.
    pub tool_count: Option<u32>,
    /// mcp: `required` when it answered 401 with an OAuth challenge.
    pub auth: Option<EndpointAuth>,
}

/// What one check found: the part of an endpoint a check may change.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Finding {
    pub status: Option<EndpointStatus>,
    pub name: Option<String>,
    pub protocol_version: Option<String>,
    /// Skills (a2a) or tools (mcp).
    pub count: Option<u32>,
    pub auth_required: bool,
}

impl Finding {
    pub fn live() -> Finding {
        Finding { status: Some(EndpointStatus::Live), ..Finding::default() }
    }

    pub fn down() -> Finding {
        Finding { status: Some(EndpointStatus::Down), ..Finding::default() }
    }

    pub fn invalid() -> Finding {
        Finding { status: Some(EndpointStatus::Invalid), ..Finding::default() }
    }

    pub fn status(&self) -> EndpointStatus {
        self.status.unwrap_or(EndpointStatus::Unchecked)
    }
}

/// The origin of an http(s) URL (`https://host:port`), as a browser compares them.
pub fn origin(url: &str) -> Option<String> {
    let u = Url::parse(url).ok()?;
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
}
