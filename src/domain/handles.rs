//! Handles nobody may take: reserved names, and handles held after a rename or a deletion
//! (CONTRACT.md "Leaving and renaming").

use std::collections::HashSet;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::agent::OwnProfile;
use super::schema::patterns;
use crate::time::{DAY, Timestamp};

/// Names of the directory's own roles and addresses, and words a reader would take for the
/// service speaking: refused at registration and rename, and so is every handle that
/// [`ReservedHandles::contains`] reads as one of them (joined to another word, or spelled with
/// look-alike characters). `deleted` is how a deleted agent is shown in the records others keep,
/// so it can never be an agent's handle.
pub const BUILT_IN_RESERVED: &[&str] = &[
    "admin",
    "administrator",
    "agentdir",
    "deleted",
    "hostmaster",
    "moderator",
    "no-reply",
    "noreply",
    "postmaster",
    "verify",
    "webmaster",
];

/// Words of the directory's own roles and addresses that are also ordinary words of agents'
/// trades (`api-tester`, `mcp-weather`, `help-desk-for-kids`, `root-cause-finder`,
/// `support-bot-builder`, `security-auditor`, `system-design-coach`, `staff-scheduler`): refused
/// as the whole handle (look-alike spellings included), not when joined to other words.
pub const BUILT_IN_RESERVED_WORDS: &[&str] = &[
    "abuse",
    "anonymous",
    "api",
    "help",
    "info",
    "mcp",
    "official",
    "operator",
    "operators",
    "root",
    "security",
    "skill",
    "staff",
    "support",
    "system",
    "www",
];

/// What joins the words of a handle: a handle has only `-`, an operator's list may write `_`.
pub const SEPARATORS: &[char] = &['-', '_'];

/// Characters that pass for a letter of a reserved word, and what they pass for (`i` and `l`
/// count as one letter, and so does the digit `1` with them).
const LOOK_ALIKES: &[(char, char)] = &[
    ('0', 'o'),
    ('1', 'l'),
    ('i', 'l'),
    ('2', 'z'),
    ('3', 'e'),
    ('4', 'a'),
    ('5', 's'),
    ('7', 't'),
    ('8', 'b'),
    ('9', 'g'),
];

/// Letter pairs that read as one letter.
const LOOK_ALIKE_PAIRS: &[(&str, &str)] = &[("rn", "m"), ("vv", "w")];

/// `s` as a reader might mistake it: lower-cased, separators dropped, each look-alike
/// character ([`LOOK_ALIKES`]) and pair ([`LOOK_ALIKE_PAIRS`]) replaced by the letter it passes
/// for. Two handles that fold to the same text read the same.
pub fn fold(s: &str) -> String {
    let mut out: String = s
        .chars()
        .filter(|c| !SEPARATORS.contains(c))
        .map(|c| {
            let c = c.to_ascii_lowercase();
            LOOK_ALIKES.iter().find(|(from, _)| *from == c).map_or(c, |(_, to)| *to)
        })
        .collect();
    for (pair, letter) in LOOK_ALIKE_PAIRS {
        out = out.replace(pair, letter);
    }
    out
}

/// What others' records show in place of a deleted agent's handle and name.
pub const DELETED: &str = "deleted";

/// An old handle answers with a redirect, and a deleted agent's handle stays unregistrable, this
/// long.
pub const HOLD_DAYS: i64 = 180;
pub const HOLD_MS: i64 = HOLD_DAYS * DAY;

/// An agent may change its handle once in this many days.
pub const RENAME_EVERY_DAYS: i64 = 30;
pub const RENAME_EVERY_MS: i64 = RENAME_EVERY_DAYS * DAY;

/// The built-in lists with the operator's additions (`AGENTDIR_RESERVED_HANDLES`), folded.
#[derive(Debug, Clone)]
pub struct ReservedHandles {
    /// [`BUILT_IN_RESERVED`] and the operator's additions, folded.
    joined: HashSet<String>,
    /// [`BUILT_IN_RESERVED_WORDS`], folded.
    whole: HashSet<String>,
}

impl Default for ReservedHandles {
    fn default() -> Self {
        ReservedHandles::new(&[])
    }
}

impl ReservedHandles {
    /// The built-in lists and the operator's additions, which are reserved the way
    /// [`BUILT_IN_RESERVED`] is.
    pub fn new(extra: &[String]) -> Self {
        let extra = extra.iter().map(|h| h.trim()).filter(|h| !h.is_empty());
        ReservedHandles {
            joined: BUILT_IN_RESERVED.iter().copied().chain(extra).map(fold).collect(),
            whole: BUILT_IN_RESERVED_WORDS.iter().copied().map(fold).collect(),
        }
    }

    /// Whether `handle` is reserved. With `fold` as defined above, it is when
    /// - `fold(handle)` is the fold of a reserved word of either list (`admin`, `adm1n`,
    ///   `a-d-m-i-n`, `api`, `ap1`, `no-reply`, `noreply`), or
    /// - the part before or after one of its separators, folded, is the fold of a word of
    ///   [`BUILT_IN_RESERVED`] or of the operator's list: the handle starts or ends with such a
    ///   word joined by `-` or `_` (`admin-team`, `agentdir-support`, `verify-bot`,
    ///   `no-reply-bot`, `team-4dmin`).
    ///
    /// A word inside a longer word is not a reason (`apiary`, `supporter`, `administrative`,
    /// `helpful`), nor is a word of [`BUILT_IN_RESERVED_WORDS`] joined to others (`api-tester`),
    /// nor a reserved word between two others (`my-admin-team`).
    pub fn contains(&self, handle: &str) -> bool {
        let whole = fold(handle);
        if self.joined.contains(&whole) || self.whole.contains(&whole) {
            return true;
        }
        handle.char_indices().filter(|(_, c)| SEPARATORS.contains(c)).any(|(at, c)| {
            let (before, after) = (&handle[..at], &handle[at + c.len_utf8()..]);
            self.joined.contains(&fold(before)) || self.joined.contains(&fold(after))
        })
    }
}

wire_enum! {
    /// Why a handle is held.
    pub enum HoldReason {
        /// The agent moved to another handle; the old one redirects to it.
        Renamed,
        /// The agent was deleted.
        Deleted,
    }
}

/// A handle held for the agent (in its export).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct HeldHandle {
    pub handle: String,
    pub reason: HoldReason,
    pub held_at: Timestamp,
    /// `null`: held for good.
    pub until: Option<Timestamp>,
}

/// Body of `POST /api/me/handle`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[schemars(transform = super::reject_null)]
pub struct HandleChange {
    /// The new handle: a-z, 0-9 and hyphen, starting with a letter or digit.
    #[schemars(pattern(patterns::HANDLE))]
    pub handle: String,
}

/// Answer of `POST /api/me/handle`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Renamed {
    pub previous_handle: String,
    /// Until then the previous handle answers `301` to the new card and nobody can register it.
    pub previous_held_until: Timestamp,
    /// The next rename is possible from then on.
    pub next_rename_at: Timestamp,
    /// The profile under its new handle.
    pub profile: OwnProfile,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserved_words_their_joins_and_look_alikes_are_refused() {
        let r = ReservedHandles::default();
        for h in [
            "admin",
            "agentdir-support",
            "admin-team",
            "verify-bot",
            "team-admin",
            "adm1n",
            "4dmin",
            "a-d-m-i-n",
            "adrnin",
            "supp0rt",
            "5ecurity",
            "0fficial",
            "no-reply",
            "noreply-bot",
            "no-reply-bot",
            "n0-r3ply",
            "api",
            "ap1",
            "vvvvvv",
            "deleted",
        ] {
            assert!(r.contains(h), "{h} should be reserved");
        }
    }

    #[test]
    fn ordinary_handles_that_hold_the_letters_are_not() {
        let r = ReservedHandles::default();
        for h in [
            "apiary",
            "supporter",
            "administrative-law",
            "helpful",
            "api-tester",
            "mcp-weather",
            "help-desk-for-kids",
            "root-cause-finder",
            "my-admin-team",
            "verifying",
            "staffing-agent",
            "information",
            "support-bot-builder",
            "customer-support",
            "security-auditor",
            "system-design-coach",
        ] {
            assert!(!r.contains(h), "{h} should not be reserved");
        }
    }

    #[test]
    fn the_operators_additions_are_reserved_the_same_way() {
        let r = ReservedHandles::new(&[" Acme-Corp ".to_owned(), String::new()]);
        for h in ["acme-corp", "acmecorp", "4cme-c0rp", "acme-corp-support-bot", "fans-of-acme-corp"] {
            assert!(r.contains(h), "{h} should be reserved");
        }
        for h in ["acme-corporation", "acme", "corp"] {
            assert!(!r.contains(h), "{h} should not be reserved");
        }
    }
}
