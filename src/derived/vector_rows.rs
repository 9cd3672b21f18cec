//! What the vector scan checks of each agent as it passes over its row: the filters a search
//! may set, kept beside the vectors in the scan's own order so that rows failing them cost no
//! lookup. A capability or language is one bit of 64 (a hash of the value), so a row that
//! passes here may still be refused by the exact check of its facts; a row refused here
//! never holds the value.

use std::hash::{Hash, Hasher};

use agentdir_search_index::AgentQuery;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Row {
    level: u8,
    verified: bool,
    live: bool,
    joined_at: i64,
    capabilities: u64,
    languages: u64,
}

impl Row {
    /// The row of an agent with these facts (capabilities and languages as the index's exact
    /// filters compare them).
    pub fn new(
        level: u8,
        verified: bool,
        live: bool,
        joined_at: i64,
        capabilities: &[String],
        languages: &[String],
    ) -> Row {
        Row {
            level,
            verified,
            live,
            joined_at,
            capabilities: capabilities.iter().fold(0, |bits, c| bits | bit(c)),
            languages: languages.iter().fold(0, |bits, l| bits | bit(l)),
        }
    }
}

/// The filters of a search, as [`Row`]s are checked against them.
pub struct RowFilter {
    min_level: u8,
    verified: Option<bool>,
    live: Option<bool>,
    joined_since: Option<i64>,
    /// 0 when the search names none.
    capability: u64,
    language: u64,
}

impl RowFilter {
    pub fn of(q: &AgentQuery) -> RowFilter {
        let value = |v: Option<&str>| normalised(v).map_or(0, |v| bit(&v));
        RowFilter {
            min_level: q.min_level.map_or(0, |l| u8::try_from(l).unwrap_or(u8::MAX)),
            verified: q.mailbox_verified,
            live: q.live,
            joined_since: q.joined_since,
            capability: value(q.capability),
            language: value(q.language),
        }
    }

    /// Each check reads the row only when the search sets its filter: the first pass asks this
    /// of every row that can be a candidate, and most searches set none, so their rows' facts
    /// are never fetched from memory (when they were, that read was the most sampled
    /// instruction of the first pass's work on each such row).
    pub fn admits(&self, r: &Row) -> bool {
        (self.min_level == 0 || r.level >= self.min_level)
            && self.verified.is_none_or(|v| v == r.verified)
            && self.live.is_none_or(|v| v == r.live)
            && self.joined_since.is_none_or(|t| r.joined_at >= t)
            && (self.capability == 0 || r.capabilities & self.capability == self.capability)
            && (self.language == 0 || r.languages & self.language == self.language)
    }
}

/// A filter value as the index's exact filters compare it: trimmed and lower-cased, none when
/// empty.
pub fn normalised(value: Option<&str>) -> Option<String> {
    value.map(|v| v.trim().to_lowercase()).filter(|v| !v.is_empty())
}

fn bit(value: &str) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    value.hash(&mut h);
    1 << (h.finish() % 64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_is_refused_only_when_it_cannot_pass_the_exact_filters() {
        let row = Row {
            level: 1,
            verified: true,
            live: false,
            joined_at: 100,
            capabilities: bit("ocr"),
            languages: bit("zh"),
        };
        let query = |f: &dyn Fn(&mut AgentQuery)| {
            let mut q = AgentQuery::default();
            f(&mut q);
            RowFilter::of(&q).admits(&row)
        };
        assert!(query(&|_| {}));
        assert!(query(&|q| q.capability = Some(" OCR ")));
        assert!(!query(&|q| q.capability = Some("translation")) || bit("translation") == bit("ocr"));
        assert!(query(&|q| q.language = Some("zh")));
        assert!(query(&|q| q.min_level = Some(1)));
        assert!(!query(&|q| q.min_level = Some(2)));
        assert!(!query(&|q| q.mailbox_verified = Some(false)));
        assert!(!query(&|q| q.live = Some(true)));
        assert!(query(&|q| q.joined_since = Some(100)));
        assert!(!query(&|q| q.joined_since = Some(101)));
    }
}
