//! Deterministic order, and the collector behind listings without text: exact total, numeric
//! filters, most recent first.
//!
//! tantivy's `TopDocs` breaks score ties by `DocAddress`, which changes when segments merge, so
//! paging could skip or repeat documents. Here every hit becomes one `u128` sort value, primary
//! order in the high 64 bits (score or timestamp, order-preserving encoded) and the document key
//! in the low 64 bits. Keys are unique, so the order is total and depends only on the data.
//! Free-text searches use the same sort values (rank.rs).
//!
//! The per-segment buffer keeps at most about `2k` values (k = offset + limit): when it fills, a
//! linear-time selection keeps the best `k` and raises a threshold below which hits are dropped
//! without being buffered. Every hit is counted, so `total` is exact.
//!
//! The numeric filters (min level, joined since, mailbox verified, live) are checked here against fast
//! fields instead of being range queries: this costs one column read per hit and never changes
//! scores.

use std::sync::Arc;

use tantivy::collector::{Collector, SegmentCollector};
use tantivy::columnar::{Cardinality, Column, ColumnValues};
use tantivy::query::{EnableScoring, Query};
use tantivy::{DocId, Score, SegmentOrdinal, SegmentReader};

use crate::overlay::Leaf;
use crate::schema::{JOINED, LEVEL, LIVE, VERIFIED};
use crate::warm::Segments;

#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct NumericFilters {
    pub min_level: Option<u64>,
    pub joined_since: Option<i64>,
    pub verified: Option<bool>,
    pub live: Option<bool>,
}

impl NumericFilters {
    pub(crate) fn is_empty(&self) -> bool {
        self.min_level.is_none_or(|l| l == 0)
            && self.joined_since.is_none()
            && self.verified.is_none()
            && self.live.is_none()
    }
}

/// The documents matching a query, ordered by the `ts` fast field desc, then key desc.
pub(crate) struct PageCollector<'a> {
    pub filters: NumericFilters,
    /// offset + limit, saturated.
    pub k: usize,
    pub segments: &'a Segments,
}

pub(crate) struct Hits {
    pub total: u64,
    values: Vec<u128>,
}

impl Hits {
    /// `values` are sort values (see [`sort_value`]), in any order.
    pub(crate) fn new(total: u64, values: Vec<u128>) -> Hits {
        Hits { total, values }
    }

    /// The first `k` keys of the full order (fewer if there are fewer hits).
    pub(crate) fn into_keys(mut self) -> (u64, Vec<u64>) {
        self.values.sort_unstable_by(|a, b| b.cmp(a));
        (self.total, self.values.iter().map(|v| *v as u64).collect())
    }
}

pub(crate) fn encode_score(score: Score) -> u64 {
    // Maps f32 to u32 preserving order (negatives included, though BM25 never yields them).
    let bits = score.to_bits();
    let ordered = if bits & 0x8000_0000 != 0 { !bits } else { bits | 0x8000_0000 };
    u64::from(ordered)
}

/// The score [`encode_score`] encoded.
pub(crate) fn decode_score(encoded: u64) -> Score {
    let ordered = encoded as u32;
    let bits = if ordered & 0x8000_0000 != 0 { ordered & 0x7fff_ffff } else { !ordered };
    Score::from_bits(bits)
}

fn encode_i64(v: i64) -> u64 {
    (v as u64) ^ (1 << 63)
}

pub(crate) fn sort_value(primary: u64, key: u64) -> u128 {
    (u128::from(primary) << 64) | u128::from(key)
}

/// Keeps the best `k` of a stream of values using amortised linear selection.
struct TopK {
    k: usize,
    values: Vec<u128>,
    /// Every kept value is > threshold once the buffer has been trimmed at least once.
    threshold: Option<u128>,
}

impl TopK {
    fn new(k: usize) -> Self {
        TopK { k, values: Vec::new(), threshold: None }
    }

    /// False when no value with this primary part can enter the top k, so the caller can skip
    /// reading the key.
    #[inline]
    fn admits(&self, primary: u64) -> bool {
        self.k > 0 && self.threshold.is_none_or(|t| u128::from(primary) >= t >> 64)
    }

    #[inline]
    fn push(&mut self, v: u128) {
        if self.k == 0 {
            return;
        }
        if let Some(t) = self.threshold
            && v <= t
        {
            return;
        }
        self.values.push(v);
        if self.values.len() >= self.k.saturating_mul(2).max(64) {
            self.trim();
        }
    }

    fn trim(&mut self) {
        if self.values.len() > self.k {
            let k = self.k;
            self.values.select_nth_unstable_by(k - 1, |a, b| b.cmp(a));
            self.values.truncate(k);
            self.threshold = self.values.iter().min().copied();
        }
    }
}

/// A fast-field column read as "one value per doc", whatever its cardinality.
pub(crate) fn dense<T>(column: Column<T>, default: T) -> Arc<dyn ColumnValues<T>>
where
    T: PartialOrd + Copy + Send + Sync + std::fmt::Debug + 'static,
{
    if column.get_cardinality() == Cardinality::Full {
        column.values
    } else {
        column.first_or_default_col(default)
    }
}

/// The numeric filters of a search, bound to one segment's columns.
pub(crate) struct NumericColumns {
    level: Option<(u64, Arc<dyn ColumnValues<u64>>)>,
    joined: Option<(i64, Arc<dyn ColumnValues<i64>>)>,
    verified: Option<(bool, Arc<dyn ColumnValues<bool>>)>,
    live: Option<(bool, Arc<dyn ColumnValues<bool>>)>,
}

impl NumericColumns {
    pub(crate) fn for_segment(segment: &SegmentReader, filters: &NumericFilters) -> tantivy::Result<Self> {
        let ff = segment.fast_fields();
        let level = match filters.min_level {
            Some(min) if min > 0 => Some((min, dense(ff.u64(LEVEL)?, 0))),
            _ => None,
        };
        let joined = match filters.joined_since {
            Some(since) => Some((since, dense(ff.i64(JOINED)?, i64::MIN))),
            None => None,
        };
        let verified = match filters.verified {
            Some(want) => Some((want, dense(ff.bool(VERIFIED)?, false))),
            None => None,
        };
        let live = match filters.live {
            Some(want) => Some((want, dense(ff.bool(LIVE)?, false))),
            None => None,
        };
        Ok(NumericColumns { level, joined, verified, live })
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.level.is_none() && self.joined.is_none() && self.verified.is_none() && self.live.is_none()
    }

    #[inline]
    pub(crate) fn passes(&self, doc: DocId) -> bool {
        if let Some((min, col)) = &self.level
            && col.get_val(doc) < *min
        {
            return false;
        }
        if let Some((since, col)) = &self.joined
            && col.get_val(doc) < *since
        {
            return false;
        }
        if let Some((want, col)) = &self.verified
            && col.get_val(doc) != *want
        {
            return false;
        }
        if let Some((want, col)) = &self.live
            && col.get_val(doc) != *want
        {
            return false;
        }
        true
    }
}

pub(crate) struct PageSegmentCollector {
    key: Arc<dyn ColumnValues<u64>>,
    ts: Arc<dyn ColumnValues<i64>>,
    numeric: NumericColumns,
    total: u64,
    top: TopK,
}

impl SegmentCollector for PageSegmentCollector {
    type Fruit = Hits;

    #[inline]
    fn collect(&mut self, doc: DocId, _score: Score) {
        if !self.numeric.passes(doc) {
            return;
        }
        self.total += 1;
        let primary = encode_i64(self.ts.get_val(doc));
        if !self.top.admits(primary) {
            return;
        }
        let key = self.key.get_val(doc);
        self.top.push(sort_value(primary, key));
    }

    fn harvest(mut self) -> Hits {
        self.top.trim();
        Hits { total: self.total, values: self.top.values }
    }
}

impl Collector for PageCollector<'_> {
    type Fruit = Hits;
    type Child = PageSegmentCollector;

    fn for_segment(
        &self,
        _segment_local_id: SegmentOrdinal,
        segment: &SegmentReader,
    ) -> tantivy::Result<PageSegmentCollector> {
        let data = self.segments.get(segment)?;
        Ok(PageSegmentCollector {
            key: data.key.clone(),
            ts: data.ts.clone(),
            numeric: NumericColumns::for_segment(segment, &self.filters)?,
            total: 0,
            top: TopK::new(self.k),
        })
    }

    fn requires_scoring(&self) -> bool {
        false
    }

    fn merge_fruits(&self, fruits: Vec<Hits>) -> tantivy::Result<Hits> {
        let mut top = TopK::new(self.k);
        let mut total = 0u64;
        for f in fruits {
            total += f.total;
            for v in f.values {
                top.push(v);
            }
        }
        top.trim();
        Ok(Hits { total, values: top.values })
    }
}

/// A listing with exact filters: the documents of every segment that match `query` and are
/// alive in its view, through `collector`.
pub(crate) fn filtered(
    leaves: &[Arc<Leaf>],
    query: &dyn Query,
    collector: &PageCollector,
) -> tantivy::Result<Hits> {
    let Some(first) = leaves.first() else {
        return Ok(Hits::new(0, Vec::new()));
    };
    let weight = query.weight(EnableScoring::disabled_from_schema(first.reader.schema()))?;
    let mut fruits = Vec::with_capacity(leaves.len());
    for (ordinal, leaf) in leaves.iter().enumerate() {
        let mut child = collector.for_segment(ordinal as SegmentOrdinal, &leaf.reader)?;
        weight.for_each_no_score(&leaf.reader, &mut |docs| {
            for &doc in docs {
                if leaf.is_alive(doc) {
                    child.collect(doc, 0.0);
                }
            }
        })?;
        fruits.push(child.harvest());
    }
    collector.merge_fruits(fruits)
}

/// The unfiltered listing ("everything, most recent first") without a query: each segment's
/// `ts` column is read in chunks from the last document backwards. Documents are mostly added
/// in time order, so walking backwards fills the top k early and the rest are rejected by one
/// comparison each; the total is the number of live documents, known without counting.
pub(crate) fn scan_recent(leaves: &[Arc<Leaf>], segments: &Segments, k: usize) -> tantivy::Result<Hits> {
    const CHUNK: u32 = 1024;
    let mut top = TopK::new(k);
    let mut total = 0u64;
    let mut buf = vec![0i64; CHUNK as usize];
    for leaf in leaves {
        let segment = &leaf.reader;
        total += u64::from(leaf.num_docs);
        if k == 0 {
            continue;
        }
        let data = segments.get(segment)?;
        let (ts, key) = (&data.ts, &data.key);
        let alive = leaf.alive.as_ref();
        let mut end = segment.max_doc();
        while end > 0 {
            let start = end.saturating_sub(CHUNK);
            let chunk = &mut buf[..(end - start) as usize];
            ts.get_range(u64::from(start), chunk);
            for (i, t) in chunk.iter().enumerate().rev() {
                let primary = encode_i64(*t);
                if !top.admits(primary) {
                    continue;
                }
                let doc = start + i as u32;
                if alive.is_some_and(|a| !a.is_alive(doc)) {
                    continue;
                }
                top.push(sort_value(primary, key.get_val(doc)));
            }
            end = start;
        }
    }
    top.trim();
    Ok(Hits { total, values: top.values })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodings_preserve_order() {
        let scores = [0.0f32, 1e-6, 0.5, 1.0, 3.25, 1e9];
        for w in scores.windows(2) {
            assert!(encode_score(w[0]) < encode_score(w[1]));
        }
        assert!(encode_score(-1.0) < encode_score(0.0));
        for s in [0.0f32, 1e-6, 0.5, 3.25, 1e9, -1.0] {
            assert_eq!(decode_score(encode_score(s)), s);
        }
        let ts = [i64::MIN, -5, 0, 7, i64::MAX];
        for w in ts.windows(2) {
            assert!(encode_i64(w[0]) < encode_i64(w[1]));
        }
        assert!(sort_value(1, 0) > sort_value(0, u64::MAX));
    }

    #[test]
    fn top_k_keeps_the_best() {
        let mut t = TopK::new(5);
        for v in 0..1000u128 {
            t.push((v * 7919) % 1000);
        }
        t.trim();
        let mut got = t.values.clone();
        got.sort_unstable_by(|a, b| b.cmp(a));
        assert_eq!(got, vec![999, 998, 997, 996, 995]);
        let hits = Hits { total: 1000, values: vec![3, 9, 1] };
        assert_eq!(hits.into_keys(), (1000, vec![9, 3, 1]));
        assert!(!TopK::new(0).admits(u64::MAX));
    }
}
