//! What the vector scan checks of each agent as it passes over its row: the filters a search
//! may set, kept beside the vectors in the scan's own order so that rows failing them cost no
//! lookup. A capability or language is one bit of 64 (a hash of the value), so a row that
//! passes here may still be refused by the exact check of its facts; a row refused here never
//! holds the value.

use std::borrow::Borrow;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, LazyLock, PoisonError, RwLock};

use agentdir_search_index::AgentQuery;
use rustc_hash::FxHashSet;

/// A capability, language or call tag (trimmed and lower-cased, as the index's exact filters
/// compare them), held once in the table of the values agents and calls hold. An agent's facts
/// and a call's row hold it by this pointer, 8 bytes, instead of their own copies of the
/// strings (at a million agents the copies were ~0.2 GB of the server's memory). Two are the
/// same value exactly when they are the same pointer: the table never holds one value twice,
/// and lets a value go only when nothing else holds it.
#[derive(Debug, Clone)]
pub struct Name(Arc<Box<str>>);

impl PartialEq for Name {
    fn eq(&self, other: &Name) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for Name {}

/// One value of the table, found by its string.
struct Entry(Arc<Box<str>>);

impl Borrow<str> for Entry {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl Hash for Entry {
    fn hash<H: Hasher>(&self, state: &mut H) {
        (**self.0).hash(state);
    }
}

impl PartialEq for Entry {
    fn eq(&self, other: &Entry) -> bool {
        **self.0 == **other.0
    }
}

impl Eq for Entry {}

struct Names {
    values: FxHashSet<Entry>,
    /// Values left after the last sweep.
    kept: usize,
}

/// Values the table may gain past twice what its last sweep kept before it sweeps again.
const SWEEP_SLACK: usize = 4096;

/// The values agents and calls hold, each once. Only their writes add to it (a search looks a
/// value up, [`known_name`]), and a value nothing holds any more is let go: when the table
/// has grown past twice what the last sweep kept (plus [`SWEEP_SLACK`]), the next value added
/// sweeps it first. So it holds at most about twice the values in use, whatever strangers
/// write and delete over time, and each value costs one sweep's pass at most once.
static NAMES: LazyLock<RwLock<Names>> =
    LazyLock::new(|| RwLock::new(Names { values: FxHashSet::default(), kept: 0 }));

/// An agent's or a call's value, added to the table when new.
pub fn name(value: &str) -> Name {
    if let Some(name) = known_name(value) {
        return name;
    }
    let mut names = NAMES.write().unwrap_or_else(PoisonError::into_inner);
    if let Some(entry) = names.values.get(value) {
        return Name(entry.0.clone());
    }
    if names.values.len() >= 2 * names.kept + SWEEP_SLACK {
        // Under the write lock nobody can take a value from the table, so a value only the
        // table holds stays unheld until it is gone.
        names.values.retain(|entry| Arc::strong_count(&entry.0) > 1);
        names.kept = names.values.len();
    }
    let value = Arc::new(Box::<str>::from(value));
    names.values.insert(Entry(value.clone()));
    Name(value)
}

/// A value some agent or call holds (or held since the last sweep), none for a value none
/// holds.
pub fn known_name(value: &str) -> Option<Name> {
    NAMES.read().unwrap_or_else(PoisonError::into_inner).values.get(value).map(|entry| Name(entry.0.clone()))
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
        capabilities: &[Name],
        languages: &[Name],
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

/// What a search asks of one named filter (capability, language, tag).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Named {
    /// The search names none.
    Any,
    /// A value some agent or call holds, and its bit.
    Value(Name, u64),
    /// A value none holds: nothing passes.
    Unheld,
}

impl Named {
    pub fn of(value: Option<&str>) -> Named {
        match normalised(value) {
            None => Named::Any,
            Some(v) => known_name(&v).map_or(Named::Unheld, |name| {
                let bit = bit(&name);
                Named::Value(name, bit)
            }),
        }
    }

    /// Whether an agent or a call holding `have` passes.
    pub fn held_in(&self, have: &[Name]) -> bool {
        match self {
            Named::Any => true,
            Named::Value(name, _) => have.contains(name),
            Named::Unheld => false,
        }
    }

    /// Whether a row whose values' bits are `bits` can pass.
    fn admits(&self, bits: u64) -> bool {
        match self {
            Named::Any => true,
            Named::Value(_, bit) => bits & bit != 0,
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

    /// Whether an agent holding these values passes the named filters exactly: [`admits`]
    /// checked them only by one bit of their hash.
    ///
    /// [`admits`]: RowFilter::admits
    pub fn holds(&self, capabilities: &[Name], languages: &[Name]) -> bool {
        self.capability.held_in(capabilities) && self.language.held_in(languages)
    }
}

/// A filter value as the index's exact filters compare it: trimmed and lower-cased, none when
/// empty.
pub fn normalised(value: Option<&str>) -> Option<String> {
    value.map(|v| v.trim().to_lowercase()).filter(|v| !v.is_empty())
}

fn bit(name: &Name) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    name.0.hash(&mut h);
    1 << (h.finish() % 64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_is_refused_only_when_it_cannot_pass_the_exact_filters() {
        let (ocr, zh) = (name("ocr"), name("zh"));
        let row = Row::new(1, true, false, 100, std::slice::from_ref(&ocr), &[zh]);
        let query = |f: &dyn Fn(&mut AgentQuery)| {
            let mut q = AgentQuery::default();
            f(&mut q);
            RowFilter::of(&q).admits(&row)
        };
        assert!(query(&|_| {}));
        assert!(query(&|q| q.capability = Some(" OCR ")));
        let translation = name("translation");
        assert!(!query(&|q| q.capability = Some("translation")) || bit(&translation) == bit(&ocr));
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
        let ocr = name("ocr");
        let row = Row::new(1, true, false, 100, std::slice::from_ref(&ocr), &[]);
        let q = AgentQuery { capability: Some("a capability nobody has written 7f3c"), ..Default::default() };
        assert!(!RowFilter::of(&q).admits(&row));
        assert_eq!(known_name("a capability nobody has written 7f3c"), None);
        assert!(!Named::of(Some("a capability nobody has written 7f3c")).held_in(std::slice::from_ref(&ocr)));
        assert!(Named::of(Some(" OCR")).held_in(std::slice::from_ref(&ocr)));
        assert!(Named::of(None).held_in(&[]));
        assert_eq!(name("ocr"), ocr);
        assert_ne!(name("ocr "), ocr);
    }

    /// Strangers can write values and delete them again: the table lets go of what nothing
    /// holds, and keeps what something does.
    #[test]
    fn values_nothing_holds_are_let_go_and_held_ones_stay() {
        let held = name("a tag someone keeps 51c0");
        drop(name("a tag written once 51c0"));
        let mut added = 0;
        while known_name("a tag written once 51c0").is_some() {
            drop(name(&format!("a tag of a deleted call 51c0 {added}")));
            added += 1;
            assert!(added < 1_000_000, "the table never let go of a value nothing holds");
        }
        assert_eq!(known_name("a tag someone keeps 51c0"), Some(held.clone()));
        assert_eq!(name("a tag someone keeps 51c0"), held);
        let table = NAMES.read().unwrap_or_else(PoisonError::into_inner).values.len();
        assert!(table < 2 * added + SWEEP_SLACK, "{table} values after {added} added");
    }
}
