//! Builds tantivy queries from analysed words and filter values. User text never reaches
//! tantivy's query parser, so no input can be a syntax error: every clause is a TermQuery on a
//! term we produced ourselves.
//!
//! Shape: `AND over words ( DisjunctionMax over fields ( Boost(TermQuery) ) )`, plus, for agents,
//! an alternative exact-handle clause, and `Must(ConstScore(filter, 0))` per exact filter so
//! filters narrow the hits without touching scores.

use tantivy::Term;
use tantivy::query::{
    BooleanQuery, BoostQuery, ConstScoreQuery, DisjunctionMaxQuery, Occur, Query, TermQuery,
};
use tantivy::schema::{Field, IndexRecordOption};

use crate::analysis::QueryWord;

/// Other fields' scores add this fraction on top of the best field's: a word matching name and
/// description ranks a little above one matching only the name, but many weak fields never
/// outweigh one strong one.
const TIE_BREAKER: f32 = 0.1;

/// Score added for an exact whole-handle match: larger than any realistic BM25 sum, so the agent
/// whose handle was typed in full comes first.
const EXACT_HANDLE_SCORE: f32 = 1000.0;

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

fn word_query(word: &QueryWord, fields: &[(Field, f32)]) -> Box<dyn Query> {
    let whole = term_in_fields(&word.term, fields);
    if word.parts.is_empty() {
        return whole;
    }
    let parts: Vec<Box<dyn Query>> = word.parts.iter().map(|p| term_in_fields(p, fields)).collect();
    Box::new(BooleanQuery::union(vec![whole, Box::new(BooleanQuery::intersection(parts))]))
}

/// Every word must match somewhere; `None` when there are no words.
pub(crate) fn words_query(words: &[QueryWord], fields: &[(Field, f32)]) -> Option<Box<dyn Query>> {
    match words {
        [] => None,
        [one] => Some(word_query(one, fields)),
        many => {
            Some(Box::new(BooleanQuery::intersection(many.iter().map(|w| word_query(w, fields)).collect())))
        }
    }
}

/// `text` OR the exact whole handle.
pub(crate) fn with_exact_handle(
    text: Option<Box<dyn Query>>,
    handle_field: Field,
    handle: Option<&str>,
) -> Option<Box<dyn Query>> {
    let Some(handle) = handle else {
        return text;
    };
    let exact: Box<dyn Query> =
        Box::new(ConstScoreQuery::new(Box::new(exact_term(handle_field, handle)), EXACT_HANDLE_SCORE));
    Some(match text {
        Some(text) => Box::new(BooleanQuery::union(vec![text, exact])),
        None => exact,
    })
}

pub(crate) fn exact_term(field: Field, value: &str) -> TermQuery {
    TermQuery::new(Term::from_field_text(field, value), IndexRecordOption::Basic)
}

/// Combines an optional scored query with exact filters. With no scored query the filters alone
/// decide the hits (scoring is off in that case). `None` means "every document".
pub(crate) fn with_filters(
    scored: Option<Box<dyn Query>>,
    filters: Vec<TermQuery>,
) -> Option<Box<dyn Query>> {
    if filters.is_empty() {
        return scored;
    }
    let mut clauses: Vec<(Occur, Box<dyn Query>)> = Vec::with_capacity(filters.len() + 1);
    if let Some(q) = scored {
        clauses.push((Occur::Must, q));
    }
    for f in filters {
        clauses.push((Occur::Must, Box::new(ConstScoreQuery::new(Box::new(f), 0.0))));
    }
    Some(Box::new(BooleanQuery::new(clauses)))
}
