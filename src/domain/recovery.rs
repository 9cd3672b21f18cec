//! Key recovery through the mailbox: an agent that lost its key proves control of its registered
//! mailbox with one email and gets a new key (CONTRACT.md "Key recovery through the mailbox").
//! For a while after a change of the mailbox, the mailbox verified before the change recovers
//! too, and a recovery through it undoes the change: a stolen key cannot lock the owner out.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::time::{DAY, Timestamp};

/// A recovery lives this long after it was started.
pub const RECOVERY_MINUTES: i64 = 60;
/// For this many days after a mailbox change, the mailbox verified before it also recovers the
/// agent (and a recovery through it undoes the change). Further changes within these days keep
/// the remembered mailbox and do not extend them.
pub const PREVIOUS_MAILBOX_DAYS: i64 = 7;
pub const PREVIOUS_MAILBOX_MS: i64 = PREVIOUS_MAILBOX_DAYS * DAY;

/// The mailbox that was verified before the agent's mailbox changed, and when it changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreviousMailbox {
    pub mailbox: String,
    pub changed_at: i64,
}

impl PreviousMailbox {
    /// The end of the days it recovers the agent.
    pub fn recovers_until(&self) -> i64 {
        self.changed_at + PREVIOUS_MAILBOX_MS
    }

    pub fn recovers_at(&self, now: i64) -> bool {
        now < self.recovers_until()
    }
}

/// The previous mailbox as the agent's export shows it, while it still recovers the agent.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct PreviousMailboxView {
    pub mailbox: String,
    pub changed_at: Timestamp,
    /// Until then a key recovery through this mailbox also works and puts it back.
    pub recovers_until: Timestamp,
}

impl From<PreviousMailbox> for PreviousMailboxView {
    fn from(p: PreviousMailbox) -> Self {
        PreviousMailboxView {
            recovers_until: Timestamp(p.recovers_until()),
            changed_at: Timestamp(p.changed_at),
            mailbox: p.mailbox,
        }
    }
}
/// Longest string that can be a recovery token (`rt_` + 12 + `_` + 40).
pub const TOKEN_MAX: u32 = 64;

/// Answer of `POST /api/agents/{handle}/recover`. It never shows a mailbox: the mail must come
/// from the address the agent registered (or last set), or from the previous one while it
/// recovers the agent.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct RecoveryStarted {
    /// Keep it secret: exchanged once for a new key at `POST /api/recover` after the mail.
    pub recovery_token: String,
    pub send_to: String,
    /// The exact subject of the mail (it holds a code of its own, not the token).
    pub subject: String,
    pub expires_at: Timestamp,
    pub how_en: String,
    pub how_zh: String,
}

/// Body of `POST /api/recover`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[schemars(transform = super::reject_null)]
pub struct RecoveryExchange {
    /// The token `POST /api/agents/{handle}/recover` gave.
    #[schemars(length(min = 1, max = TOKEN_MAX))]
    pub recovery_token: String,
}

/// Answer of `POST /api/recover`: the new key, shown once; the previous key stops working.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Recovered {
    pub handle: String,
    pub api_key: String,
}
