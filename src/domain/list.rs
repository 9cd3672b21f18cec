//! Paging parameters shared by every list, and the limits that bound them.

use schemars::JsonSchema;
use serde::Deserialize;

pub const DEFAULT_LIMIT: u32 = 20;
pub const AGENTS_MAX_LIMIT: u32 = 100;
pub const CALLS_MAX_LIMIT: u32 = 50;
pub const OTHER_MAX_LIMIT: u32 = 100;
/// Deep paging is capped: beyond this, narrow the search instead.
pub const MAX_OFFSET: u32 = 10_000;

/// What `limit` means on a list whose largest page is `$max` (the schemas' description).
macro_rules! limit_doc {
    ($max:expr) => {
        const_format::concatcp!(
            "Page size, 1-",
            $max,
            " (default ",
            $crate::domain::list::DEFAULT_LIMIT,
            ")."
        )
    };
}
pub(crate) use limit_doc;

/// What `offset` means on every list.
pub const OFFSET_DOC: &str = const_format::concatcp!("Items to skip, 0-", MAX_OFFSET, " (default 0).");

/// `limit` and `offset` of the lists that have nothing else to filter on.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[schemars(transform = super::reject_null)]
pub struct Paging {
    #[schemars(range(min = 1, max = OTHER_MAX_LIMIT), description = limit_doc!(OTHER_MAX_LIMIT))]
    pub limit: Option<u32>,
    #[schemars(range(min = 0, max = MAX_OFFSET), description = OFFSET_DOC)]
    pub offset: Option<u32>,
}

/// A resolved page request.
#[derive(Debug, Clone, Copy)]
pub struct Page {
    pub limit: u32,
    pub offset: u32,
}

impl From<Paging> for Page {
    fn from(p: Paging) -> Self {
        Page::new(p.limit, p.offset)
    }
}

impl Page {
    pub fn new(limit: Option<u32>, offset: Option<u32>) -> Self {
        Page { limit: limit.unwrap_or(DEFAULT_LIMIT), offset: offset.unwrap_or(0) }
    }
}
