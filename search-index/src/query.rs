//! Builds tantivy queries from filter values, and (for tests) the free-text query whose results
//! evaluate.rs must reproduce. User text never reaches tantivy's query parser, so no input can
//! be a syntax error: every clause is a term we produced ourselves.

use tantivy::Term;
use tantivy::query::{AllQuery, BooleanQuery, Occur, Query, TermQuery};
use tantivy::schema::{Field, IndexRecordOption};

/// Score added for an exact whole-handle match: larger than any realistic BM25 sum, so the agent
/// whose handle was typed in full comes first.
pub(crate) const EXACT_HANDLE_SCORE: f32 = 1000.0;

pub(crate) fn exact_term(field: Field, value: &str) -> Term {
    Term::from_field_text(field, value)
}

/// The hits of an unscored listing: every document, or those matching all `filters`.
pub(crate) fn filters_only(filters: Vec<Term>) -> Box<dyn Query> {
    if filters.is_empty() {
        return Box::new(AllQuery);
    }
    Box::new(BooleanQuery::new(
        filters
            .into_iter()
            .map(|t| (Occur::Must, Box::new(TermQuery::new(t, IndexRecordOption::Basic)) as Box<dyn Query>))
            .collect(),
    ))
}

/// The document must contain the word in some field (best field counts, plus a little of the
/// others), or, for a long Chinese word, all of its sub-words: what evaluate.rs computes, as
/// tantivy's own queries (and what relaxed.rs runs).
pub(crate) fn word_query(word: &crate::analysis::QueryWord, fields: &[(Field, f32)]) -> Box<dyn Query> {
    use tantivy::query::{BoostQuery, DisjunctionMaxQuery};

    let term_in_fields = |term: &str| -> Box<dyn Query> {
        let disjuncts: Vec<Box<dyn Query>> = fields
            .iter()
            .map(|&(field, boost)| {
                let q = TermQuery::new(Term::from_field_text(field, term), IndexRecordOption::WithFreqs);
                Box::new(BoostQuery::new(Box::new(q), boost)) as Box<dyn Query>
            })
            .collect();
        Box::new(DisjunctionMaxQuery::with_tie_breaker(disjuncts, crate::rank::TIE_BREAKER))
    };
    let whole = term_in_fields(&word.term);
    if word.parts.is_empty() {
        return whole;
    }
    let parts: Vec<Box<dyn Query>> = word.parts.iter().map(|p| term_in_fields(p)).collect();
    Box::new(BooleanQuery::union(vec![whole, Box::new(BooleanQuery::intersection(parts))]))
}
