//! Full-text search over agents and calls: a derived index that the core feeds from SQLite (the
//! source of truth) and asks for ordered pages of keys. It knows nothing of SQL, HTTP or MCP.
//!
//! One [`SearchIndex`] owns a directory holding two tantivy indexes (`agents/`, `calls/`), one
//! writer for each behind a single mutex, and a manually reloaded reader for each. What
//! [`SearchIndex::apply`] gets is kept in memory first (the overlay, `overlay.rs`), and a search
//! issued after `apply` returns sees it; [`SearchIndex::flush`] writes it to disk. The change-log
//! sequence number the disk holds is stored in every commit's payload; the core replays its
//! change log from there at start, and rebuilds from scratch when [`SearchIndex::needs_rebuild`]
//! says the index was missing, corrupt or of another schema.
//!
//! A free-text search counts its matches exactly and ranks only those that can reach the page
//! (`evaluate.rs`); what it needs of each segment beyond its files (the key and time columns,
//! bitmaps of the segment's most frequent terms, its longest field lengths) is prepared once,
//! when a reload first sees the segment (`warm.rs`).
//!
//! Searches go through a small per-index result cache whose entries live for one reader
//! generation only (see `cache.rs`), so a repeated search between two commits costs
//! microseconds and a commit can never serve stale results.
//!
//! Every method blocks; call them from `spawn_blocking`.

mod analysis;
mod cache;
mod collect;
mod dense;
mod disk;
mod evaluate;
mod holding;
mod matches;
mod overlay;
mod part;
mod query;
mod rank;
mod relaxed;
mod schema;
mod warm;
mod words;

use std::collections::HashSet;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

use tantivy::directory::DirectoryLock;
use tantivy::tokenizer::TextAnalyzer;
use tantivy::{IndexWriter, TantivyError, Term};

use crate::analysis::{QueryAnalyzer, index_analyzer};
use crate::cache::{Key, Target};
use crate::collect::NumericFilters;
use crate::evaluate::TextPlan;
use crate::overlay::Entry;
use crate::part::Part;
use crate::part::Plan;
use crate::query::{EXACT_HANDLE_SCORE, exact_term};
use crate::schema::{AgentFields, CallFields, exact_term_value};

pub use crate::analysis::{STOP_WORDS, holds_chinese_word};
pub use crate::overlay::MAX_OVERLAY_DOCS;
pub use crate::relaxed::{ALL_OR_TWO_WORDS, RELAXED_FROM_WORDS, required_words};
pub use crate::words::{AgentWords, WordCheck};

/// Largest page the index hands out; larger limits are clamped.
pub const MAX_LIMIT: usize = 100;

/// Distinct searches remembered per index between two commits (see `cache.rs`).
pub const DEFAULT_CACHE_ENTRIES: usize = 2048;

/// One agent as the index sees it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AgentDoc {
    /// The agent's stable integer id; unique.
    pub key: u64,
    /// e.g. "zh-translator-01" (a-z0-9 and hyphen).
    pub handle: String,
    pub name: String,
    pub tagline: String,
    pub description_en: String,
    pub description_zh: String,
    pub capabilities: Vec<String>,
    /// Language codes like "en", "zh", "pt-BR".
    pub languages: Vec<String>,
    pub offering_titles: Vec<String>,
    pub offering_deliverables: Vec<String>,
    pub offering_tags: Vec<String>,
    /// What the agent's proven endpoints expose (skills, tools), one text per entry.
    pub observed: Vec<String>,
    pub model: String,
    /// Trust level 0..=2.
    pub level: u64,
    pub mailbox_verified: bool,
    /// Has a live endpoint that is owned (a live link proof on the same origin).
    pub live: bool,
    /// Unix milliseconds.
    pub joined_at: i64,
    /// Unix milliseconds.
    pub last_active_at: i64,
}

/// One call as the index sees it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CallDoc {
    /// Stable integer id of the call; unique; grows with creation time.
    pub key: u64,
    pub title: String,
    pub body: String,
    pub deliverable: String,
    pub constraints: String,
    pub tags: Vec<String>,
    /// "seeking" | "offering" | "announce".
    pub kind: String,
    /// "zh" | "en" | "other".
    pub lang: String,
    pub author_handle: String,
    /// Unix milliseconds.
    pub created_at: i64,
}

/// One change to apply; an upsert replaces any document with the same key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    UpsertAgent(AgentDoc),
    RemoveAgent(u64),
    UpsertCall(CallDoc),
    RemoveCall(u64),
}

/// An agent search. Empty or whitespace-only strings mean "no such condition".
#[derive(Debug, Clone, Copy, Default)]
pub struct AgentQuery<'a> {
    /// The user's free text `q`, any string.
    pub text: Option<&'a str>,
    /// `text` read as a whole handle (lower-case, without a leading `@`) when the directory's
    /// handle rule says it is one: that agent ranks first. Derived from `text` alone, so results
    /// cached by `text` stay right.
    pub handle: Option<&'a str>,
    /// Exact match, case-insensitive, against capabilities.
    pub capability: Option<&'a str>,
    /// Exact match, case-insensitive, against languages.
    pub language: Option<&'a str>,
    pub mailbox_verified: Option<bool>,
    /// The agent's `live` equals this.
    pub live: Option<bool>,
    /// level >= min_level.
    pub min_level: Option<u64>,
    /// joined_at >= this (unix ms).
    pub joined_since: Option<i64>,
    /// 1..=100; larger values are clamped to [`MAX_LIMIT`].
    pub limit: usize,
    /// Any value, may be far past the end.
    pub offset: usize,
}

/// A call search. Empty or whitespace-only strings mean "no such condition".
#[derive(Debug, Clone, Copy, Default)]
pub struct CallQuery<'a> {
    pub text: Option<&'a str>,
    /// Exact match, case-insensitive.
    pub kind: Option<&'a str>,
    /// Exact match, case-insensitive, against tags.
    pub tag: Option<&'a str>,
    /// Exact match (handles are lower-case; compared case-insensitively).
    pub author_handle: Option<&'a str>,
    pub limit: usize,
    pub offset: usize,
}

/// One page of results.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Page {
    /// Number of documents matching the query, all pages together.
    pub total: u64,
    /// The requested page, in order.
    pub keys: Vec<u64>,
}

/// Errors never include user text; the `Display` strings are safe to show, details are in
/// `source()` for logs.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    /// Another process (or another `SearchIndex` in this one) holds the index directory.
    /// Nothing was touched.
    #[error("the search index is in use by another process")]
    Locked,
    #[error("search index storage error")]
    Io(#[from] std::io::Error),
    #[error("search index engine error")]
    Engine(#[source] TantivyError),
}

impl From<TantivyError> for IndexError {
    fn from(e: TantivyError) -> Self {
        match e {
            TantivyError::LockFailure(tantivy::directory::error::LockError::LockBusy, _) => {
                IndexError::Locked
            }
            other => IndexError::Engine(other),
        }
    }
}

struct Writers {
    agents: IndexWriter,
    calls: IndexWriter,
    /// Analyses documents' text once for their fields and `all` (see schema.rs).
    analyzer: TextAnalyzer,
}

/// The search index. `Send + Sync`: share it behind an `Arc`.
pub struct SearchIndex {
    agents: Part,
    calls: Part,
    agent_fields: AgentFields,
    call_fields: CallFields,
    writers: Mutex<Writers>,
    analyzer: QueryAnalyzer,
    /// Analyses the documents of the overlay (overlay.rs), apart from the writers so that
    /// `apply` never waits for a flush.
    documents: Mutex<TextAnalyzer>,
    /// The batches in the overlay, as changes, for the next flush.
    pending: Mutex<Vec<(u64, Vec<Change>)>>,
    /// Held by `apply`, `flush` and `rebuild` in that order of nesting, one of each at a time.
    applying: Mutex<()>,
    flushing: Mutex<()>,
    needs_rebuild: AtomicBool,
    /// The seq searches see (the disk and the overlay).
    applied_seq: AtomicU64,
    /// The seq the disk holds, recorded in its commits.
    flushed_seq: AtomicU64,
    // Declared last so it is released after the writers.
    _dir_lock: DirectoryLock,
}

impl SearchIndex {
    /// Opens the index under `dir` (creating `dir` if missing). If the index is missing,
    /// corrupt/unreadable, or was written with another schema version, it is wiped and
    /// recreated empty, and [`needs_rebuild`](Self::needs_rebuild) is true.
    ///
    /// Fails with [`IndexError::Locked`] (touching nothing) when another process holds `dir`.
    pub fn open(dir: &Path) -> Result<SearchIndex, IndexError> {
        let opened = disk::open(dir)?;
        let documents = index_analyzer(opened.jieba.clone());
        let analyzer = QueryAnalyzer::new(opened.jieba);
        // Touches jieba's lazily built tables so the first real query doesn't pay for them.
        let _ = analyzer.words("中文翻译服务 warm up");
        Ok(SearchIndex {
            needs_rebuild: AtomicBool::new(opened.needs_rebuild),
            applied_seq: AtomicU64::new(opened.applied_seq),
            flushed_seq: AtomicU64::new(opened.applied_seq),
            analyzer,
            documents: Mutex::new(documents.clone()),
            pending: Mutex::new(Vec::new()),
            applying: Mutex::new(()),
            flushing: Mutex::new(()),
            writers: Mutex::new(Writers {
                agents: opened.agents.1,
                calls: opened.calls.1,
                analyzer: documents,
            }),
            agents: opened.agents.0,
            calls: opened.calls.0,
            agent_fields: opened.agent_fields,
            call_fields: opened.call_fields,
            _dir_lock: opened.lock,
        })
    }

    /// True when `open` found nothing usable; the core should call [`rebuild`](Self::rebuild).
    pub fn needs_rebuild(&self) -> bool {
        self.needs_rebuild.load(Ordering::SeqCst)
    }

    /// The change-log sequence number the index has applied up to (0 for a new index): what
    /// searches see, in memory or on disk.
    pub fn applied_seq(&self) -> u64 {
        self.applied_seq.load(Ordering::SeqCst)
    }

    /// The seq the index holds on disk: after a crash, [`open`](Self::open) starts from here
    /// and the caller replays its change log after it.
    pub fn flushed_seq(&self) -> u64 {
        self.flushed_seq.load(Ordering::SeqCst)
    }

    /// Documents applied but not yet flushed to disk.
    pub fn unflushed_docs(&self) -> usize {
        self.agents.overlay.docs() + self.calls.overlay.docs()
    }

    fn lock_writers(&self) -> MutexGuard<'_, Writers> {
        // A panic while holding the writers leaves uncommitted operations of unknown state;
        // dropping them restores a consistent writer, and the core's replay redoes the work.
        match self.writers.lock() {
            Ok(guard) => guard,
            Err(poisoned) => {
                let mut guard = poisoned.into_inner();
                rollback(&mut guard);
                // A panicking rebuild may have left merges paused.
                disk::resume_merges(&guard.agents);
                disk::resume_merges(&guard.calls);
                self.writers.clear_poison();
                guard
            }
        }
    }

    /// Applies changes (an upsert replaces any document with the same key) in memory: a search
    /// made after this returns sees them, and `applied_seq` is `up_to_seq`. Nothing is written to
    /// disk here; [`flush`](Self::flush) does that (and this does too, past
    /// [`MAX_OVERLAY_DOCS`] unflushed documents). On error `applied_seq` does not advance;
    /// re-applying is safe.
    pub fn apply(&self, changes: Vec<Change>, up_to_seq: u64) -> Result<(), IndexError> {
        {
            let _one = lock(&self.applying);
            let (agents, calls) = self.entries(&changes);
            let (a, c) = (&self.agents, &self.calls);
            a.overlay.add(up_to_seq, agents, a.reader.searcher().index(), &a.segments)?;
            c.overlay.add(up_to_seq, calls, c.reader.searcher().index(), &c.segments)?;
            lock(&self.pending).push((up_to_seq, changes));
            self.applied_seq.store(up_to_seq, Ordering::SeqCst);
        }
        // The batch is applied either way; a failed flush keeps everything in memory and the
        // next flush retries.
        if self.unflushed_docs() > MAX_OVERLAY_DOCS
            && let Err(e) = self.flush()
        {
            tracing::warn!(error = %e, "flushing the search index failed; will retry");
        }
        Ok(())
    }

    /// Each index's entries for the overlay, in order, analysed.
    fn entries(&self, changes: &[Change]) -> (Vec<Entry>, Vec<Entry>) {
        let mut analyzer = lock(&self.documents);
        let (mut agents, mut calls) = (Vec::new(), Vec::new());
        for change in changes {
            match change {
                Change::UpsertAgent(a) => {
                    agents.push((a.key, Some(self.agent_fields.document(a, &mut analyzer))))
                }
                Change::RemoveAgent(key) => agents.push((*key, None)),
                Change::UpsertCall(c) => {
                    calls.push((c.key, Some(self.call_fields.document(c, &mut analyzer))))
                }
                Change::RemoveCall(key) => calls.push((*key, None)),
            }
        }
        (agents, calls)
    }

    /// Writes everything applied so far to disk in one commit per touched index (with the seq in
    /// the payload) and lets the overlay forget it. Searches see the same results throughout;
    /// `apply` goes on meanwhile. On error the overlay keeps everything and nothing advances.
    pub fn flush(&self) -> Result<(), IndexError> {
        let _one = lock(&self.flushing);
        let seq = self.applied_seq();
        if seq <= self.flushed_seq() {
            return Ok(());
        }
        let changes: Vec<Change> = lock(&self.pending)
            .iter()
            .filter(|(s, _)| *s <= seq)
            .flat_map(|(_, c)| c.iter().cloned())
            .collect();
        let agents = changes.iter().any(|c| matches!(c, Change::UpsertAgent(_) | Change::RemoveAgent(_)));
        let calls = changes.iter().any(|c| matches!(c, Change::UpsertCall(_) | Change::RemoveCall(_)));
        {
            let mut w = self.lock_writers();
            let result = self.apply_locked(&mut w, changes, seq, agents, calls);
            if result.is_err() {
                rollback(&mut w);
            }
            // After a failure both are reloaded, since a commit may have landed.
            let failed = result.is_err();
            let reloaded = self.reload(agents || failed, calls || failed);
            result?;
            reloaded?;
        }
        for part in [&self.agents, &self.calls] {
            part.overlay.replace_disk(&part.reader.searcher(), seq, &part.segments)?;
        }
        lock(&self.pending).retain(|(s, _)| *s > seq);
        self.flushed_seq.store(seq, Ordering::SeqCst);
        Ok(())
    }

    fn apply_locked(
        &self,
        w: &mut Writers,
        changes: Vec<Change>,
        up_to_seq: u64,
        agents: bool,
        calls: bool,
    ) -> Result<(), IndexError> {
        let (af, cf) = (&self.agent_fields, &self.call_fields);
        for change in changes {
            match change {
                Change::UpsertAgent(a) => {
                    w.agents.delete_term(Term::from_field_u64(af.key, a.key));
                    w.agents.add_document(af.document(&a, &mut w.analyzer))?;
                }
                Change::RemoveAgent(key) => {
                    w.agents.delete_term(Term::from_field_u64(af.key, key));
                }
                Change::UpsertCall(c) => {
                    w.calls.delete_term(Term::from_field_u64(cf.key, c.key));
                    w.calls.add_document(cf.document(&c, &mut w.analyzer))?;
                }
                Change::RemoveCall(key) => {
                    w.calls.delete_term(Term::from_field_u64(cf.key, key));
                }
            }
        }
        // An untouched index is not committed (see `disk::Payload` for why that is safe); a
        // batch with no change at all still records its seq, in the agents index.
        match (agents, calls) {
            (true, true) => commit_both(w, up_to_seq),
            (false, true) => Ok(disk::commit(&mut w.calls, up_to_seq, 0)?),
            (_, false) => Ok(disk::commit(&mut w.agents, up_to_seq, 0)?),
        }
    }

    /// Replaces the whole content with `docs` (upserts; removals are ignored), commits with
    /// `up_to_seq`, and clears `needs_rebuild`. Keys in `docs` must be unique. Searches keep
    /// seeing the previous content until this returns.
    pub fn rebuild(&self, docs: impl IntoIterator<Item = Change>, up_to_seq: u64) -> Result<(), IndexError> {
        let _apply = lock(&self.applying);
        let _flush = lock(&self.flushing);
        let mut w = self.lock_writers();
        disk::pause_merges(&w.agents);
        disk::pause_merges(&w.calls);
        let result = self.rebuild_locked(&mut w, docs, up_to_seq);
        if result.is_err() {
            rollback(&mut w);
        }
        disk::resume_merges(&w.agents);
        disk::resume_merges(&w.calls);
        let reloaded = self.reload(true, true);
        drop(w);
        result?;
        reloaded?;
        // The new content replaces the overlay too; later changes are applied again.
        for part in [&self.agents, &self.calls] {
            part.overlay.replace_disk(&part.reader.searcher(), u64::MAX, &part.segments)?;
        }
        lock(&self.pending).clear();
        self.applied_seq.store(up_to_seq, Ordering::SeqCst);
        self.flushed_seq.store(up_to_seq, Ordering::SeqCst);
        self.needs_rebuild.store(false, Ordering::SeqCst);
        Ok(())
    }

    fn rebuild_locked(
        &self,
        w: &mut Writers,
        docs: impl IntoIterator<Item = Change>,
        up_to_seq: u64,
    ) -> Result<(), IndexError> {
        w.agents.delete_all_documents()?;
        w.calls.delete_all_documents()?;
        for change in docs {
            match change {
                Change::UpsertAgent(a) => {
                    w.agents.add_document(self.agent_fields.document(&a, &mut w.analyzer))?;
                }
                Change::UpsertCall(c) => {
                    w.calls.add_document(self.call_fields.document(&c, &mut w.analyzer))?;
                }
                Change::RemoveAgent(_) | Change::RemoveCall(_) => {}
            }
        }
        commit_both(w, up_to_seq)?;
        // One segment per index makes every later query cheaper; failure here costs speed only.
        disk::merge_all(&mut w.agents);
        disk::merge_all(&mut w.calls);
        Ok(())
    }

    fn reload(&self, agents: bool, calls: bool) -> Result<(), IndexError> {
        if agents {
            self.agents.reader.reload()?;
        }
        if calls {
            self.calls.reader.reload()?;
        }
        Ok(())
    }

    /// Agents matching `q`, ordered by relevance (with text) or recent activity (without).
    pub fn search_agents(&self, q: &AgentQuery) -> Result<Page, IndexError> {
        let f = &self.agent_fields;
        let Some((exact, filters)) = exact_filters(&[(f.capability, q.capability), (f.language, q.language)])
        else {
            return Ok(Page::default());
        };
        let text = present(q.text);
        let key = Key {
            target: Target::Agents,
            text: text.map(str::to_string),
            exact,
            verified: q.mailbox_verified,
            live: q.live,
            min_level: q.min_level.filter(|l| *l > 0),
            joined_since: q.joined_since,
        };
        let numeric = NumericFilters {
            min_level: key.min_level,
            joined_since: key.joined_since,
            verified: key.verified,
            live: key.live,
        };
        self.agents.search(key, q.offset, q.limit, numeric, || {
            let Some(text) = text else {
                return Some(Plan::Recency(filters));
            };
            let words = self.analyzer.words(text);
            let exact = q.handle.map(|h| (exact_term(f.handle_exact, h), EXACT_HANDLE_SCORE));
            // Text with nothing searchable in it (punctuation, emoji) matches nothing.
            if words.is_empty() && exact.is_none() {
                return None;
            }
            let fields = f.text_fields().to_vec();
            Some(Plan::Text(TextPlan { words, fields, all: f.all, exact, filters }))
        })
    }

    /// Calls matching `q`, ordered by relevance (with text) or creation time (without). With
    /// [`RELAXED_FROM_WORDS`] words or more, a call matches when it holds
    /// [`required_words`] of them; with [`ALL_OR_TWO_WORDS`], all of them, or two when no call
    /// holds all.
    pub fn search_calls(&self, q: &CallQuery) -> Result<Page, IndexError> {
        let f = &self.call_fields;
        let Some((exact, filters)) =
            exact_filters(&[(f.kind, q.kind), (f.tag, q.tag), (f.author, q.author_handle)])
        else {
            return Ok(Page::default());
        };
        let text = present(q.text);
        let key = Key {
            target: Target::Calls,
            text: text.map(str::to_string),
            exact,
            verified: None,
            live: None,
            min_level: None,
            joined_since: None,
        };
        self.calls.search(key, q.offset, q.limit, NumericFilters::default(), || {
            let Some(text) = text else {
                return Some(Plan::Recency(filters));
            };
            self.call_text_plan(text, filters)
        })
    }

    /// The plan of a call search with text: how many of its words a call must hold.
    fn call_text_plan(&self, text: &str, filters: Vec<Term>) -> Option<Plan> {
        let words = self.analyzer.words(text);
        let n = words.len();
        if n == 0 {
            return None;
        }
        let fields = self.call_fields.text_fields().to_vec();
        let plan = TextPlan { words, fields, all: self.call_fields.all, exact: None, filters };
        Some(match n {
            n if n >= RELAXED_FROM_WORDS => Plan::Relaxed(plan, required_words(n)),
            ALL_OR_TWO_WORDS => Plan::AllOrTwo(plan),
            _ => Plan::Text(plan),
        })
    }

    /// Which of `keys` match the words of `q` (and its filters) by [`Self::search_calls`]'s
    /// rule: a call search by meaning tells its word matches from the rest this way, in one
    /// pass over the word matches (a hash lookup each), with no text of the calls at hand.
    pub fn calls_holding(&self, q: &CallQuery, keys: &HashSet<u64>) -> Result<HashSet<u64>, IndexError> {
        let f = &self.call_fields;
        let text = present(q.text);
        let Some(((_, filters), text)) =
            exact_filters(&[(f.kind, q.kind), (f.tag, q.tag), (f.author, q.author_handle)]).zip(text)
        else {
            return Ok(HashSet::new());
        };
        if keys.is_empty() {
            return Ok(HashSet::new());
        }
        let Some(plan) = self.call_text_plan(text, filters) else {
            return Ok(HashSet::new());
        };
        self.calls.holding(plan, keys)
    }

    /// Which of `keys` hold every word of `q` (and its capability and language) by
    /// [`Self::search_agents`]'s rule, the whole handle apart: an agent search by meaning tells
    /// the agents it found by meaning that are also word matches past the word window from the
    /// others this way, so no agent's words are kept in memory beside the index.
    pub fn agents_holding(&self, q: &AgentQuery, keys: &HashSet<u64>) -> Result<HashSet<u64>, IndexError> {
        let f = &self.agent_fields;
        let Some(((_, filters), text)) =
            exact_filters(&[(f.capability, q.capability), (f.language, q.language)]).zip(present(q.text))
        else {
            return Ok(HashSet::new());
        };
        let words = self.analyzer.words(text);
        if keys.is_empty() || words.is_empty() {
            return Ok(HashSet::new());
        }
        let fields = f.text_fields().to_vec();
        self.agents.holding(Plan::Text(TextPlan { words, fields, all: f.all, exact: None, filters }), keys)
    }

    /// Sets how many distinct searches each index remembers between commits (0 disables the
    /// cache, e.g. to measure raw query cost: every search is then computed; the per-segment
    /// data of `warm.rs` belongs to the index and stays). The default is
    /// [`DEFAULT_CACHE_ENTRIES`].
    pub fn set_result_cache_capacity(&self, entries: usize) {
        self.agents.cache.set_capacity(entries);
        self.calls.cache.set_capacity(entries);
    }
}

#[cfg(test)]
mod tests;

impl Drop for SearchIndex {
    /// A clean close keeps what was applied; after a crash the caller's replay redoes it.
    fn drop(&mut self) {
        if let Err(e) = self.flush() {
            tracing::warn!(error = %e, "flushing the search index on close failed");
        }
    }
}

/// A mutex whose holder cannot leave its data inconsistent (every change is made whole).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Commits both indexes with the same seq, each naming the other as its partner. In parallel: a
/// commit is mostly waiting on fsync.
fn commit_both(w: &mut Writers, seq: u64) -> Result<(), IndexError> {
    let Writers { agents, calls, .. } = w;
    let (a, c) = std::thread::scope(|s| {
        let a = s.spawn(|| disk::commit(agents, seq, seq));
        let c = disk::commit(calls, seq, seq);
        (a.join(), c)
    });
    match a {
        Ok(result) => result?,
        Err(_) => {
            return Err(IndexError::Engine(TantivyError::InternalError("commit thread panicked".into())));
        }
    }
    c?;
    Ok(())
}

fn rollback(w: &mut Writers) {
    for (name, writer) in [("agents", &mut w.agents), ("calls", &mut w.calls)] {
        if let Err(e) = writer.rollback() {
            tracing::error!(index = name, error = %e, "search index rollback failed");
        }
    }
}

fn present(value: Option<&str>) -> Option<&str> {
    value.map(str::trim).filter(|v| !v.is_empty())
}

/// The exact filters of a search, at most three: their normalised values (part of the result
/// cache's key) and their terms. `None` when a value can match nothing.
fn exact_filters(
    pairs: &[(tantivy::schema::Field, Option<&str>)],
) -> Option<([Option<String>; 3], Vec<Term>)> {
    let mut exact: [Option<String>; 3] = [None, None, None];
    let mut terms = Vec::new();
    for (slot, (field, value)) in exact.iter_mut().zip(pairs) {
        if let Some(v) = present(*value) {
            let v = exact_term_value(v)?;
            terms.push(exact_term(*field, &v));
            *slot = Some(v);
        }
    }
    Some((exact, terms))
}
