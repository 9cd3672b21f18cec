//! Finding calls with `q`: word matches (the search index) and meaning matches (the call
//! vectors) fused, paged with an exact total. The rule, stated in docs/search.md "Calls":
//!
//! - A call matches when it holds the words of `q` (the index's rule: one or two words all;
//!   three all, or two when no call holds all three; four or more two thirds) or, among the
//!   [`MEANING_CANDIDATES`] calls nearest the need at or above the meaning threshold (the
//!   agents' [`MEANING_THRESHOLD`](super::MEANING_THRESHOLD); [`MADE_UP_THRESHOLD`](
//!   super::MADE_UP_THRESHOLD) for a made-up need), it is near enough. Every filter applies to
//!   both. `total` counts the calls matching either way, each once. There is no nearest fill:
//!   a call is a request of the moment, not an agent to be met.
//! - The first [`WORD_WINDOW`] word matches and every meaning-only match are ordered by their
//!   relevance (`score::relevance`, as for agents; calls carry no evidence), newer first on a
//!   tie; the remaining word matches follow in word order.
//! - A need is read as for agents (`App::with_need`): remembered, within its network's share of
//!   the model, by the quick encoder, or by words alone, and the answer says which.
//! - A call is found by words once its POST is answered, and by meaning once the call worker
//!   has read it (`service::call_vectors`).

use std::collections::HashSet;
use std::net::IpAddr;

use agentdir_meaning::{Hit, Quantized};
use agentdir_search_index::{CallQuery, Page as IndexPage};

use super::score::{self, WordPlace};
use super::{FULL_MODEL, MEANING_CANDIDATES, Need, QUICK_ENCODER, WORD_WINDOW, index_failed};
use crate::app::App;
use crate::app::model::SearchMode;
use crate::app::runtime::Bound;
use crate::derived::call_vectors::CallFilter;
use crate::domain::call::{CallList, CallSearch};
use crate::domain::list::Page;
use crate::domain::notice::NOTICE;
use crate::domain::ranking::MatchedBy;
use crate::error::Result;

impl App {
    /// `GET /api/posts` and MCP `search_calls`, for `client` (whose network's share of the
    /// model reads the need, as for agents).
    pub async fn find_calls(&self, q: CallSearch, client: IpAddr) -> Result<CallList> {
        let text = q.q.clone();
        self.with_need(text, client, move |app, need| app.search_calls_now(q, need)).await
    }

    /// A call search by words alone (or recency without `q`), whatever the mode (the
    /// benchmarks compare it with `find_calls`).
    pub async fn search_calls(&self, q: CallSearch) -> Result<CallList> {
        self.bounded(Bound::Search, move |app| app.search_calls_now(q, Need::Words)).await
    }

    fn search_calls_now(&self, q: CallSearch, need: Need) -> Result<CallList> {
        self.catch_up()?;
        let page = Page::new(q.limit, q.offset);
        let text = q.q.as_deref().map(str::trim).filter(|t| !t.is_empty());
        let query = CallQuery {
            text,
            kind: q.kind.map(|k| k.as_str()),
            tag: q.tag.as_deref(),
            author_handle: None,
            limit: page.limit as usize,
            offset: page.offset as usize,
        };
        let (total, keys, matched_by) = match text {
            None => {
                let found = self.index.search_calls(&query).map_err(index_failed)?;
                (found.total, found.keys, MatchedBy::Recency)
            }
            Some(text) => {
                let matched_by = self.matched_by(&need);
                let filter = CallFilter::new(q.kind, q.tag.as_deref());
                let (total, keys) = self.ordered_calls(&query, text, &filter, need, matched_by)?;
                (total, keys, matched_by)
            }
        };
        let keys: Vec<i64> = keys.iter().map(|k| *k as i64).collect();
        let posts = self.call_items(&keys)?;
        Ok(CallList { notice: NOTICE, matched_by, posts, total, limit: page.limit, offset: page.offset })
    }

    /// The total and the page's keys of a call search with text, by the module's rule.
    fn ordered_calls(
        &self,
        query: &CallQuery,
        text: &str,
        filter: &CallFilter,
        need: Need,
        matched_by: MatchedBy,
    ) -> Result<(u64, Vec<u64>)> {
        let (vector, rule) = match need {
            Need::Full(r) => (r.vector, &FULL_MODEL),
            Need::Quick(r) => (r.vector, &QUICK_ENCODER),
            Need::Busy | Need::Words => {
                let found = self.index.search_calls(query).map_err(index_failed)?;
                return Ok((found.total, found.keys));
            }
        };
        let use_words = self.model.mode != SearchMode::Meaning;
        let window = if use_words {
            self.index
                .search_calls(&CallQuery { limit: WORD_WINDOW, offset: 0, ..*query })
                .map_err(index_failed)?
        } else {
            IndexPage::default()
        };
        let threshold = self.need_words(text).threshold(rule);
        let meaning_only = self.meaning_only_calls(query, &vector, threshold, filter, &window, use_words)?;
        let total = window.total + meaning_only.len() as u64;
        let state = self.vectors.calls.read();
        let n = window.keys.len();
        // A word match the call worker has not read yet is weighed by its words alone, as if
        // the search were by words: its meaning is unknown, not nil.
        let relevance = |words: Option<WordPlace>, similarity: Option<f32>| {
            let by = if similarity.is_some() { matched_by } else { MatchedBy::Words };
            score::call_score(&score::relevance(by, words, similarity))
        };
        let mut fused: Vec<(u64, f32)> = window
            .keys
            .iter()
            .enumerate()
            .map(|(place, &key)| {
                let similarity = state.matrix.similarity(&vector, key);
                (key, relevance(Some(WordPlace { place, window: n }), similarity))
            })
            .chain(meaning_only.iter().map(|h| (h.key, relevance(None, Some(h.similarity)))))
            .collect();
        drop(state);
        fused.sort_by(|a, b| b.1.total_cmp(&a.1).then(b.0.cmp(&a.0)));
        let (offset, limit) = (query.offset, query.limit);
        let mut keys: Vec<u64> = fused.iter().skip(offset).take(limit).map(|(k, _)| *k).collect();
        let fused_len = fused.len();
        if keys.len() < limit && window.total as usize > n {
            let start = offset.max(fused_len) - fused_len;
            let tail = self
                .index
                .search_calls(&CallQuery { offset: WORD_WINDOW + start, limit: limit - keys.len(), ..*query })
                .map_err(index_failed)?;
            keys.extend(tail.keys);
        }
        Ok((total, keys))
    }

    /// The nearest [`MEANING_CANDIDATES`] calls at or above `threshold` that pass the filters,
    /// less the word matches among them (with `use_words`).
    fn meaning_only_calls(
        &self,
        query: &CallQuery,
        vector: &Quantized,
        threshold: f32,
        filter: &CallFilter,
        window: &IndexPage,
        use_words: bool,
    ) -> Result<Vec<Hit>> {
        let near: Vec<Hit> = {
            let state = self.vectors.calls.read();
            state
                .matrix
                .nearest(vector, threshold, MEANING_CANDIDATES, |row| filter.admits(row))
                .take_while(|h| h.similarity >= threshold)
                .take(MEANING_CANDIDATES)
                .collect()
        };
        if !use_words {
            return Ok(near);
        }
        let in_window: HashSet<u64> = window.keys.iter().copied().collect();
        let near: Vec<Hit> = near.into_iter().filter(|h| !in_window.contains(&h.key)).collect();
        // Word matches past the window: asked only when the window did not hold them all.
        let held = if window.total as usize > window.keys.len() && !near.is_empty() {
            let keys: HashSet<u64> = near.iter().map(|h| h.key).collect();
            self.index.calls_holding(query, &keys).map_err(index_failed)?
        } else {
            HashSet::new()
        };
        Ok(near.into_iter().filter(|h| !held.contains(&h.key)).collect())
    }
}
