//! The public moderation log (`GET /api/moderation`): every operator action on public content or
//! trust, with when, whom (the target's stable public id and its handle at the time), a reason
//! category and the note the operator wrote for the public. Never the reporter, the report text,
//! the operator's private reason or who the operator is: the audit log keeps those.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::notice::Notice;
use crate::time::Timestamp;

pub const DEFAULT_LIMIT: u32 = 100;
pub const MAX_LIMIT: u32 = 1_000;
/// Longest public note an operator may write.
pub const PUBLIC_NOTE_MAX: usize = 500;
/// Base-36 digits of a cursor: twelve always fit a seq.
pub const CURSOR_DIGITS: usize = 12;
/// Every cursor the server issues, as a pattern (published in openapi.json).
pub const CURSOR_PATTERN: &str = "^[0-9a-z]{1,12}$";

wire_enum! {
    /// Why an operator acted, as the public may know it.
    pub enum ReasonCategory {
        Spam,
        Abuse,
        Impersonation,
        Illegal,
        Other,
    }
}

wire_enum! {
    /// What an operator did. Open-ended on the wire (a string), as event kinds are.
    pub enum ModerationAction {
        CallHidden,
        CallRestored,
        AgentSuspended,
        AgentRestored,
        AgentDeleted,
        AgentRenamed,
        MailboxVerified,
        MailboxUnverified,
        OwnerClaimed,
        OwnerUnclaimed,
    }
}

pub const ACTION_DOC: &str = "What an operator did; clients ignore actions they do not know. Known \
actions: call_hidden, call_restored, agent_suspended, agent_restored (after a suspension, or after \
an operator's deletion the agent undid by a key recovery: category other), agent_deleted, \
agent_renamed (new_handle says to what), and trust granted or withdrawn: mailbox_verified, mailbox_unverified, \
owner_claimed, owner_unclaimed.";

wire_enum! {
    /// What an action is about.
    pub enum TargetKind {
        Agent,
        Call,
    }
}

/// Whom an action was about.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Target {
    pub kind: TargetKind,
    /// The agent's stable public id (`agt_…`, the `sub` of its signed statements): the agent
    /// acted on, or the author of the call. Null when an action from before the log could not be
    /// traced to an agent.
    pub sub: Option<String>,
    /// The agent's handle at the time.
    pub handle: Option<String>,
    /// The call acted on (`post_…`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub post_id: Option<String>,
    /// `agent_renamed`: the handle the operator gave.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub new_handle: Option<String>,
}

/// One operator action.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ModerationEntry {
    /// Read on from here to get the actions after this one.
    pub cursor: String,
    #[schemars(with = "String", description = ACTION_DOC)]
    pub action: ModerationAction,
    pub at: Timestamp,
    pub target: Target,
    /// Actions from before the log kept no category: `other`.
    pub category: ReasonCategory,
    /// What the operator wrote for the public, if anything.
    pub public_note: Option<String>,
}

/// Body of `GET /api/moderation`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ModerationLog {
    pub notice: Notice,
    /// Oldest first.
    pub actions: Vec<ModerationEntry>,
    /// The cursor to ask with next time (the given one when nothing is new).
    pub next: String,
    /// Whether more actions follow at once: ask again with `next` without waiting.
    pub has_more: bool,
}

/// Query of `GET /api/moderation`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[schemars(transform = super::reject_null)]
pub struct ModerationQuery {
    /// A cursor from an earlier answer (`next`, or an action's `cursor`); leave it out to read
    /// from the first action. One this server did not issue (past its newest) is 400.
    #[schemars(length(min = 1, max = CURSOR_DIGITS as u32), regex(pattern = CURSOR_PATTERN))]
    pub after: Option<String>,
    #[schemars(
        range(min = 1, max = MAX_LIMIT),
        description = const_format::concatcp!("Actions per page, 1-", MAX_LIMIT, " (default ", DEFAULT_LIMIT, ").")
    )]
    pub limit: Option<u32>,
}

/// A cursor of the log: the seq of an action, base 36.
pub fn cursor(seq: u64) -> String {
    const DIGITS: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut n = seq;
    let mut out = Vec::new();
    loop {
        out.push(DIGITS[(n % 36) as usize]);
        n /= 36;
        if n == 0 {
            break;
        }
    }
    out.reverse();
    String::from_utf8(out).unwrap_or_default()
}

/// Reads a cursor as the server writes it; anything else is `None`.
pub fn parse_cursor(text: &str) -> Option<u64> {
    let plain = !text.is_empty()
        && text.len() <= CURSOR_DIGITS
        && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'z'));
    if !plain {
        return None;
    }
    u64::from_str_radix(text, 36).ok()
}

/// A public note as an operator may write it: one line, at most [`PUBLIC_NOTE_MAX`] characters.
pub fn note_is_fit(note: &str) -> bool {
    note.chars().count() <= PUBLIC_NOTE_MAX && !note.chars().any(char::is_control)
}

#[cfg(test)]
mod tests {
    use super::*;
    use strum::VariantArray;

    #[test]
    fn every_action_is_described_and_cursors_read_back() {
        for a in ModerationAction::VARIANTS {
            assert!(ACTION_DOC.contains(a.as_str()), "{}", a.as_str());
        }
        for seq in [0, 1, 35, 36, 1_000_000, u64::from(u32::MAX)] {
            assert_eq!(parse_cursor(&cursor(seq)), Some(seq));
        }
        let widest = "z".repeat(CURSOR_DIGITS);
        assert!(parse_cursor(&widest).is_some(), "the pattern admits it, so it must read");
        for bad in ["", "A", "1_2", "zzzzzzzzzzzzz", "-1"] {
            assert_eq!(parse_cursor(bad), None, "{bad:?}");
        }
        assert!(note_is_fit("Spam links to a phishing site."));
        assert!(!note_is_fit("two\nlines"));
        assert!(!note_is_fit(&"x".repeat(PUBLIC_NOTE_MAX + 1)));
    }
}
