//! Bitmaps of the most frequent terms of each big segment, for exact totals.
//!
//! Counting the documents that contain two common words means intersecting their posting
//! lists, and in a directory the common words are in a third of all documents: over a million
//! calls that is hundreds of thousands of postings to decode per search, about a millisecond of
//! CPU however the intersection is done. A term in at least one document in [`DENSE_RATIO`] of
//! a segment is therefore also kept as a bitmap (one bit per document: no bigger than its
//! compressed list at that density), and intersecting two of them is a word-wise AND.
//!
//! The bitmaps are built once per segment, when a reader first sees it (see warm.rs), and dropped
//! with the segment. Segments never change, so the bitmaps never go stale; deletions are applied
//! at query time from the segment's alive set. Only segments of at least [`MIN_SEGMENT_DOCS`]
//! are covered (smaller lists are cheap to decode), densest terms first within
//! [`MAX_BYTES_PER_SEGMENT`].

use std::collections::HashMap;

use tantivy::schema::{Field, IndexRecordOption};
use tantivy::{SegmentReader, Term};

use crate::matches::Bits;

/// A term is kept as a bitmap when at least one document in this many holds it.
pub(crate) const DENSE_RATIO: u32 = 16;

/// Segments with fewer documents are not covered.
#[cfg(not(test))]
pub(crate) const MIN_SEGMENT_DOCS: u32 = 32_768;
/// Tests cover small segments too, so both ways of counting are exercised.
#[cfg(test)]
pub(crate) const MIN_SEGMENT_DOCS: u32 = 64;

/// Upper bound of one segment's bitmaps (a million documents: about 200 bitmaps).
pub(crate) const MAX_BYTES_PER_SEGMENT: usize = 24 << 20;

/// One segment's bitmaps, by term.
#[derive(Default)]
pub(crate) struct SegmentBitmaps {
    terms: HashMap<Term, Bits>,
}

impl SegmentBitmaps {
    pub(crate) fn get(&self, term: &Term) -> Option<&Bits> {
        self.terms.get(term)
    }

    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }

    /// The bitmaps of `segment`'s dense terms in `fields` (none for a small segment).
    pub(crate) fn build(segment: &SegmentReader, fields: &[Field]) -> tantivy::Result<SegmentBitmaps> {
        let max_doc = segment.max_doc();
        if max_doc < MIN_SEGMENT_DOCS {
            return Ok(SegmentBitmaps::default());
        }
        let min_df = max_doc / DENSE_RATIO;
        let mut dense = Vec::new();
        for &field in fields {
            let inverted = segment.inverted_index(field)?;
            let mut stream = inverted.terms().stream()?;
            while stream.advance() {
                let info = stream.value();
                if info.doc_freq >= min_df.max(1)
                    && let Ok(text) = std::str::from_utf8(stream.key())
                {
                    dense.push((info.doc_freq, Term::from_field_text(field, text), info.clone()));
                }
            }
        }
        dense.sort_by_key(|d| std::cmp::Reverse(d.0));
        let per_bitmap = (max_doc as usize).div_ceil(64) * 8;
        dense.truncate(MAX_BYTES_PER_SEGMENT / per_bitmap.max(1));
        let mut terms = HashMap::with_capacity(dense.len());
        for (_, term, info) in dense {
            let inverted = segment.inverted_index(term.field())?;
            let block = inverted.read_block_postings_from_terminfo(&info, IndexRecordOption::Basic)?;
            terms.insert(term, Bits::of_block_postings(max_doc, block));
        }
        Ok(SegmentBitmaps { terms })
    }
}
