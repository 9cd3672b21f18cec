//! What the vector scan checks of each agent as it passes over its row: the filters a search
//! may set, kept beside the vectors in the scan's own order so that rows failing them cost no
//! lookup. A capability or language is one bit of 64 (of its [`NameId`]), so a row that passes
//! here may still be refused by the exact check of its facts; a row refused here never holds
//! the value.

use std::sync::{LazyLock, PoisonError, RwLock};

use agentdir_search_index::AgentQuery;
use rustc_hash::FxHashMap;

/// A capability, language or call tag (trimmed and lower-cased, as the index's exact filters
/// compare them) by its place in the table of every such value agents and calls have held
/// since the server started. An agent's facts and a call's row hold these, 4 bytes each,
/// instead of their own copies of the strings: at a million agents the copies were ~0.2 GB of
/// the server's memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct NameId(u32);

/// The values, each once. A value stays when the last agent or call that held it drops it: the
/// table grows only with values agents and calls write (each bounded in length and number by
/// their limits), and a search only looks values up ([`known_name`]), so a filter nobody holds
/// adds nothing.
static NAMES: LazyLock<RwLock<FxHashMap<Box<str>, NameId>>> = LazyLock::new(Default::default);

/// The id of an agent's or a call's value, added to the table when new.
pub fn name_id(value: &str) -> NameId {
    if let Some(id) = known_name(value) {
        return id;
    }
    let mut names = NAMES.write().unwrap_or_else(PoisonError::into_inner);
    let next = NameId(u32::try_from(names.len()).unwrap_or(u32::MAX));
    *names.entry(value.into()).or_insert(next)
}

/// The id of a value some agent or call has held, none for a value none ever held.
pub fn known_name(value: &str) -> Option<NameId> {
    NAMES.read().unwrap_or_else(PoisonError::into_inner).get(value).copied()
}

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
        capabilities: &[NameId],
        languages: &[NameId],
    ) -> Row {
        Row {
            level,
            verified,
            live,
            joined_at,
            capabilities: capabilities.iter().fold(0, |bits, c| bits | bit(*c)),
            languages: languages.iter().fold(0, |bits, l| bits | bit(*l)),
        }
    }
}

/// What a search asks of one named filter (capability, language, tag).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Named {
    /// The search names none.
    Any,
    /// A value some agent or call has held.
    Value(NameId),
    /// A value none has held: nothing passes.
    Unheld,
}

impl Named {
    pub fn of(value: Option<&str>) -> Named {
        match normalised(value) {
            None => Named::Any,
            Some(v) => known_name(&v).map_or(Named::Unheld, Named::Value),
        }
    }

    /// Whether an agent holding `have` passes.
    pub fn held_in(self, have: &[NameId]) -> bool {
        match self {
            Named::Any => true,
            Named::Value(id) => have.contains(&id),
            Named::Unheld => false,
        }
    }

    /// Whether a row whose values' bits are `bits` can pass.
    fn admits(self, bits: u64) -> bool {
        match self {
            Named::Any => true,
            Named::Value(id) => bits & bit(id) != 0,
            Named::Unheld => false,
        }
    }
}

/// The filters of a search, as [`Row`]s are checked against them.
pub struct RowFilter {
    min_level: u8,
    verified: Option<bool>,
    live: Option<bool>,
    joined_since: Option<i64>,
    capability: Named,
    language: Named,
}

impl RowFilter {
    pub fn of(q: &AgentQuery) -> RowFilter {
        RowFilter {
            min_level: q.min_level.map_or(0, |l| u8::try_from(l).unwrap_or(u8::MAX)),
            verified: q.mailbox_verified,
            live: q.live,
            joined_since: q.joined_since,
            capability: Named::of(q.capability),
            language: Named::of(q.language),
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
            && self.capability.admits(r.capabilities)
            && self.language.admits(r.languages)
    }
}

/// A filter value as the index's exact filters compare it: trimmed and lower-cased, none when
/// empty.
pub fn normalised(value: Option<&str>) -> Option<String> {
    value.map(|v| v.trim().to_lowercase()).filter(|v| !v.is_empty())
}

fn bit(id: NameId) -> u64 {
    1 << (id.0 % 64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_is_refused_only_when_it_cannot_pass_the_exact_filters() {
        let (ocr, zh) = (name_id("ocr"), name_id("zh"));
        let row = Row::new(1, true, false, 100, &[ocr], &[zh]);
        let query = |f: &dyn Fn(&mut AgentQuery)| {
            let mut q = AgentQuery::default();
            f(&mut q);
            RowFilter::of(&q).admits(&row)
        };
        assert!(query(&|_| {}));
        assert!(query(&|q| q.capability = Some(" OCR ")));
        let translation = name_id("translation");
        assert!(!query(&|q| q.capability = Some("translation")) || bit(translation) == bit(ocr));
        assert!(query(&|q| q.language = Some("zh")));
        assert!(query(&|q| q.min_level = Some(1)));
        assert!(!query(&|q| q.min_level = Some(2)));
        assert!(!query(&|q| q.mailbox_verified = Some(false)));
        assert!(!query(&|q| q.live = Some(true)));
        assert!(query(&|q| q.joined_since = Some(100)));
        assert!(!query(&|q| q.joined_since = Some(101)));
    }

    #[test]
    fn a_value_no_agent_holds_passes_nothing_and_is_not_added() {
        let row = Row::new(1, true, false, 100, &[name_id("ocr")], &[]);
        let q = AgentQuery { capability: Some("a capability nobody has written 7f3c"), ..Default::default() };
        assert!(!RowFilter::of(&q).admits(&row));
        assert_eq!(known_name("a capability nobody has written 7f3c"), None);
        assert!(!Named::of(Some("a capability nobody has written 7f3c")).held_in(&[name_id("ocr")]));
        assert!(Named::of(Some(" OCR")).held_in(&[name_id("ocr")]));
        assert!(Named::of(None).held_in(&[]));
        assert_eq!(name_id("ocr"), name_id("ocr"));
    }
}
