//! The two tantivy schemas (agents, calls), their field handles and boosts, the schema version,
//! and the mapping from the crate's document types to tantivy documents.
//!
//! Agents and calls live in two separate indexes so that agent queries never walk call segments
//! (1M calls vs 100k agents) and each can be merged on its own schedule.
//!
//! Nothing is stored: the core hydrates results from SQLite, so the index only needs to hand back
//! keys, which come from the `key` fast field. Text fields keep term frequencies but no positions
//! (no phrase queries), which keeps the index small.
//!
//! Besides the scored text fields (one per weight class), every document has an `all` field
//! holding the words of all of them, documents only (no frequencies, no norms). It answers "which
//! documents contain this word anywhere" with one posting list, which is what matching and exact
//! totals need, instead of a union of one list per field. Each text value is analysed once and
//! the same tokens go to its field and to `all`.

use tantivy::TantivyDocument;
use tantivy::schema::{
    FAST, Field, INDEXED, IndexRecordOption, NumericOptions, Schema, TextFieldIndexing, TextOptions,
};
use tantivy::tokenizer::TextAnalyzer;

use crate::analysis::{TEXT_TOKENIZER, normalize_exact};
use crate::{AgentDoc, CallDoc};

/// Bump whenever fields, their options, or the analysis change: an index written with another
/// version is wiped and rebuilt from SQLite at open.
pub(crate) const SCHEMA_VERSION: u32 = 5;

/// Fast-field names read by the collector; both schemas use the same names.
pub(crate) const KEY: &str = "key";
/// Recency order without text: agents' last_active_at, calls' created_at.
pub(crate) const TS: &str = "ts";
pub(crate) const JOINED: &str = "joined";
pub(crate) const LEVEL: &str = "level";
pub(crate) const VERIFIED: &str = "verified";
pub(crate) const LIVE: &str = "live";

/// Exact values longer than this are not indexed (and a filter on one matches nothing): no real
/// capability, tag or language is that long, and tantivy rejects huge terms.
const MAX_EXACT_BYTES: usize = 256;

/// How much a field counts relative to the others. A word found in the handle or name must beat
/// the same word found in a long description; DisjunctionMax (see query.rs) takes the best field
/// per word so a word repeated across many low fields cannot add up past a name hit.
///
/// Agents have three text fields by weight class rather than one per source field: each query
/// word costs one posting-list walk per field, and a frequent word's postings dominate query
/// time, so fewer fields is directly faster.
pub(crate) mod boost {
    pub const TITLE: f32 = 4.0;
    pub const SUMMARY: f32 = 2.0;
    pub const BODY: f32 = 1.0;

    pub const CALL_TITLE: f32 = 3.0;
    pub const CALL_TAGS: f32 = 2.0;
    pub const CALL_AUTHOR: f32 = 1.5;
    pub const CALL_BODY: f32 = 1.0;
}

fn text() -> TextOptions {
    TextOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer(TEXT_TOKENIZER)
            .set_index_option(IndexRecordOption::WithFreqs),
    )
}

/// The union of a document's text fields: which documents contain a word, nothing more.
fn all_text() -> TextOptions {
    TextOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer(TEXT_TOKENIZER)
            .set_index_option(IndexRecordOption::Basic)
            .set_fieldnorms(false),
    )
}

/// Builds one tantivy document, analysing each text value once for its field and for `all`:
/// the analysed words, joined by spaces, are what both fields receive, and tantivy only splits
/// them at spaces again (words never contain one). A value tantivy should not tokenize at all
/// (a pre-tokenized one) would go through its document serialization, which is much slower.
struct Builder<'a> {
    doc: TantivyDocument,
    all: Field,
    analyzer: &'a mut TextAnalyzer,
    words: String,
}

impl Builder<'_> {
    fn text(&mut self, field: Field, value: &str) {
        self.words.clear();
        let mut stream = self.analyzer.token_stream(value);
        while let Some(token) = stream.next() {
            if !self.words.is_empty() {
                self.words.push(' ');
            }
            self.words.push_str(&token.text);
        }
        if self.words.is_empty() {
            return;
        }
        self.doc.add_text(self.all, &self.words);
        self.doc.add_text(field, &self.words);
    }
}

/// Exact-match values, used only as filters (constant score), hence no field norms. Not FAST:
/// filters are TermQuery look-ups in the inverted index; a string column would only cost space.
fn exact() -> TextOptions {
    TextOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer("raw")
            .set_index_option(IndexRecordOption::Basic)
            .set_fieldnorms(false),
    )
}

fn fast() -> NumericOptions {
    NumericOptions::from(FAST)
}

fn key() -> NumericOptions {
    NumericOptions::from(FAST | INDEXED)
}

/// The weight class of a text value.
pub(crate) enum Class {
    Title,
    Summary,
    Body,
}

/// Every text value of an agent that search reads, with its weight class: what its document
/// holds, and what `words.rs` checks a query against.
pub(crate) fn agent_texts(a: &AgentDoc) -> impl Iterator<Item = (Class, &str)> {
    let titles = [&a.handle, &a.name].into_iter().map(|s| (Class::Title, s.as_str()));
    let summaries = std::iter::once(&a.tagline)
        .chain(a.capabilities.iter().chain(&a.offering_titles).chain(&a.offering_tags))
        .map(|s| (Class::Summary, s.as_str()));
    let bodies = [&a.description_en, &a.description_zh]
        .into_iter()
        .chain(&a.offering_deliverables)
        .chain(&a.observed)
        .chain(std::iter::once(&a.model))
        .map(|s| (Class::Body, s.as_str()));
    titles.chain(summaries).chain(bodies)
}

#[derive(Clone)]
pub(crate) struct AgentFields {
    pub key: Field,
    pub handle_exact: Field,
    /// Every word of title, summary and body.
    pub all: Field,
    /// handle (split at hyphens) and name.
    pub title: Field,
    /// tagline, capabilities, offering titles and offering tags, as words.
    pub summary: Field,
    /// descriptions (both languages), offering deliverables, what proven endpoints expose, model.
    pub body: Field,
    pub capability: Field,
    pub language: Field,
    pub ts: Field,
    pub joined: Field,
    pub level: Field,
    pub verified: Field,
    pub live: Field,
}

impl AgentFields {
    pub(crate) fn build() -> (Schema, AgentFields) {
        let mut b = Schema::builder();
        let fields = AgentFields {
            key: b.add_u64_field(KEY, key()),
            handle_exact: b.add_text_field("handle_exact", exact()),
            all: b.add_text_field("all", all_text()),
            title: b.add_text_field("title", text()),
            summary: b.add_text_field("summary", text()),
            body: b.add_text_field("body", text()),
            capability: b.add_text_field("capability", exact()),
            language: b.add_text_field("language", exact()),
            ts: b.add_i64_field(TS, fast()),
            joined: b.add_i64_field(JOINED, fast()),
            level: b.add_u64_field(LEVEL, fast()),
            verified: b.add_bool_field(VERIFIED, fast()),
            live: b.add_bool_field(LIVE, fast()),
        };
        (b.build(), fields)
    }

    /// The fields whose terms searches count (see dense.rs).
    pub(crate) fn counted(&self) -> [Field; 3] {
        [self.all, self.capability, self.language]
    }

    pub(crate) fn text_fields(&self) -> [(Field, f32); 3] {
        [(self.title, boost::TITLE), (self.summary, boost::SUMMARY), (self.body, boost::BODY)]
    }

    pub(crate) fn document(&self, a: &AgentDoc, analyzer: &mut TextAnalyzer) -> TantivyDocument {
        let mut b =
            Builder { doc: TantivyDocument::default(), all: self.all, analyzer, words: String::new() };
        for (class, value) in agent_texts(a) {
            let field = match class {
                Class::Title => self.title,
                Class::Summary => self.summary,
                Class::Body => self.body,
            };
            b.text(field, value);
        }
        let mut d = b.doc;
        d.add_u64(self.key, a.key);
        add_exact(&mut d, self.handle_exact, &a.handle);
        for c in &a.capabilities {
            add_exact(&mut d, self.capability, c);
        }
        for l in &a.languages {
            add_exact(&mut d, self.language, l);
        }
        d.add_i64(self.ts, a.last_active_at);
        d.add_i64(self.joined, a.joined_at);
        d.add_u64(self.level, a.level);
        d.add_bool(self.verified, a.mailbox_verified);
        d.add_bool(self.live, a.live);
        d
    }
}

#[derive(Clone)]
pub(crate) struct CallFields {
    pub key: Field,
    /// Every word of title, tags, author and body.
    pub all: Field,
    pub title: Field,
    /// tags, as words.
    pub tags_text: Field,
    pub author_text: Field,
    /// body, deliverable, constraints.
    pub body: Field,
    pub tag: Field,
    pub kind: Field,
    pub author: Field,
    pub lang: Field,
    pub ts: Field,
}

impl CallFields {
    pub(crate) fn build() -> (Schema, CallFields) {
        let mut b = Schema::builder();
        let fields = CallFields {
            key: b.add_u64_field(KEY, key()),
            all: b.add_text_field("all", all_text()),
            title: b.add_text_field("title", text()),
            tags_text: b.add_text_field("tags_text", text()),
            author_text: b.add_text_field("author_text", text()),
            body: b.add_text_field("body", text()),
            tag: b.add_text_field("tag", exact()),
            kind: b.add_text_field("kind", exact()),
            author: b.add_text_field("author", exact()),
            lang: b.add_text_field("lang", exact()),
            ts: b.add_i64_field(TS, fast()),
        };
        (b.build(), fields)
    }

    /// The fields whose terms searches count (see dense.rs).
    pub(crate) fn counted(&self) -> [Field; 3] {
        [self.all, self.tag, self.kind]
    }

    pub(crate) fn text_fields(&self) -> [(Field, f32); 4] {
        [
            (self.title, boost::CALL_TITLE),
            (self.tags_text, boost::CALL_TAGS),
            (self.author_text, boost::CALL_AUTHOR),
            (self.body, boost::CALL_BODY),
        ]
    }

    pub(crate) fn document(&self, c: &CallDoc, analyzer: &mut TextAnalyzer) -> TantivyDocument {
        let mut b =
            Builder { doc: TantivyDocument::default(), all: self.all, analyzer, words: String::new() };
        b.text(self.title, &c.title);
        for t in &c.tags {
            b.text(self.tags_text, t);
        }
        b.text(self.author_text, &c.author_handle);
        b.text(self.body, &c.body);
        b.text(self.body, &c.deliverable);
        b.text(self.body, &c.constraints);
        let mut d = b.doc;
        d.add_u64(self.key, c.key);
        for t in &c.tags {
            add_exact(&mut d, self.tag, t);
        }
        add_exact(&mut d, self.kind, &c.kind);
        add_exact(&mut d, self.author, &c.author_handle);
        add_exact(&mut d, self.lang, &c.lang);
        d.add_i64(self.ts, c.created_at);
        d
    }
}

fn add_exact(d: &mut TantivyDocument, field: Field, value: &str) {
    let v = normalize_exact(value);
    if !v.is_empty() && v.len() <= MAX_EXACT_BYTES {
        d.add_text(field, v);
    }
}

/// The filter-side counterpart of [`add_exact`]: `None` means the value can never match.
pub(crate) fn exact_term_value(value: &str) -> Option<String> {
    let v = normalize_exact(value);
    (!v.is_empty() && v.len() <= MAX_EXACT_BYTES).then_some(v)
}
