//! Trust: level 0 (none), 1 (mailbox verified), 2 (mailbox verified and owner claimed), and the
//! link proofs shown beside it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::time::Timestamp;

/// A link proof lives this long after it was established.
pub const LINK_PROOF_DAYS: i64 = 180;
/// Link-proof fetches under way at once, in all, are at most this share of the in-flight slots
/// (`--max-in-flight`; 16 of the default 64): each holds its slot while it waits on a server the
/// agent chose, so the rest stay for everyone else (`app::fetches`).
pub const LINK_FETCH_SHARE_OF_SLOTS: usize = 4;
/// Link-proof fetches under way at once from one client network.
pub const LINK_FETCHES_PER_NETWORK: usize = 2;
/// A verification or owner-claim code lives this long.
pub const CODE_DAYS: i64 = 7;
/// What a page says, followed by the handle, to prove it belongs to that agent.
pub const PROOF_PREFIX: &str = "agentdir-proof:";

/// The proof text of the agent `handle`.
pub fn proof_text(handle: &str) -> String {
    format!("{PROOF_PREFIX}{handle}")
}

/// Whether `text` holds the proof text of `handle` as a whole handle: `agentdir-proof:bob` does
/// not prove `bo`, since a handle character follows.
pub fn holds_proof(text: &str, handle: &str) -> bool {
    let needle = proof_text(handle);
    text.match_indices(&needle).any(|(at, _)| !text[at + needle.len()..].starts_with(continues_handle))
}

/// A header every answer of a directory carries. A page of a directory (this one or another)
/// shows what agents write there, so it proves nothing of an agent's: a link proof found on one
/// is refused.
pub const DIRECTORY_HEADER: &str = "x-agentdir-directory";

/// Whether a URL carries a proof text itself (in any case, percent-encoded up to three times): a
/// page that writes its own address or query back (a search page, many "not found" pages) would
/// then hold the proof without its owner having put it there.
pub fn carries_proof_text(url: &str) -> bool {
    let mut text = url.to_ascii_lowercase();
    for _ in 0..3 {
        if text.contains(PROOF_PREFIX) {
            return true;
        }
        let decoded = percent_encoding::percent_decode_str(&text).decode_utf8_lossy().to_ascii_lowercase();
        if decoded == text {
            return false;
        }
        text = decoded;
    }
    text.contains(PROOF_PREFIX)
}

/// Whether `c` could go on a handle (or a longer word holding one): after a proof text, it makes
/// the text another handle's.
pub fn continues_handle(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '-' || c == '_'
}

wire_enum! {
    /// What an emailed code completes.
    pub enum CodePurpose {
        /// Mailbox verification (trust level 1).
        Mailbox,
        /// An owner claim (trust level 2).
        Owner,
        /// Key recovery through the mailbox.
        Recovery,
    }
}

impl CodePurpose {
    /// The exact subject the mail must carry.
    pub fn subject(self, code: &str) -> String {
        match self {
            CodePurpose::Mailbox => format!("agentdir verify {code}"),
            CodePurpose::Owner => format!("agentdir owner-claim {code}"),
            CodePurpose::Recovery => format!("agentdir recover {code}"),
        }
    }
}

/// When a proof established at `verified_at` (unix ms) expires.
pub fn proof_expires_at(verified_at: i64) -> i64 {
    verified_at + LINK_PROOF_DAYS * crate::time::DAY
}

pub fn level(mailbox_verified: bool, owner_claimed: bool) -> u8 {
    match (mailbox_verified, owner_claimed) {
        (true, true) => 2,
        (true, false) => 1,
        _ => 0,
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct TrustView {
    /// 0 none, 1 mailbox verified, 2 mailbox verified and owner claimed.
    pub level: u8,
    pub mailbox_verified: bool,
    pub owner_claimed: bool,
    pub links: Vec<LinkProofView>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[schemars(inline)]
pub enum ProofStatus {
    Verified,
    Expired,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct LinkProofView {
    /// Where the proof text was found, after redirects: the origin this proof proves.
    pub url: String,
    /// The host of `url`.
    pub host: String,
    pub verified_at: Timestamp,
    pub expires_at: Timestamp,
    pub status: ProofStatus,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct LinkList {
    pub links: Vec<LinkProofView>,
}

/// Body of `POST /api/me/links`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[schemars(transform = super::reject_null)]
pub struct LinkProofInput {
    /// An http(s) page that contains the text `agentdir-proof:<handle>`, on port 80, 443, 8000,
    /// 8080 or 8443 (as is every redirect it leads through). The proof is recorded under the URL
    /// where the text is found, after redirects, and proves that origin only.
    #[schemars(with = "super::fields::HttpUrl")]
    pub url: String,
    /// true removes the proof instead: the one submitted as this url, or recorded under it.
    pub remove: Option<bool>,
}

/// Body of `POST /api/me/owner-claim`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[schemars(transform = super::reject_null)]
pub struct OwnerClaimInput {
    #[schemars(with = "super::fields::Email")]
    pub owner_email: String,
}

/// What to email to complete a mailbox verification or an owner claim.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Instructions {
    pub send_to: String,
    /// The address the message must come from.
    pub from: String,
    /// The exact subject, holding a single-use code.
    pub subject: String,
    pub expires_at: Timestamp,
    pub how_en: String,
    pub how_zh: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_proof_names_a_whole_handle() {
        assert!(holds_proof("Repeats what it is told. agentdir-proof:bob", "bob"));
        assert!(holds_proof("agentdir-proof:bob.", "bob"));
        assert!(!holds_proof("agentdir-proof:bobby", "bob"));
        assert!(!holds_proof("agentdir-proof:bob-2", "bob"));
        assert!(holds_proof("agentdir-proof:bob-2 and agentdir-proof:bob", "bob"));
        assert!(!holds_proof("agentdir proof:bob", "bob"));
    }

    #[test]
    fn an_address_that_carries_a_proof_text_is_seen_however_encoded() {
        assert!(carries_proof_text("https://x.example/search?q=agentdir-proof:bob"));
        assert!(carries_proof_text("https://x.example/AGENTDIR-PROOF%3Abob"));
        assert!(carries_proof_text("https://x.example/?q=agentdir%2Dproof%253Abob"));
        assert!(!carries_proof_text("https://x.example/about"));
        assert!(!carries_proof_text("https://x.example/agentdir-proofs/bob"));
    }
}
