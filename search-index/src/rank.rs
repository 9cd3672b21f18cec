//! The best `k` matches of a free-text search by score, without scoring every match.
//!
//! A document's score is the sum over the query words of the word's score, which is
//! `DisjunctionMax` (tie breaker 0.1) over the scored fields of the BM25 score of its term, each
//! field with its boost; a long Chinese word also adds the sum of its sub-words' scores when all
//! of them are present. Each (term, field) posting list is a *clause*, and each clause has an
//! upper bound that no score of its list exceeds (see [`bound`]).
//!
//! The search is MaxScore, list at a time: once the page holds `k` documents its lowest score is
//! a threshold, and a document found in none of the lists walked so far is bounded by the other
//! lists' bounds. Lists are walked one after the other, highest bound first, until that bound
//! falls below the threshold (or every list of one word has been walked: then nothing else can
//! match). In a walked list, blocks whose best score (tantivy's block maximum) cannot qualify are
//! skipped, then the documents that are no match (match set, matches.rs) or score too low in it;
//! only the few left have their other lists sought, highest bound first, each step tightening the
//! bound until the document is dismissed or fully scored. For a common word this is typically its
//! title list alone, most of whose documents are dismissed by one comparison. When the matches
//! are far fewer than the postings that would be walked, each match is scored directly instead.
//!
//! Bounds are compared with a relative margin so that float rounding can never prune a document
//! whose exact score would tie or beat the threshold; ties are then broken by key as everywhere.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::Arc;

use tantivy::columnar::ColumnValues;
use tantivy::fieldnorm::FieldNormReader;
use tantivy::postings::{BlockSegmentPostings, TermInfo};
use tantivy::query::Bm25Weight;
use tantivy::schema::IndexRecordOption;
use tantivy::{DocId, Score, SegmentReader, TERMINATED, Term};

use crate::collect::{decode_score, encode_score, sort_value};
use crate::matches::{Bits, Members};
use crate::warm::SegmentData;

/// Other fields' scores add this fraction on top of the best field's: a word matching name and
/// description ranks a little above one matching only the name, but many weak fields never
/// outweigh one strong one.
pub(crate) const TIE_BREAKER: Score = 0.1;

/// A bound must stay below the threshold by this factor to prune: covers float rounding.
const MARGIN: Score = 1.0 + 1e-4;

/// The value of a list that does not hold the document, and of a word or a search that cannot
/// match; every real score or bound is at least 0.
const ABSENT: Score = -1.0;

/// The threshold while the page is not full: nothing can be pruned.
const NO_THRESHOLD: Score = Score::NEG_INFINITY;

/// Ratio of matches to postings still to walk below which scoring each match directly is
/// cheaper: looking a match up costs a few list seeks, often each decoding a block (about a
/// microsecond in all); walking costs some 15 ns per posting.
const MEMBER_WALK_RATIO: u64 = 64;

/// One scored (term, field) list of the search, the same for every segment.
pub(crate) struct ClauseSpec {
    pub word: usize,
    /// 0 for the word's own term, 1.. for its sub-words.
    pub slot: usize,
    pub term: Term,
    /// BM25 weight with the field's boost, from searcher-wide statistics.
    pub weight: Bm25Weight,
    /// The searcher-wide average length of the field, which `weight` was made with.
    pub average: Score,
    /// Per segment (by ordinal), where the term's list is, if the segment has it.
    pub lists: Vec<Option<TermInfo>>,
}

/// The best `k` sort values seen so far (score and key, see collect.rs).
pub(crate) struct Top {
    k: usize,
    heap: BinaryHeap<Reverse<u128>>,
}

impl Top {
    pub(crate) fn new(k: usize) -> Top {
        Top { k, heap: BinaryHeap::with_capacity(k.saturating_add(1).min(4096)) }
    }

    /// Offers a document; offering the same document (same score and key) again is harmless.
    pub(crate) fn push(&mut self, score: Score, key: u64) {
        if self.k == 0 {
            return;
        }
        let v = sort_value(encode_score(score), key);
        let enters = self.heap.len() < self.k || self.heap.peek().is_some_and(|min| v > min.0);
        if !enters || self.heap.iter().any(|h| h.0 == v) {
            return;
        }
        if self.heap.len() < self.k {
            self.heap.push(Reverse(v));
        } else if let Some(mut min) = self.heap.peek_mut() {
            min.0 = v;
        }
    }

    /// The score a document must at least reach to enter ([`NO_THRESHOLD`] while the page is
    /// not full).
    pub(crate) fn threshold(&self) -> Score {
        if self.k == 0 {
            return Score::INFINITY;
        }
        #[cfg(test)]
        if EXHAUSTIVE.get() {
            return NO_THRESHOLD;
        }
        if self.heap.len() < self.k {
            return NO_THRESHOLD;
        }
        self.heap.peek().map_or(NO_THRESHOLD, |min| decode_score((min.0 >> 64) as u64))
    }

    pub(crate) fn into_values(self) -> Vec<u128> {
        self.heap.into_iter().map(|v| v.0).collect()
    }
}

/// Whether a document bounded by `bound` cannot enter a page whose lowest score is `threshold`.
#[inline]
fn prunable(bound: Score, threshold: Score) -> bool {
    bound < 0.0 || bound * MARGIN < threshold
}

/// A forward cursor over one posting list with its term frequencies, block by block (tantivy's
/// own scorer does not expose its blocks' maximum scores).
struct Cursor {
    block: BlockSegmentPostings,
    at: usize,
    len: usize,
}

impl Cursor {
    fn new(block: BlockSegmentPostings) -> Cursor {
        let len = block.block_len();
        Cursor { block, at: 0, len }
    }

    #[inline]
    fn doc(&self) -> DocId {
        if self.at < self.len { self.block.doc(self.at) } else { TERMINATED }
    }

    #[inline]
    fn freq(&self) -> u32 {
        self.block.freq(self.at)
    }

    /// Moves to the first document at or after `target`.
    #[inline]
    fn seek(&mut self, target: DocId) -> DocId {
        let doc = self.doc();
        if doc >= target {
            return doc;
        }
        if self.block.doc(self.len - 1) >= target {
            while self.block.doc(self.at) < target {
                self.at += 1;
            }
        } else {
            self.at = self.block.seek(target);
            self.len = self.block.block_len();
        }
        self.doc()
    }
}

struct Clause {
    /// Where the list is, to rewind it without looking the term up again.
    info: TermInfo,
    spec: usize,
    word: usize,
    slot: usize,
    cursor: Cursor,
    /// Whether the cursor has left the start of its list.
    moved: bool,
    fieldnorms: FieldNormReader,
    weight: Bm25Weight,
    bound: Score,
    /// Multiplies tantivy's block maxima into bounds (see [`block_factor`]).
    block_factor: Score,
    cost: u32,
}

impl Clause {
    /// Moves to `doc` if the list holds it; lists only move forward.
    #[inline]
    fn seek(&mut self, doc: DocId) -> bool {
        self.moved = true;
        self.cursor.seek(doc) == doc
    }

    /// Exact score at the document the cursor is on.
    #[inline]
    fn score(&self) -> Score {
        self.weight.score(self.fieldnorms.fieldnorm_id(self.cursor.doc()), self.cursor.freq())
    }
}

/// The most occurrences a term can have in a field of length code `code`: a term occurs at most
/// as often as the field has tokens, and a code stands for lengths from its own value to just
/// below the next code's.
fn most(code: u8) -> u32 {
    if code == u8::MAX { u32::MAX } else { FieldNormReader::id_to_fieldnorm(code + 1).saturating_sub(1) }
}

/// The length code, up to `longest` (the segment's longest field), at which a term's score can
/// be highest: with that many occurrences (the tf factor grows with the frequency). The same
/// for every term of a field, whose scores differ only by a factor.
fn peak(weight: &Bm25Weight, longest: u8) -> u8 {
    (0..=longest)
        .max_by(|a, b| weight.score(*a, most(*a)).total_cmp(&weight.score(*b, most(*b))))
        .unwrap_or(0)
}

/// tantivy stores, per block of 128 documents, the (length, frequency) pair with the highest
/// score under the segment's own average field length when it was written; scoring uses the
/// searcher's. Between two averages in a ratio `r` no score changes by more than a factor `r`
/// (BM25's length normalisation is linear in the average), so the stored pair's score times
/// `max(r, 1/r)` bounds the block under any average. 1 for a single segment.
fn block_factor(segment: &SegmentReader, term: &Term, searcher_average: Score) -> tantivy::Result<Score> {
    let tokens = segment.inverted_index(term.field())?.total_num_tokens();
    let own = tokens as Score / segment.max_doc().max(1) as Score;
    if own <= 0.0 || searcher_average <= 0.0 {
        return Ok(Score::INFINITY);
    }
    let r = own / searcher_average;
    Ok(r.max(1.0 / r) * MARGIN)
}

/// One segment's clauses and the scoring state of the document being looked at.
pub(crate) struct Ranker<'a> {
    segment: &'a SegmentReader,
    specs: &'a [ClauseSpec],
    clauses: Vec<Clause>,
    /// Per word, per slot: the range of its clauses (clauses are ordered by word, slot).
    slots: Vec<Vec<std::ops::Range<usize>>>,
    /// Per list: its exact score for the document, [`ABSENT`], or its bound while unknown.
    value: Vec<Score>,
    /// The lists whose value is not their bound, to undo.
    changed: Vec<usize>,
    known: Vec<bool>,
    /// Each word's value under the current values, and with every list unknown.
    words: Vec<Score>,
    unknown: Vec<Score>,
    key: Arc<dyn ColumnValues<u64>>,
    members: &'a Members<'a>,
    /// Documents already ranked by the caller (the exact-handle matches), sorted.
    skip: &'a [DocId],
}

impl<'a> Ranker<'a> {
    /// `slots_per_word[w]` is 1 + the number of sub-words of word `w`.
    pub(crate) fn new(
        segment: &'a SegmentReader,
        ordinal: usize,
        data: &SegmentData,
        specs: &'a [ClauseSpec],
        slots_per_word: &[usize],
        members: &'a Members<'a>,
        skip: &'a [DocId],
    ) -> tantivy::Result<Ranker<'a>> {
        let mut clauses = Vec::with_capacity(specs.len());
        let mut peaks: Vec<(tantivy::schema::Field, u8)> = Vec::new();
        for (i, spec) in specs.iter().enumerate() {
            let field = spec.term.field();
            let inverted = segment.inverted_index(field)?;
            let Some(info) = spec.lists.get(ordinal).cloned().flatten() else {
                continue;
            };
            let block = inverted.read_block_postings_from_terminfo(&info, IndexRecordOption::WithFreqs)?;
            let code = match peaks.iter().find(|(f, _)| *f == field) {
                Some((_, code)) => *code,
                None => {
                    let code = peak(&spec.weight, data.longest.get(&field).copied().unwrap_or(u8::MAX));
                    peaks.push((field, code));
                    code
                }
            };
            clauses.push(Clause {
                info,
                spec: i,
                word: spec.word,
                slot: spec.slot,
                cost: block.doc_freq(),
                cursor: Cursor::new(block),
                moved: false,
                fieldnorms: segment.get_fieldnorms_reader(field)?,
                weight: spec.weight.clone(),
                // No score of the list exceeds its score at the peak (with a margin for rounding
                // between terms: see MARGIN).
                bound: spec.weight.score(code, most(code)),
                block_factor: block_factor(segment, &spec.term, spec.average)?,
            });
        }
        clauses.sort_by_key(|c| (c.word, c.slot));
        let n = clauses.len();
        let mut slots: Vec<Vec<std::ops::Range<usize>>> =
            slots_per_word.iter().map(|s| vec![0..0; *s]).collect();
        let mut start = 0;
        while start < n {
            let (w, s) = (clauses[start].word, clauses[start].slot);
            let end = start + clauses[start..].iter().take_while(|c| (c.word, c.slot) == (w, s)).count();
            slots[w][s] = start..end;
            start = end;
        }
        let value = clauses.iter().map(|c| c.bound).collect();
        let mut ranker = Ranker {
            segment,
            specs,
            clauses,
            slots,
            value,
            changed: Vec::new(),
            known: vec![false; n],
            words: Vec::new(),
            unknown: Vec::new(),
            key: data.key.clone(),
            members,
            skip,
        };
        ranker.unknown = (0..ranker.slots.len()).map(|w| ranker.word(w)).collect();
        ranker.words = ranker.unknown.clone();
        Ok(ranker)
    }

    /// Puts every list that has moved back at its start.
    fn rewind(&mut self) -> tantivy::Result<()> {
        for clause in self.clauses.iter_mut().filter(|c| c.moved) {
            let field = self.specs[clause.spec].term.field();
            let inverted = self.segment.inverted_index(field)?;
            let block =
                inverted.read_block_postings_from_terminfo(&clause.info, IndexRecordOption::WithFreqs)?;
            clause.cursor = Cursor::new(block);
            clause.moved = false;
        }
        Ok(())
    }

    /// `max + tie × (sum − max)` over the slot's lists that may hold the document, as tantivy's
    /// DisjunctionMax combines; [`ABSENT`] if none may.
    #[inline]
    fn slot(&self, range: std::ops::Range<usize>) -> Score {
        let (mut max, mut sum) = (ABSENT, 0.0f32);
        for &v in &self.value[range] {
            if v >= 0.0 {
                max = max.max(v);
                sum += v;
            }
        }
        if max < 0.0 { ABSENT } else { max + (sum - max) * TIE_BREAKER }
    }

    /// The word's value under the current values; [`ABSENT`] if it cannot match.
    fn word(&self, w: usize) -> Score {
        let slots = &self.slots[w];
        let whole = self.slot(slots[0].clone());
        let mut parts = ABSENT;
        if slots.len() > 1 {
            parts = 0.0;
            for range in &slots[1..] {
                let s = self.slot(range.clone());
                if s < 0.0 {
                    parts = ABSENT;
                    break;
                }
                parts += s;
            }
        }
        if whole < 0.0 && parts < 0.0 { ABSENT } else { whole.max(0.0) + parts.max(0.0) }
    }

    /// The score (or bound) under the current values; [`ABSENT`] if some word cannot match.
    #[inline]
    fn total(&self) -> Score {
        let mut sum = 0.0;
        for &w in &self.words {
            if w < 0.0 {
                return ABSENT;
            }
            sum += w;
        }
        sum
    }

    /// Sets a list's value (a score or [`ABSENT`]) and updates its word's.
    #[inline]
    fn set(&mut self, c: usize, value: Score) {
        if !self.known[c] {
            self.known[c] = true;
            self.changed.push(c);
        }
        self.value[c] = value;
        let w = self.clauses[c].word;
        self.words[w] = self.word(w);
    }

    /// Makes every list unknown again.
    #[inline]
    fn reset(&mut self) {
        for c in self.changed.drain(..) {
            self.known[c] = false;
            self.value[c] = self.clauses[c].bound;
            let w = self.clauses[c].word;
            self.words[w] = self.unknown[w];
        }
    }

    /// Whether list `c` holds `doc`, recording its score there (or its absence).
    #[inline]
    /// Looks `doc` up in the lists `rest` (the others are already set), stopping as soon as its
    /// total cannot beat `threshold`; a document that can is offered to `top`. Leaves the
    /// values reset for the next document.
    fn complete(&mut self, rest: &[usize], doc: DocId, threshold: Score, top: &mut Top) {
        let mut qualifies = true;
        for &c in rest {
            self.resolve(c, doc);
            if prunable(self.total(), threshold) {
                qualifies = false;
                break;
            }
        }
        if qualifies {
            let score = self.total();
            if score >= 0.0 {
                top.push(score, self.key.get_val(doc));
            }
        }
        self.reset();
    }

    fn resolve(&mut self, c: usize, doc: DocId) -> bool {
        let clause = &mut self.clauses[c];
        if clause.seek(doc) {
            let score = clause.score();
            self.set(c, score);
            true
        } else {
            self.set(c, ABSENT);
            false
        }
    }

    /// Exact scores of `docs` (increasing), each `None` if it does not contain every word. For
    /// the few documents ranked outside [`walk`](Self::walk), on a ranker of their own.
    pub(crate) fn exact(&mut self, docs: &[DocId]) -> Vec<Option<Score>> {
        let mut out = Vec::with_capacity(docs.len());
        for &doc in docs {
            for c in 0..self.clauses.len() {
                self.resolve(c, doc);
            }
            let total = self.total();
            out.push((total >= 0.0).then_some(total));
            self.reset();
        }
        out
    }

    /// Offers every match that can enter `top` to it, looking at as few as it can.
    pub(crate) fn walk(&mut self, top: &mut Top, matches: u64) -> tantivy::Result<()> {
        let n = self.clauses.len();
        if n == 0 {
            return Ok(());
        }
        let mut walked = vec![false; n];
        while let Some((next, remaining)) = self.next_list(&walked, top.threshold()) {
            self.rewind()?;
            // When the matches are far fewer than the postings still to walk, looking each of
            // them up is cheaper; it also completes the search on its own.
            if let Members::Bits(bits) = self.members
                && matches.saturating_mul(MEMBER_WALK_RATIO) < remaining
            {
                self.walk_members(bits, top);
                return Ok(());
            }
            self.pass(next, &walked, top);
            walked[next] = true;
        }
        Ok(())
    }

    /// The bound of a document found in none of the `absent` lists ([`ABSENT`]: cannot match).
    fn ceiling(&mut self, absent: &[bool]) -> Score {
        for (c, absent) in absent.iter().enumerate() {
            if *absent {
                self.set(c, ABSENT);
            }
        }
        let ceiling = self.total();
        self.reset();
        ceiling
    }

    /// Which list to walk next, or `None` when every document found in no walked list is known
    /// not to qualify. Either the lists with the highest bounds, as few as make the rest
    /// harmless, or the remaining lists of one word (after which nothing else can match):
    /// whichever costs less; the highest bound first.
    fn next_list(&mut self, walked: &[bool], threshold: Score) -> Option<(usize, u64)> {
        if prunable(self.ceiling(walked), threshold) {
            return None;
        }
        let mut by_bound: Vec<usize> = (0..self.clauses.len()).filter(|c| !walked[*c]).collect();
        by_bound.sort_by(|a, b| self.clauses[*b].bound.total_cmp(&self.clauses[*a].bound));
        // The shortest prefix of `by_bound` whose walking would leave only harmless documents
        // (all of it while nothing is known of the threshold).
        let (mut lo, mut hi) = (1, by_bound.len());
        let mut absent = walked.to_vec();
        while lo < hi {
            let mid = (lo + hi) / 2;
            absent.copy_from_slice(walked);
            for &c in &by_bound[..mid] {
                absent[c] = true;
            }
            if prunable(self.ceiling(&absent), threshold) {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        let mut best = by_bound[..hi].to_vec();
        let mut best_cost = self.cost(&best);
        for w in 0..self.slots.len() {
            let mut word: Vec<usize> =
                (0..self.clauses.len()).filter(|c| !walked[*c] && self.clauses[*c].word == w).collect();
            let cost = self.cost(&word);
            if cost < best_cost {
                word.sort_by(|a, b| self.clauses[*b].bound.total_cmp(&self.clauses[*a].bound));
                best_cost = cost;
                best = word;
            }
        }
        best.first().map(|first| (*first, best_cost))
    }

    fn cost(&self, set: &[usize]) -> u64 {
        set.iter().map(|c| u64::from(self.clauses[*c].cost)).sum()
    }

    /// Every match, in order, each looked up list by list, highest bound first, until it is
    /// known not to qualify.
    fn walk_members(&mut self, bits: &Bits, top: &mut Top) {
        let mut order: Vec<usize> = (0..self.clauses.len()).collect();
        order.sort_by(|a, b| self.clauses[*b].bound.total_cmp(&self.clauses[*a].bound));
        // `clear[j]`: the bound of a document none of the first `j` lists of `order` holds.
        let mut clear = Vec::with_capacity(order.len() + 1);
        for j in 0..=order.len() {
            for &c in &order[..j] {
                self.set(c, ABSENT);
            }
            clear.push(self.total());
            self.reset();
        }
        bits.for_each(|doc| {
            #[cfg(test)]
            VISITED.set(VISITED.get() + 1);
            if self.skip.binary_search(&doc).is_ok() {
                return;
            }
            let threshold = top.threshold();
            // While every list looked at lacks the document, its bound is `clear[j]`.
            let mut j = 0;
            while j < order.len() && !self.clauses[order[j]].seek(doc) {
                j += 1;
                if prunable(clear[j], threshold) {
                    return;
                }
            }
            for &c in &order[..j] {
                self.set(c, ABSENT);
            }
            self.complete(&order[j..], doc, threshold, top);
        });
    }

    /// The highest score in list `e` at which a document found there and in none of the
    /// `absent` lists (other lists unknown) still cannot qualify (`-1` when any score might).
    fn cutoff(&mut self, e: usize, absent: &[usize], threshold: Score) -> Score {
        if threshold == NO_THRESHOLD {
            return -1.0;
        }
        let at = |ranker: &mut Ranker, s: Score| -> bool {
            for &c in absent {
                ranker.set(c, ABSENT);
            }
            ranker.set(e, s);
            let prune = prunable(ranker.total(), threshold);
            ranker.reset();
            prune
        };
        let top = self.clauses[e].bound;
        if at(self, top) {
            return Score::INFINITY;
        }
        if !at(self, 0.0) {
            return -1.0;
        }
        // The bound is increasing in the list's score: bisect for the last prunable score.
        let (mut lo, mut hi) = (0.0f32, top);
        for _ in 0..16 {
            let mid = (lo + hi) / 2.0;
            if at(self, mid) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// Walks list `e` block by block: blocks whose best score cannot qualify are skipped, then
    /// documents that are no match or score too low there; the rest are looked up in the other
    /// lists (see [`visit`](Self::visit)). Documents in an already `walked` list were offered
    /// then.
    fn pass(&mut self, e: usize, walked: &[bool], top: &mut Top) {
        let mut order: Vec<usize> = (0..self.clauses.len()).filter(|c| *c != e && !walked[*c]).collect();
        order.sort_by(|a, b| self.clauses[*b].bound.total_cmp(&self.clauses[*a].bound));
        let walked_lists: Vec<usize> = (0..self.clauses.len()).filter(|c| walked[*c]).collect();
        // `cutoffs.get(j)`: the score in `e` a document needs to possibly qualify when none of
        // the walked lists and none of the first `j` lists of `order` hold it.
        let mut cutoffs = Cutoffs {
            e,
            walked: walked_lists.clone(),
            order: order.clone(),
            threshold: NO_THRESHOLD,
            at: Vec::new(),
        };
        let mut candidates: Vec<(DocId, Score)> = Vec::with_capacity(BLOCK);
        let mut scratch = Scratch { index: [0; BLOCK], norm: [0; BLOCK] };
        self.clauses[e].moved = true;
        loop {
            let threshold = top.threshold();
            let planned = cutoffs.threshold;
            if threshold > planned && (planned == NO_THRESHOLD || threshold > planned * 1.01) {
                cutoffs.replan(threshold);
            }
            let need = cutoffs.get(self, 0);
            let clause = &mut self.clauses[e];
            let block = &mut clause.cursor.block;
            if block.block_len() == 0 {
                return;
            }
            if need >= 0.0
                && block.block_max_score(&clause.fieldnorms, &clause.weight) * clause.block_factor <= need
            {
                block.advance();
                continue;
            }
            let docs = block.docs();
            #[cfg(test)]
            VISITED.set(VISITED.get() + docs.len() as u64);
            // In three sweeps without branches on the data, so the field-length lookups (one
            // cache miss each, scattered over the segment) overlap: the matches, their lengths,
            // then the scores that may qualify.
            let freqs = block.freqs();
            let mut found = 0;
            for (i, &doc) in docs.iter().enumerate() {
                scratch.index[found] = i as u8;
                found += usize::from(self.members.contains(doc));
            }
            for k in 0..found {
                scratch.norm[k] = clause.fieldnorms.fieldnorm_id(docs[scratch.index[k] as usize]);
            }
            candidates.clear();
            for k in 0..found {
                let i = scratch.index[k] as usize;
                let score = clause.weight.score(scratch.norm[k], freqs[i]);
                if score > need {
                    candidates.push((docs[i], score));
                }
            }
            clause.cursor.block.advance();
            for &(doc, score) in &candidates {
                self.visit(doc, score, &mut cutoffs, top);
            }
        }
    }

    /// Scores `doc`, found in list `e` with `score`, unless it was offered in an earlier pass or
    /// cannot qualify, and offers it to `top`. `order`: the other unwalked lists, highest bound
    /// first, looked up in turn; while none holds the document, `cutoffs` say whether it can
    /// still qualify, without computing its bound.
    fn visit(&mut self, doc: DocId, score: Score, cutoffs: &mut Cutoffs, top: &mut Top) {
        if self.skip.binary_search(&doc).is_ok() {
            return;
        }
        for &c in &cutoffs.walked {
            if self.clauses[c].seek(doc) {
                // Offered when its list was walked.
                return;
            }
        }
        let n = cutoffs.order.len();
        let mut j = 0;
        while j < n && !self.clauses[cutoffs.order[j]].seek(doc) {
            j += 1;
            if score <= cutoffs.get(self, j) {
                return;
            }
        }
        for i in 0..cutoffs.walked.len() {
            self.set(cutoffs.walked[i], ABSENT);
        }
        for i in 0..j {
            self.set(cutoffs.order[i], ABSENT);
        }
        self.set(cutoffs.e, score);
        let threshold = top.threshold();
        self.complete(&cutoffs.order[j..], doc, threshold, top);
    }
}

/// The scores a document needs in the walked list `e` to possibly qualify, by how many of the
/// other lists are known not to hold it; computed when first needed, for the threshold of the
/// last [`replan`](Self::replan) (a lower threshold than the page's is only more cautious).
struct Cutoffs {
    e: usize,
    /// Lists walked in earlier passes: they hold none of the documents looked up.
    walked: Vec<usize>,
    /// The other lists, in the order they are looked up.
    order: Vec<usize>,
    threshold: Score,
    /// `at[j]`, if computed: with the walked lists and the first `j` of `order` absent.
    at: Vec<Option<Score>>,
}

impl Cutoffs {
    fn replan(&mut self, threshold: Score) {
        self.threshold = threshold;
        self.at.clear();
        self.at.resize(self.order.len() + 1, None);
    }

    fn get(&mut self, ranker: &mut Ranker, j: usize) -> Score {
        if self.threshold == NO_THRESHOLD {
            return -1.0;
        }
        if let Some(v) = self.at[j] {
            return v;
        }
        let absent: Vec<usize> = self.walked.iter().chain(&self.order[..j]).copied().collect();
        let v = ranker.cutoff(self.e, &absent, self.threshold);
        self.at[j] = Some(v);
        v
    }
}

/// Documents per block of a posting list.
const BLOCK: usize = 128;

/// Per block of a walked list: the positions of its matches and their field-length codes.
struct Scratch {
    index: [u8; BLOCK],
    norm: [u8; BLOCK],
}

#[cfg(test)]
thread_local! {
    static EXHAUSTIVE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    static VISITED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Makes this thread's searches score every match (no threshold), to check pruning against.
#[cfg(test)]
pub(crate) fn set_exhaustive(on: bool) {
    EXHAUSTIVE.set(on);
}

/// Documents this thread's searches have looked at so far.
#[cfg(test)]
pub(crate) fn visited() -> u64 {
    VISITED.get()
}

#[cfg(test)]
mod tests {
    use tantivy::schema::{Schema, TEXT};
    use tantivy::{Index, IndexWriter, TantivyDocument};

    use super::*;

    /// No document of a list scores above the list's bound, however often the term fills the
    /// field, including lengths whose code stands for several lengths.
    #[test]
    fn bounds_hold_for_every_posting() {
        let mut schema = Schema::builder();
        let field = schema.add_text_field("f", TEXT);
        let index = Index::create_in_ram(schema.build());
        let mut writer: IndexWriter = index.writer_with_num_threads(1, 15_000_000).expect("writer");
        let mut lengths: Vec<usize> = (1..60).collect();
        lengths.extend([61, 80, 100, 129, 200, 333, 1000, 1500]);
        for &n in &lengths {
            for filled in [1, n / 2, n] {
                let mut words = vec!["w"; filled.max(1)];
                words.resize(n.max(filled), "other");
                let mut d = TantivyDocument::default();
                d.add_text(field, words.join(" "));
                writer.add_document(d).expect("add");
            }
        }
        writer.commit().expect("commit");
        let searcher = index.reader().expect("reader").searcher();
        let segment = searcher.segment_reader(0);
        let norms = segment.get_fieldnorms_reader(field).expect("norms");
        let longest = (0..segment.max_doc()).map(|d| norms.fieldnorm_id(d)).max().unwrap_or(0);
        let inverted = segment.inverted_index(field).expect("inverted");
        let average = inverted.total_num_tokens() as Score / segment.max_doc() as Score;
        for word in ["w", "other"] {
            let term = Term::from_field_text(field, word);
            let df = searcher.doc_freq(&term).expect("df");
            for boost in [1.0, 2.5] {
                let weight =
                    Bm25Weight::for_one_term(df, u64::from(segment.max_doc()), average).boost_by(boost);
                let code = peak(&weight, longest);
                let bound = weight.score(code, most(code));
                let mut block = inverted
                    .read_block_postings(&term, IndexRecordOption::WithFreqs)
                    .expect("read")
                    .expect("list");
                let mut seen = 0;
                while block.block_len() > 0 {
                    for (&doc, &tf) in block.docs().iter().zip(block.freqs()) {
                        let score = weight.score(norms.fieldnorm_id(doc), tf);
                        assert!(score <= bound, "{word}: doc {doc} tf {tf} scores {score} > {bound}");
                        seen += 1;
                    }
                    block.advance();
                }
                assert!(seen > 0);
                // The bound is tighter than the weight itself for these fields.
                assert!(bound < weight.score(0, u32::MAX));
            }
        }
    }
}
