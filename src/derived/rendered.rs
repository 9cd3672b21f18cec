//! A public document rendered once: its JSON bytes and the strong ETag derived from them, so the
//! tag changes exactly when the bytes do, on every node that renders the same document.

use axum::body::Bytes;
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::error::{Error, Result};

#[derive(Debug, Clone)]
pub struct Rendered {
    pub json: Bytes,
    /// Quoted, as it goes into the `ETag` header.
    pub etag: String,
}

impl Rendered {
    pub fn of<T: Serialize>(value: &T) -> Result<Rendered> {
        let json = serde_json::to_vec(value).map_err(|e| {
            tracing::error!(error = %e, "a document did not serialise");
            Error::Internal
        })?;
        Ok(Rendered::from_json(json))
    }

    pub fn from_json(json: Vec<u8>) -> Rendered {
        let digest = Sha256::digest(&json);
        let etag = format!("\"{}\"", hex(&digest[..12]));
        Rendered { json: Bytes::from(json), etag }
    }

    /// Whether an `If-None-Match` value names this document (RFC 9110 §13.1.2: `*`, or a list of
    /// entity tags compared weakly).
    pub fn matches(&self, if_none_match: &str) -> bool {
        if_none_match
            .split(',')
            .map(str::trim)
            .any(|tag| tag == "*" || tag.strip_prefix("W/").unwrap_or(tag) == self.etag)
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tag_follows_the_bytes_and_matches_as_http_says() {
        let a = Rendered::of(&serde_json::json!({"a": 1})).expect("renders");
        let b = Rendered::of(&serde_json::json!({"a": 2})).expect("renders");
        assert_ne!(a.etag, b.etag);
        assert_eq!(a.etag, Rendered::of(&serde_json::json!({"a": 1})).expect("renders").etag);
        assert!(a.etag.starts_with('"') && a.etag.ends_with('"') && a.etag.len() == 26);
        assert!(a.matches(&a.etag));
        assert!(a.matches(&format!("W/{}", a.etag)));
        assert!(a.matches(&format!("{}, {}", b.etag, a.etag)));
        assert!(a.matches("*"));
        assert!(!a.matches(&b.etag));
        assert!(!a.matches(a.etag.trim_matches('"')));
        assert!(!a.matches(""));
    }
}
