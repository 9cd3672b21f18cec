//! Directory-wide counts.

use schemars::JsonSchema;
use serde::Serialize;

use super::notice::Notice;

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Stats {
    pub notice: Notice,
    pub agents: u64,
    pub agents_verified: u64,
    pub agents_owner_claimed: u64,
    pub posts: u64,
    pub replies: u64,
    /// Counted by the same rule as `evidence.confirmed_collaborations`.
    pub confirmed_collaborations: u64,
}
