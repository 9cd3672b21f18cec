//! Calls searched with three words or more, so that one absent word never empties the result:
//!
//! - with four or more, a call matches when it holds at least two thirds of the words (rounded
//!   up), so a sentence that shares most of its words with a call finds it;
//! - with three, a call matches when it holds all three; only when no call does, one that
//!   holds two of them ([`fallback`]).
//!
//! The matches are counted exactly and ranked by the sum of their words' scores (each the
//! `DisjunctionMax` of boosted BM25 over the scored fields, as `evaluate.rs` scores them):
//! holding more of the words ranks higher.
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

/// Words from which the two-thirds rule applies. Not three: a query of three common words held
/// two at a time matched most of the search benchmark's million calls, and scoring them all
/// took 16 ms where the query of all three took under 1 ms (`cargo run --release -p
/// agentdir-bench --bin search`, p99 of call searches at 16 clients 57 ms with three, back under
/// 10 ms with four). Keyword queries are short; sentences are longer.
pub const RELAXED_FROM_WORDS: usize = 4;
/// With this many words, all must be held unless no call holds them all ([`fallback`]): the
/// common case costs what an all-words query costs, and the costly two-of-three scoring runs
/// only for the rare query that would otherwise find nothing.
pub const ALL_OR_TWO_WORDS: usize = 3;

/// Words a call must hold of `n` under the two-thirds rule (all of them below
/// [`RELAXED_FROM_WORDS`]; for three words, see [`ALL_OR_TWO_WORDS`]).
pub fn required_words(n: usize) -> usize {
    if n < RELAXED_FROM_WORDS { n } else { (2 * n).div_ceil(3) }
}

/// A three-word search that no call matches with all three: what runs instead. A word no call
/// holds anywhere is dropped first, since holding two of three then means holding both others,
/// which the all-words evaluation answers from its bitmaps; only when every word is held
/// somewhere do two of three need the scored union.
pub(crate) fn fallback(leaves: &[Arc<Leaf>], plan: TextPlan) -> tantivy::Result<Fallback> {
    let held = |text: &str| -> tantivy::Result<bool> {
        let term = Term::from_field_text(plan.all, text);
        for leaf in leaves {
            if leaf.reader.inverted_index(plan.all)?.doc_freq(&term)? > 0 {
                return Ok(true);
            }
        }
        Ok(false)
    };
    let mut present = Vec::with_capacity(plan.words.len());
    for w in &plan.words {
        let mut parts_held = !w.parts.is_empty();
        for p in &w.parts {
            parts_held = parts_held && held(p)?;
        }
        present.push(held(&w.term)? || parts_held);
    }
    let n = plan.words.len();
    let kept = present.iter().filter(|p| **p).count();
    Ok(match kept {
        k if k == n => Fallback::AllButOne(plan),
        k if k + 1 == n && k >= 2 => {
            let mut flags = present.into_iter();
            let words = plan.words.into_iter().filter(|_| flags.next().unwrap_or(false)).collect();
            Fallback::AllHeld(TextPlan { words, ..plan })
        }
        _ => Fallback::Nothing,
    })
}

/// What a three-word search runs when no document holds all three words.
pub(crate) enum Fallback {
    /// Every word of this plan must be held (a word nobody holds was dropped).
    AllHeld(TextPlan),
    /// All but one of this plan's words must be held: the scored union ([`search`]).
    AllButOne(TextPlan),
    /// Two words or more are held by nobody.
    Nothing,
}

fn query(plan: &TextPlan, required: usize) -> BooleanQuery {
    let words: Vec<(Occur, Box<dyn Query>)> =
        plan.words.iter().map(|w| (Occur::Should, word_query(w, &plan.fields))).collect();
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

/// The total number of matches holding `required` of the words and the best `k` sort values.
pub(crate) fn search(
    leaves: &[Arc<Leaf>],
    segments: &Segments,
    searcher: &Searcher,
    plan: &TextPlan,
    required: usize,
    k: usize,
) -> tantivy::Result<Hits> {
    let mut top = Top::new(k);
    let mut total = 0;
    for_each_match(leaves, segments, searcher, plan, required, |score, key| {
        total += 1;
        top.push(score, key);
    })?;
    Ok(Hits::new(total, top.into_values()))
}

/// Calls `f` with the score and key of every live document holding `required` of the words.
pub(crate) fn for_each_match(
    leaves: &[Arc<Leaf>],
    segments: &Segments,
    searcher: &Searcher,
    plan: &TextPlan,
    required: usize,
    mut f: impl FnMut(f32, u64),
) -> tantivy::Result<()> {
    let statistics = Statistics(leaves);
    let weight = query(plan, required)
        .weight(EnableScoring::enabled_from_statistics_provider(&statistics, searcher))?;
    for leaf in leaves {
        let keys = segments.get(&leaf.reader)?.key.clone();
        weight.for_each(&leaf.reader, &mut |doc, score| {
            if leaf.is_alive(doc) {
                f(score, keys.get_val(doc));
            }
        })?;
    }
    Ok(())
}
