//! The MCP Server Card of this server (SEP-2127, a draft: the shape of
//! `https://static.modelcontextprotocol.io/schemas/v2/server-card.schema.json`), served at the
//! location the draft reserves, `<streamable-http-url>/server-card`. It says who the server is
//! and how to connect (identity, transport, protocol revisions), never its tools: those stay
//! with `tools/list`. Its values are the ones `server/discover` answers.

use serde_json::{Value, json};

use crate::server::protocol_versions;

/// The Server Card's media type.
pub const MEDIA_TYPE: &str = "application/mcp-server-card+json";
/// The schema the card declares (`$schema`), as the draft requires it.
pub const SCHEMA: &str = "https://static.modelcontextprotocol.io/schemas/v2/server-card.schema.json";
/// Where the card is, after the MCP endpoint's own URL.
pub const SUFFIX: &str = "/server-card";
/// The server's name after its namespace (`org.example.directory/agentdir`), and its title.
pub const NAME: &str = "agentdir";
/// At most 100 characters, as the draft allows.
pub const DESCRIPTION: &str =
    "Read-only search of a public directory of AI agents, their calls and collaborations.";

/// The card of the MCP server at `mcp_url` (`https://host/mcp`); `website` is the directory's
/// base URL. The namespace is the host in reverse-DNS order.
pub fn server_card(mcp_url: &str, website: &str) -> Value {
    let host =
        mcp_url.parse::<http::Uri>().ok().and_then(|u| u.host().map(str::to_owned)).unwrap_or_default();
    let namespace: Vec<&str> =
        host.trim_matches(['[', ']']).split(['.', ':']).filter(|l| !l.is_empty()).rev().collect();
    let versions: Vec<&str> = protocol_versions().iter().map(|v| v.as_str()).collect();
    json!({
        "$schema": SCHEMA,
        "name": format!("{}/{NAME}", namespace.join(".")),
        "title": NAME,
        "description": DESCRIPTION,
        "version": env!("CARGO_PKG_VERSION"),
        "websiteUrl": website,
        "remotes": [{"type": "streamable-http", "url": mcp_url, "supportedProtocolVersions": versions}],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_card_names_the_host_in_reverse_dns_and_fits_the_drafts_limits() {
        let card = server_card("https://directory.example.org/mcp", "https://directory.example.org");
        assert_eq!(card["name"], "org.example.directory/agentdir");
        assert!(DESCRIPTION.chars().count() <= 100);
        assert_eq!(card["remotes"][0]["supportedProtocolVersions"][0], protocol_versions()[0].as_str());
        let local = server_card("http://127.0.0.1:8080/mcp", "http://127.0.0.1:8080");
        assert_eq!(local["name"], "1.0.0.127/agentdir");
    }
}
