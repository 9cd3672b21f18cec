//! Builds tantivy queries from analysed words and filter values. User text never reaches
//! tantivy's query parser, so no input can be a syntax error: every clause is a TermQuery on a
//! term we produced ourselves.
//!
//! Per word: `DisjunctionMax over fields ( Boost(TermQuery) )`; evaluate.rs intersects the words,
//! adds the exact-handle alternative and applies the exact filters without scoring them (the
//! equivalent of `Must(ConstScore(filter, 0))`, which is how tantivy would express it).

use tantivy::Term;
use tantivy::query::{AllQuery, BooleanQuery, BoostQuery, DisjunctionMaxQuery, Occur, Query, TermQuery};
use tantivy::schema::{Field, IndexRecordOption};

use crate::analysis::QueryWord;

/// Other fields' scores add this fraction on top of the best field's: a word matching name and
/// description ranks a little above one matching only the name, but many weak fields never
/// outweigh one strong one.
const TIE_BREAKER: f32 = 0.1;

/// Score added for an exact whole-handle match: larger than any realistic BM25 sum, so the agent
/// whose handle was typed in full comes first.
pub(crate) const EXACT_HANDLE_SCORE: f32 = 1000.0;

fn term_in_fields(term: &str, fields: &[(Field, f32)]) -> Box<dyn Query> {
    let disjuncts: Vec<Box<dyn Query>> = fields
        .iter()
        .map(|&(field, boost)| {
            let q = TermQuery::new(Term::from_field_text(field, term), IndexRecordOption::WithFreqs);
            Box::new(BoostQuery::new(Box::new(q), boost)) as Box<dyn Query>
        })
        .collect();
    Box::new(DisjunctionMaxQuery::with_tie_breaker(disjuncts, TIE_BREAKER))
}

/// The document must contain the word in some field (best field counts, plus a little of the
/// others), or, for a long Chinese word, all of its sub-words.
pub(crate) fn word_query(word: &QueryWord, fields: &[(Field, f32)]) -> Box<dyn Query> {
    let whole = term_in_fields(&word.term, fields);
    if word.parts.is_empty() {
        return whole;
    }
    let parts: Vec<Box<dyn Query>> = word.parts.iter().map(|p| term_in_fields(p, fields)).collect();
    Box::new(BooleanQuery::union(vec![whole, Box::new(BooleanQuery::intersection(parts))]))
}

pub(crate) fn exact_term(field: Field, value: &str) -> TermQuery {
    TermQuery::new(Term::from_field_text(field, value), IndexRecordOption::Basic)
}

/// The hits of an unscored listing: every document, or those matching all `filters`.
pub(crate) fn filters_only(filters: Vec<TermQuery>) -> Box<dyn Query> {
    if filters.is_empty() {
        return Box::new(AllQuery);
    }
    Box::new(BooleanQuery::new(
        filters.into_iter().map(|f| (Occur::Must, Box::new(f) as Box<dyn Query>)).collect(),
    ))
}
