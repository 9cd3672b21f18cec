//! One searchable index (agents or calls): its manually reloaded reader, its result cache, and
//! the running of one search into a page.

use std::sync::Arc;

use tantivy::{IndexReader, Term};

use crate::cache::{DEPTH, Entry, Key, ResultCache};
use crate::collect::{NumericFilters, PageCollector};
use crate::evaluate::{self, TextPlan};
use crate::overlay::Overlay;
use crate::query::filters_only;
use crate::relaxed::Fallback;
use crate::warm::Segments;
use crate::{DEFAULT_CACHE_ENTRIES, IndexError, MAX_LIMIT, Page};

/// Searches with longer text are not cached: they are rarely repeated and would make keys big.
const MAX_CACHED_TEXT_BYTES: usize = 1024;

/// What to run on a cache miss.
pub(crate) enum Plan {
    /// No text: the documents matching every exact filter, most recent first.
    Recency(Vec<Term>),
    /// Free text, ranked by score.
    Text(TextPlan),
    /// Free text of several words, this many of which must be held (see `relaxed.rs`).
    Relaxed(TextPlan, usize),
    /// Free text of three words: all held, or when no document holds them all, two of them
    /// (`relaxed::fallback`).
    AllOrTwo(TextPlan),
}

pub(crate) struct Part {
    /// The disk segments; searches read them through `overlay`'s views.
    pub reader: IndexReader,
    pub overlay: Overlay,
    pub cache: ResultCache,
    /// Registered with `reader` as a warmer, which holds it weakly.
    pub segments: Arc<Segments>,
}

impl Part {
    pub(crate) fn new(reader: IndexReader, segments: Arc<Segments>) -> tantivy::Result<Self> {
        let searcher = reader.searcher();
        let key = searcher.schema().get_field(crate::schema::KEY)?;
        let overlay = Overlay::new(key, &searcher)?;
        Ok(Part { reader, overlay, cache: ResultCache::new(DEFAULT_CACHE_ENTRIES), segments })
    }

    /// Runs the search identified by `key`. `build` makes the query only on a cache miss; it
    /// returns `None` when the search can match nothing.
    pub(crate) fn search(
        &self,
        key: Key,
        offset: usize,
        limit: usize,
        numeric: NumericFilters,
        build: impl FnOnce() -> Option<Plan>,
    ) -> Result<Page, IndexError> {
        let limit = limit.min(MAX_LIMIT);
        // One view for the whole call: its generation names exactly the data it reads.
        let view = self.overlay.view();
        let generation = view.generation;
        let cacheable =
            self.cache.enabled() && key.text.as_ref().is_none_or(|t| t.len() <= MAX_CACHED_TEXT_BYTES);
        if cacheable
            && let Some(entry) = self.cache.get(generation, &key)
            && let Some(page) = entry.page(offset, limit)
        {
            return Ok(page);
        }
        let Some(plan) = build() else {
            return Ok(Page::default());
        };
        // No page can start past the number of live documents, so don't buffer for one.
        let wanted =
            if limit == 0 || offset as u64 >= view.num_docs() { 0 } else { offset.saturating_add(limit) };
        let fill_cache = cacheable && wanted <= DEPTH;
        let k = if fill_cache { DEPTH } else { wanted };
        let hits = match plan {
            Plan::Recency(filters) if filters.is_empty() && numeric.is_empty() => {
                crate::collect::scan_recent(&view.leaves, &self.segments, k)?
            }
            Plan::Recency(filters) => {
                let collector = PageCollector { filters: numeric, k, segments: &self.segments };
                crate::collect::filtered(&view.leaves, filters_only(filters).as_ref(), &collector)?
            }
            Plan::Text(text) => evaluate::search(&view.leaves, &self.segments, &text, &numeric, k)?,
            Plan::Relaxed(text, required) => crate::relaxed::search(
                &view.leaves,
                &self.segments,
                &self.reader.searcher(),
                &text,
                required,
                k,
            )?,
            Plan::AllOrTwo(text) => {
                let all = evaluate::search(&view.leaves, &self.segments, &text, &numeric, k)?;
                match all.total {
                    0 => match crate::relaxed::fallback(&view.leaves, text)? {
                        Fallback::AllHeld(two) => {
                            evaluate::search(&view.leaves, &self.segments, &two, &numeric, k)?
                        }
                        Fallback::AllButOne(text) => {
                            let required = text.words.len() - 1;
                            let searcher = self.reader.searcher();
                            crate::relaxed::search(
                                &view.leaves,
                                &self.segments,
                                &searcher,
                                &text,
                                required,
                                k,
                            )?
                        }
                        Fallback::Nothing => all,
                    },
                    _ => all,
                }
            }
        };
        let (total, keys) = hits.into_keys();
        let entry = Entry { total, keys };
        let page = Page { total, keys: entry.keys.iter().skip(offset).take(limit).copied().collect() };
        if fill_cache {
            self.cache.insert(generation, key, entry.into());
        }
        Ok(page)
    }
}
