//! Evaluation of a free-text search in two passes per segment: the exact set of matches, whose
//! size is the total (matches.rs), and the ranking of the few matches that can reach the page
//! (rank.rs).
//!
//! Why not one pass: the page shows 20 documents, but `total` counts all of them, and the common
//! words of a directory ("data", "translation", "翻译") are in a third of all calls. Scoring every
//! match meant walking each word's list in every scored field and combining them per document,
//! about 5 ms of CPU for a query over a million calls. Counting only needs to know which
//! documents contain every word anywhere, which the `all` field answers with one list per word
//! (for a common word, a bitmap kept per segment: dense.rs; for a single word, its document
//! count); ranking only needs the documents that can beat the page's lowest score, which
//! per-list score bounds find while looking at a small part of the lists.
//!
//! Scores are those of `Must(word₁, word₂, …)` with each word a `DisjunctionMax` over the scored
//! fields of boosted BM25 term scores (tie breaker 0.1), plus, for a long Chinese word, its
//! sub-words' scores when all are present; BM25 statistics are searcher-wide. The exact-handle
//! alternative matches on its own and adds its bonus; filters never change scores.

use std::collections::HashMap;

use std::sync::Arc;
use tantivy::query::Bm25Weight;
use tantivy::schema::{Field, IndexRecordOption};

use tantivy::{DocId, DocSet, Score, SegmentReader, TERMINATED, Term};

use crate::analysis::QueryWord;
use crate::collect::{Hits, NumericColumns, NumericFilters};
use crate::matches::{self, Bits, MatchSet, Members, WordCondition, seek_to};
use crate::overlay::Leaf;
use crate::rank::{ClauseSpec, Ranker, Top};
use crate::warm::{SegmentData, Segments};

/// A free-text search, already analysed.
pub(crate) struct TextPlan {
    /// A document must contain all of them (possibly none, then only `exact` can match).
    pub words: Vec<QueryWord>,
    /// The scored text fields and their boosts.
    pub fields: Vec<(Field, Score)>,
    /// The field holding every word of the scored fields.
    pub all: Field,
    /// An alternative that matches on its own and adds this score (the whole handle typed in).
    pub exact: Option<(Term, Score)>,
    /// Every hit must also hold each of these terms; they never change scores.
    pub filters: Vec<Term>,
}

/// The total number of matches and the best `k` sort values.
pub(crate) fn search(
    leaves: &[Arc<Leaf>],
    segments: &Segments,
    plan: &TextPlan,
    numeric: &NumericFilters,
    k: usize,
) -> tantivy::Result<Hits> {
    let words = word_conditions(plan);
    let specs = clause_specs(leaves, plan)?;
    let slots: Vec<usize> = plan.words.iter().map(|w| 1 + w.parts.len()).collect();
    let query = Query { plan, words, specs, slots, numeric, segments };
    let mut top = Top::new(k);
    let mut total = 0;
    for (ordinal, leaf) in leaves.iter().enumerate() {
        total += query.segment(leaf, ordinal, &mut top)?;
    }
    Ok(Hits::new(total, top.into_values()))
}

/// What a document must hold of each word of `plan`, in the `all` field.
pub(crate) fn word_conditions(plan: &TextPlan) -> Vec<WordCondition> {
    plan.words
        .iter()
        .map(|w| WordCondition {
            term: Term::from_field_text(plan.all, &w.term),
            parts: w.parts.iter().map(|p| Term::from_field_text(plan.all, p)).collect(),
        })
        .collect()
}

/// One scored list per (word or sub-word, field) that exists anywhere in the index, weighted
/// with statistics over every segment (the overlay's too), as tantivy's `TermQuery` would be.
/// Like tantivy's, they count masked and deleted documents until a merge drops them.
fn clause_specs(leaves: &[Arc<Leaf>], plan: &TextPlan) -> tantivy::Result<Vec<ClauseSpec>> {
    let num_docs: u64 = leaves.iter().map(|l| u64::from(l.reader.max_doc())).sum();
    let mut average: HashMap<Field, Score> = HashMap::new();
    for &(field, _) in &plan.fields {
        let mut tokens = 0u64;
        for leaf in leaves {
            tokens += leaf.reader.inverted_index(field)?.total_num_tokens();
        }
        average.insert(field, tokens as Score / num_docs.max(1) as Score);
    }
    let mut specs = Vec::new();
    for (word, w) in plan.words.iter().enumerate() {
        for (slot, text) in std::iter::once(&w.term).chain(&w.parts).enumerate() {
            for &(field, boost) in &plan.fields {
                let term = Term::from_field_text(field, text);
                let mut df = 0;
                let mut lists = Vec::with_capacity(leaves.len());
                for leaf in leaves {
                    let info = leaf.reader.inverted_index(field)?.get_term_info(&term)?;
                    df += info.as_ref().map_or(0, |i| u64::from(i.doc_freq));
                    lists.push(info);
                }
                if df == 0 {
                    continue;
                }
                let weight = Bm25Weight::for_one_term(df, num_docs, average[&field]).boost_by(boost);
                let average = average[&field];
                specs.push(ClauseSpec { word, slot, term, weight, average, lists });
            }
        }
    }
    Ok(specs)
}

struct Query<'q> {
    plan: &'q TextPlan,
    words: Vec<WordCondition>,
    specs: Vec<ClauseSpec>,
    slots: Vec<usize>,
    numeric: &'q NumericFilters,
    segments: &'q Segments,
}

impl Query<'_> {
    /// Offers this segment's best matches to `top`; returns how many documents match.
    fn segment(&self, leaf: &Leaf, ordinal: usize, top: &mut Top) -> tantivy::Result<u64> {
        let segment = &leaf.reader;
        let numeric = NumericColumns::for_segment(segment, self.numeric)?;
        let data = self.segments.get(segment)?;
        let found = if self.words.is_empty() {
            MatchSet { count: 0, members: Members::Bits(Bits::empty(0)) }
        } else {
            matches::compute(
                segment,
                leaf.alive.as_ref(),
                Some(&data.bitmaps),
                &self.words,
                &self.plan.filters,
                &numeric,
            )?
        };
        let mut count = found.count;
        let handles = self.handle_matches(leaf, &numeric)?;
        if !handles.is_empty() {
            let bonus = self.plan.exact.as_ref().map_or(0.0, |(_, b)| *b);
            let text = if self.words.is_empty() {
                vec![None; handles.len()]
            } else {
                let no_check = Members::Alive(None);
                let mut ranker = self.ranker(segment, ordinal, &data, &no_check, &[])?;
                ranker.exact(&handles)
            };
            for (&doc, text) in handles.iter().zip(text) {
                // A handle match without the words is one more match than the text found.
                count += u64::from(text.is_none());
                top.push(bonus + text.unwrap_or(0.0), data.key.get_val(doc));
            }
        }
        if found.count > 0 {
            let mut ranker = self.ranker(segment, ordinal, &data, &found.members, &handles)?;
            ranker.walk(top, found.count)?;
        }
        Ok(count)
    }

    fn ranker<'a>(
        &'a self,
        segment: &'a SegmentReader,
        ordinal: usize,
        data: &SegmentData,
        members: &'a Members<'a>,
        skip: &'a [DocId],
    ) -> tantivy::Result<Ranker<'a>> {
        Ranker::new(segment, ordinal, data, &self.specs, &self.slots, members, skip)
    }

    /// Live documents whose whole handle was typed in and that pass every filter, in order.
    fn handle_matches(&self, leaf: &Leaf, numeric: &NumericColumns) -> tantivy::Result<Vec<DocId>> {
        let segment = &leaf.reader;
        let Some((term, _)) = &self.plan.exact else {
            return Ok(Vec::new());
        };
        let Some(mut handle) = postings(segment, term)? else {
            return Ok(Vec::new());
        };
        let mut filters = Vec::with_capacity(self.plan.filters.len());
        for f in &self.plan.filters {
            match postings(segment, f)? {
                Some(p) => filters.push(p),
                None => return Ok(Vec::new()),
            }
        }
        let mut out = Vec::new();
        while handle.doc() != TERMINATED {
            let doc = handle.doc();
            if leaf.is_alive(doc) && numeric.passes(doc) && filters.iter_mut().all(|f| seek_to(f, doc)) {
                out.push(doc);
            }
            handle.advance();
        }
        Ok(out)
    }
}

fn postings(
    segment: &SegmentReader,
    term: &Term,
) -> tantivy::Result<Option<tantivy::postings::SegmentPostings>> {
    Ok(segment.inverted_index(term.field())?.read_postings(term, IndexRecordOption::Basic)?)
}
