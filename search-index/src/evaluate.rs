//! Word-at-a-time evaluation of free-text searches.
//!
//! Why not hand tantivy one `BooleanQuery(Must: word₁, word₂, …)`: each word is a union over
//! several fields, and tantivy intersects unions by `seek`ing them, which refills the union's
//! buffer on every jump. With common words (a directory of agents is full of "translation",
//! "data", "翻译") that made an agent query cost about 1 ms of CPU, too much for 16 concurrent
//! clients on two cores. Here each word's union is instead walked once, front to back, with
//! tantivy's buffered `for_each` (its fast path), into a sorted `(doc, score)` list; the lists are
//! then intersected smallest first (a branch-free merge, or galloping when sizes differ a lot).
//! Scores are the same BM25 sums; the total stays exact because every match is still visited.
//! This roughly halved the CPU per agent query on the benchmark corpus.
//!
//! The exact filters are unscored posting lists that join the same intersection; the
//! exact-handle alternative is merged in afterwards; deleted documents are dropped last, and what
//! is left goes to the page collector.

use tantivy::collector::{Collector, SegmentCollector};
use tantivy::query::{EnableScoring, Query, TermQuery, Weight};
use tantivy::{DocId, Score, Searcher, SegmentReader};

use crate::collect::{Hits, PageCollector};

/// A free-text search, already analysed.
pub(crate) struct TextPlan {
    /// One query per word; a document must match all of them.
    pub words: Vec<Box<dyn Query>>,
    /// An alternative that matches on its own with this score (the whole handle typed in).
    pub exact: Option<(TermQuery, Score)>,
    /// Every hit must also match each of these; they never change scores.
    pub filters: Vec<TermQuery>,
}

pub(crate) fn search(
    searcher: &Searcher,
    plan: &TextPlan,
    collector: &PageCollector,
) -> tantivy::Result<Hits> {
    let scoring = EnableScoring::enabled_from_searcher(searcher);
    let no_scoring = EnableScoring::disabled_from_searcher(searcher);
    let words = plan.words.iter().map(|q| q.weight(scoring)).collect::<tantivy::Result<Vec<_>>>()?;
    let filters = plan.filters.iter().map(|q| q.weight(no_scoring)).collect::<tantivy::Result<Vec<_>>>()?;
    let exact = match &plan.exact {
        Some((q, score)) => Some((q.weight(no_scoring)?, *score)),
        None => None,
    };
    let mut fruits = Vec::with_capacity(searcher.segment_readers().len());
    for (ord, segment) in searcher.segment_readers().iter().enumerate() {
        let mut child = collector.for_segment(ord as u32, segment)?;
        let exact = exact.as_ref().map(|(w, s)| (w.as_ref(), *s));
        for (doc, score) in segment_hits(segment, &words, exact, &filters)? {
            child.collect(doc, score);
        }
        fruits.push(child.harvest());
    }
    collector.merge_fruits(fruits)
}

fn scored(weight: &dyn Weight, segment: &SegmentReader) -> tantivy::Result<Vec<(DocId, Score)>> {
    let mut hits = Vec::new();
    weight.for_each(segment, &mut |doc, score| hits.push((doc, score)))?;
    Ok(hits)
}

fn unscored(weight: &dyn Weight, segment: &SegmentReader) -> tantivy::Result<Vec<DocId>> {
    let mut docs = Vec::new();
    weight.for_each_no_score(segment, &mut |block| docs.extend_from_slice(block))?;
    Ok(docs)
}

/// An entry of a sorted posting list: a document, and what it adds to the score.
trait Posting: Copy {
    fn doc(self) -> DocId;
    fn score(self) -> Score;
}

impl Posting for (DocId, Score) {
    fn doc(self) -> DocId {
        self.0
    }
    fn score(self) -> Score {
        self.1
    }
}

/// Filter postings: they narrow the hits and add nothing to scores.
impl Posting for DocId {
    fn doc(self) -> DocId {
        self
    }
    fn score(self) -> Score {
        0.0
    }
}

enum List<'a> {
    Scored(&'a [(DocId, Score)]),
    Filter(&'a [DocId]),
}

impl List<'_> {
    fn len(&self) -> usize {
        match self {
            List::Scored(l) => l.len(),
            List::Filter(l) => l.len(),
        }
    }
}

/// Live documents of one segment matching the plan, in doc order, with their scores.
fn segment_hits(
    segment: &SegmentReader,
    words: &[Box<dyn Weight>],
    exact: Option<(&dyn Weight, Score)>,
    filters: &[Box<dyn Weight>],
) -> tantivy::Result<Vec<(DocId, Score)>> {
    let mut filter_docs = Vec::with_capacity(filters.len());
    for f in filters {
        let docs = unscored(f.as_ref(), segment)?;
        if docs.is_empty() {
            return Ok(Vec::new());
        }
        filter_docs.push(docs);
    }
    let mut text = Vec::new();
    let mut word_hits = Vec::with_capacity(words.len());
    for w in words {
        let hits = scored(w.as_ref(), segment)?;
        if hits.is_empty() {
            word_hits.clear();
            break;
        }
        word_hits.push(hits);
    }
    if !word_hits.is_empty() {
        // Filters join the intersection as lists like any other, so a selective filter is
        // applied first and shrinks the work on frequent words.
        let mut lists: Vec<List> = word_hits.iter().map(|h| List::Scored(h)).collect();
        lists.extend(filter_docs.iter().map(|d| List::Filter(d)));
        lists.sort_by_key(List::len);
        let mut lists = lists.into_iter();
        text = match lists.next() {
            Some(List::Scored(l)) => l.to_vec(),
            Some(List::Filter(l)) => l.iter().map(|d| (*d, 0.0)).collect(),
            None => Vec::new(),
        };
        for other in lists {
            if text.is_empty() {
                break;
            }
            match other {
                List::Scored(l) => intersect(&mut text, l),
                List::Filter(l) => intersect(&mut text, l),
            }
        }
    }
    let mut hits = text;
    if let Some((weight, bonus)) = exact {
        let mut docs = unscored(weight, segment)?;
        for f in &filter_docs {
            docs.retain(|d| f.binary_search(d).is_ok());
        }
        if !docs.is_empty() {
            hits = union_bonus(&hits, &docs, bonus);
        }
    }
    if let Some(alive) = segment.alive_bitset() {
        hits.retain(|(doc, _)| alive.is_alive(*doc));
    }
    Ok(hits)
}

/// First index `>= from` whose doc is `>= target` (galloping, then binary search).
fn gallop<P: Posting>(items: &[P], from: usize, target: DocId) -> usize {
    let mut lo = from;
    let mut step = 1;
    let mut hi = from;
    while hi < items.len() && items[hi].doc() < target {
        lo = hi + 1;
        hi += step;
        step *= 2;
    }
    let hi = hi.min(items.len());
    lo + items[lo..hi].partition_point(|x| x.doc() < target)
}

/// Keeps the docs of `acc` that are also in `other`, adding their scores. With lists of similar
/// size (frequent words) this is a branch-free merge: which side advances is data, not a jump,
/// so random interleavings cost no mispredictions. Galloping when `other` is much longer.
fn intersect<P: Posting>(acc: &mut Vec<(DocId, Score)>, other: &[P]) {
    let mut kept = 0;
    if other.len() / 16 > acc.len() {
        let mut j = 0;
        for i in 0..acc.len() {
            let (doc, score) = acc[i];
            j = gallop(other, j, doc);
            let Some(&p) = other.get(j) else {
                break;
            };
            if p.doc() == doc {
                acc[kept] = (doc, score + p.score());
                kept += 1;
            }
        }
    } else {
        let (mut i, mut j) = (0, 0);
        while i < acc.len() && j < other.len() {
            let (a, sa) = acc[i];
            let b = other[j].doc();
            let sb = other[j].score();
            // `kept <= i`: this writes either a consumed slot or, while `kept == i`, the
            // current entry back unchanged (a select, not a jump, adds `sb` only on a match).
            acc[kept] = (a, sa + if a == b { sb } else { 0.0 });
            kept += usize::from(a == b);
            i += usize::from(a <= b);
            j += usize::from(b <= a);
        }
    }
    acc.truncate(kept);
}

/// The union of `hits` and `docs`, where every doc of `docs` gains `bonus`.
fn union_bonus(hits: &[(DocId, Score)], docs: &[DocId], bonus: Score) -> Vec<(DocId, Score)> {
    let mut out = Vec::with_capacity(hits.len() + docs.len());
    let (mut i, mut j) = (0, 0);
    while i < hits.len() || j < docs.len() {
        match (hits.get(i), docs.get(j)) {
            (Some(&(h, s)), Some(&d)) if h == d => {
                out.push((h, s + bonus));
                i += 1;
                j += 1;
            }
            (Some(&(h, s)), Some(&d)) if h < d => {
                out.push((h, s));
                i += 1;
            }
            (Some(&(h, s)), None) => {
                out.push((h, s));
                i += 1;
            }
            (_, Some(&d)) => {
                out.push((d, bonus));
                j += 1;
            }
            (None, None) => break,
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merges() {
        let mut acc = vec![(1, 1.0), (3, 1.0), (5, 1.0), (9, 1.0)];
        intersect(&mut acc, &[(0, 2.0), (3, 2.0), (4, 2.0), (9, 2.0), (10, 2.0)]);
        assert_eq!(acc, vec![(3, 3.0), (9, 3.0)]);
        // The other side runs ahead first: the pending entry must keep its own score.
        let mut acc = vec![(3, 1.0), (8, 1.0)];
        intersect(&mut acc, &[(0, 2.0), (1, 2.0), (3, 2.0), (8, 4.0)]);
        assert_eq!(acc, vec![(3, 3.0), (8, 5.0)]);
        let mut acc = vec![(1, 1.0), (3, 1.0), (5, 1.0)];
        intersect(&mut acc, &[0u32, 1, 2, 5]);
        assert_eq!(acc, vec![(1, 1.0), (5, 1.0)]);
        let big: Vec<DocId> = (0..10_000).map(|d| d * 3).collect();
        let mut acc: Vec<(DocId, Score)> = vec![(3, 0.0), (4, 0.0), (29_997, 0.0), (30_000, 0.0)];
        intersect(&mut acc, &big);
        assert_eq!(acc, vec![(3, 0.0), (29_997, 0.0)]);
        assert_eq!(
            union_bonus(&[(1, 1.0), (4, 1.0)], &[0, 4, 7], 10.0),
            vec![(0, 10.0), (1, 1.0), (4, 11.0), (7, 10.0)]
        );
        assert!(union_bonus(&[], &[], 1.0).is_empty());
    }
}
