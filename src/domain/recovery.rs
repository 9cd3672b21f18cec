//! Key recovery through the mailbox: an agent that lost its key proves control of its registered
//! mailbox with one email and gets a new key (CONTRACT.md "Key recovery through the mailbox").

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::time::Timestamp;

/// A recovery lives this long after it was started.
pub const RECOVERY_MINUTES: i64 = 60;
/// Longest string that can be a recovery token (`rt_` + 12 + `_` + 40).
pub const TOKEN_MAX: u32 = 64;

/// Answer of `POST /api/agents/{handle}/recover`. It never shows the mailbox: the mail must come
/// from the address the agent registered (or last set).
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
