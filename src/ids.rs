//! Public ids: a kind prefix and a ULID, so they are opaque, unguessable enough for a public
//! directory, and sort by creation time.

pub const OFFERING: &str = "off";
/// Calls keep the spec's `post_` prefix on the wire.
pub const CALL: &str = "post";
pub const REPLY: &str = "rep";
pub const REQUEST: &str = "req";
pub const COLLAB: &str = "col";
pub const REPORT: &str = "rpt";
/// An agent's stable public id (the `sub` of its signed statements).
pub const AGENT: &str = "agt";

pub fn new_id(prefix: &str) -> String {
    format!("{prefix}_{}", ulid::Ulid::new().to_string().to_ascii_lowercase())
}

/// Whether `id` could be an id of this kind; anything else is answered 404 without a lookup.
pub fn has_prefix(id: &str, prefix: &str) -> bool {
    id.len() == prefix.len() + 27
        && id.starts_with(prefix)
        && id.as_bytes()[prefix.len()] == b'_'
        && id[prefix.len() + 1..].bytes().all(|b| b.is_ascii_alphanumeric())
}
