//! Calls searched with four words or more: a call matches when it holds at least two thirds of
//! the words (rounded up), so a sentence that shares most of its words with a call finds it and
//! one absent word does not empty the result. The matches are counted exactly and ranked by the
//! sum of their words' scores (each the `DisjunctionMax` of boosted BM25 over the scored fields,
//! as `evaluate.rs` scores them): holding more of the words ranks higher.
//!
//! A word holds when its term is in the document or, for a long Chinese word, all its parts are
//! (`matches.rs` states the same rule). BM25 statistics are over every leaf, the overlay's too,
//! as `evaluate.rs` computes them, so a flush changes no score.

use std::sync::Arc;

use tantivy::query::{
    Bm25StatisticsProvider, BooleanQuery, BoostQuery, EnableScoring, Occur, Query, TermQuery,
};
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::{Searcher, Term};

use crate::collect::Hits;
use crate::evaluate::TextPlan;
use crate::overlay::Leaf;
use crate::query::word_query;
use crate::rank::Top;
use crate::warm::Segments;

/// Words from which the relaxed rule applies (fewer must all be held). Not three: a query of
/// three common words held two at a time matched most of the search benchmark's million calls,
/// and scoring them all took 16 ms where the query of all three took under 1 ms
/// (`cargo run --release -p agentdir-bench --bin search`, p99 of call searches at 16 clients
/// 57 ms with three, back under 10 ms with four). Keyword queries are short; sentences are longer.
pub const RELAXED_FROM_WORDS: usize = 4;

/// Words a call must hold of `n`.
pub fn required_words(n: usize) -> usize {
    if n < RELAXED_FROM_WORDS { n } else { (2 * n).div_ceil(3) }
}

fn query(plan: &TextPlan) -> BooleanQuery {
    let words: Vec<(Occur, Box<dyn Query>)> =
        plan.words.iter().map(|w| (Occur::Should, word_query(w, &plan.fields))).collect();
    let required = required_words(plan.words.len());
    let mut clauses: Vec<(Occur, Box<dyn Query>)> =
        vec![(Occur::Must, Box::new(BooleanQuery::with_minimum_required_clauses(words, required)))];
    for filter in &plan.filters {
        let exact = TermQuery::new(filter.clone(), IndexRecordOption::Basic);
        clauses.push((Occur::Must, Box::new(BoostQuery::new(Box::new(exact), 0.0))));
    }
    BooleanQuery::new(clauses)
}

/// BM25 statistics over the leaves a search reads.
struct Statistics<'a>(&'a [Arc<Leaf>]);

impl Bm25StatisticsProvider for Statistics<'_> {
    fn total_num_tokens(&self, field: Field) -> tantivy::Result<u64> {
        let mut tokens = 0;
        for leaf in self.0 {
            tokens += leaf.reader.inverted_index(field)?.total_num_tokens();
        }
        Ok(tokens)
    }

    fn total_num_docs(&self) -> tantivy::Result<u64> {
        Ok(self.0.iter().map(|l| u64::from(l.reader.max_doc())).sum())
    }

    fn doc_freq(&self, term: &Term) -> tantivy::Result<u64> {
        let mut df = 0;
        for leaf in self.0 {
            df += u64::from(leaf.reader.inverted_index(term.field())?.doc_freq(term)?);
        }
        Ok(df)
    }
}

/// The total number of matches and the best `k` sort values.
pub(crate) fn search(
    leaves: &[Arc<Leaf>],
    segments: &Segments,
    searcher: &Searcher,
    plan: &TextPlan,
    k: usize,
) -> tantivy::Result<Hits> {
    let statistics = Statistics(leaves);
    let weight =
        query(plan).weight(EnableScoring::enabled_from_statistics_provider(&statistics, searcher))?;
    let mut top = Top::new(k);
    let mut total = 0;
    for leaf in leaves {
        let keys = segments.get(&leaf.reader)?.key.clone();
        weight.for_each(&leaf.reader, &mut |doc, score| {
            if leaf.is_alive(doc) {
                total += 1;
                top.push(score, keys.get_val(doc));
            }
        })?;
    }
    Ok(Hits::new(total, top.into_values()))
}
