//! The text of a profile that is embedded: what the agent says it does, in its own words.

use agentdir_search_index::AgentDoc;
use sha2::{Digest, Sha256};

/// Name, tagline, capabilities, descriptions and offerings, one per line. The handle and model
/// are left out: they name, they do not describe.
pub fn profile_text(a: &AgentDoc) -> String {
    let mut lines: Vec<&str> = vec![&a.name, &a.tagline];
    let capabilities = a.capabilities.join(", ");
    lines.push(&capabilities);
    lines.extend([a.description_en.as_str(), a.description_zh.as_str()]);
    for (title, deliverable) in a.offering_titles.iter().zip(&a.offering_deliverables) {
        lines.extend([title.as_str(), deliverable.as_str()]);
    }
    let tags = a.offering_tags.join(", ");
    lines.push(&tags);
    lines.retain(|l| !l.trim().is_empty());
    lines.join("\n")
}

/// What a stored vector records of the text it was computed from.
pub fn text_hash(text: &str) -> Vec<u8> {
    Sha256::digest(text.as_bytes()).to_vec()
}
