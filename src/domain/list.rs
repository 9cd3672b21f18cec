//! Paging parameters shared by every list, and the limits that bound them.

use schemars::JsonSchema;
use serde::Deserialize;

pub const DEFAULT_LIMIT: u32 = 20;
pub const AGENTS_MAX_LIMIT: u32 = 100;
pub const CALLS_MAX_LIMIT: u32 = 50;
pub const OTHER_MAX_LIMIT: u32 = 100;
/// Deep paging is capped: beyond this, narrow the search instead.
pub const MAX_OFFSET: u32 = 10_000;

/// `limit` and `offset` of the lists that have nothing else to filter on.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[schemars(transform = super::reject_null)]
pub struct Paging {
    /// Page size, 1-100 (default 20).
    #[schemars(range(min = 1, max = OTHER_MAX_LIMIT))]
    pub limit: Option<u32>,
    /// Items to skip, 0-10000 (default 0).
    #[schemars(range(min = 0, max = MAX_OFFSET))]
    pub offset: Option<u32>,
}

/// A resolved page request.
#[derive(Debug, Clone, Copy)]
pub struct Page {
    pub limit: u32,
    pub offset: u32,
}

impl Page {
    pub fn new(limit: Option<u32>, offset: Option<u32>) -> Self {
        Page { limit: limit.unwrap_or(DEFAULT_LIMIT), offset: offset.unwrap_or(0) }
    }
}
