//! The exact set of documents of one segment that match a free-text search: every word (each a
//! posting list of the `all` field, or for a long Chinese word, that list or the intersection of
//! its sub-words' lists), every exact filter, the numeric filters, and not deleted. Its size is
//! the search's exact `total`; ranking (rank.rs) asks it whether a document is a match.
//!
//! Conditions are applied smallest first. A term with a bitmap (a common one, dense.rs) is
//! intersected word by word; another of about the size of the current set, or smaller, is
//! decoded into a bitset first (about a nanosecond per posting: block decoding, then one bit
//! set); a much larger one is instead probed with skip-list seeks for each remaining document.
//! A single plain word without filters needs no set at all: its total is the list's document
//! count, less the deleted documents it holds.

use std::borrow::Cow;

use tantivy::fastfield::AliveBitSet;
use tantivy::postings::{BlockSegmentPostings, SegmentPostings};
use tantivy::schema::IndexRecordOption;
use tantivy::{BitSet, DocId, DocSet, SegmentReader, TERMINATED, Term};

use crate::collect::NumericColumns;
use crate::dense::SegmentBitmaps;

/// A set of document ids of one segment, one bit each.
#[derive(Clone)]
pub(crate) struct Bits {
    words: Vec<u64>,
}

impl Bits {
    pub(crate) fn empty(max_doc: DocId) -> Bits {
        Bits { words: vec![0; (max_doc as usize).div_ceil(64)] }
    }

    /// Every document of a posting list.
    pub(crate) fn of_block_postings(max_doc: DocId, mut block: BlockSegmentPostings) -> Bits {
        let mut bits = Bits::empty(max_doc);
        loop {
            let docs = block.docs();
            if docs.is_empty() {
                break;
            }
            for &doc in docs {
                bits.words[(doc / 64) as usize] |= 1u64 << (doc % 64);
            }
            block.advance();
        }
        bits
    }

    /// Every document of `term`'s posting list: its bitmap if it has one, else decoded.
    fn of_term<'a>(
        segment: &SegmentReader,
        dense: Option<&'a SegmentBitmaps>,
        term: &Term,
    ) -> tantivy::Result<Cow<'a, Bits>> {
        if let Some(bits) = dense.and_then(|d| d.get(term)) {
            return Ok(Cow::Borrowed(bits));
        }
        let inverted = segment.inverted_index(term.field())?;
        Ok(Cow::Owned(match inverted.read_block_postings(term, IndexRecordOption::Basic)? {
            Some(block) => Bits::of_block_postings(segment.max_doc(), block),
            None => Bits::empty(segment.max_doc()),
        }))
    }

    #[inline]
    pub(crate) fn contains(&self, doc: DocId) -> bool {
        self.words.get((doc / 64) as usize).is_some_and(|w| w & (1u64 << (doc % 64)) != 0)
    }

    fn and(&mut self, other: &Bits) {
        for (a, b) in self.words.iter_mut().zip(&other.words) {
            *a &= *b;
        }
    }

    fn or(&mut self, other: &Bits) {
        for (a, b) in self.words.iter_mut().zip(&other.words) {
            *a |= *b;
        }
    }

    pub(crate) fn len(&self) -> u64 {
        ones(self.words.iter().copied())
    }

    /// How many of the documents are not deleted.
    fn len_alive(&self, alive: &AliveBitSet) -> u64 {
        ones(live_words(alive, self.words.len()).zip(&self.words).map(|(l, w)| l & w))
    }

    /// Calls `f` with every document, in increasing order.
    pub(crate) fn for_each(&self, mut f: impl FnMut(DocId)) {
        for (i, &word) in self.words.iter().enumerate() {
            let mut rest = word;
            while rest != 0 {
                f(i as DocId * 64 + rest.trailing_zeros());
                rest &= rest - 1;
            }
        }
    }

    /// Keeps the documents for which `keep` is true; `keep` sees them in increasing order.
    fn retain(&mut self, mut keep: impl FnMut(DocId) -> bool) {
        for (i, word) in self.words.iter_mut().enumerate() {
            let mut rest = *word;
            while rest != 0 {
                let bit = rest.trailing_zeros();
                rest &= rest - 1;
                if !keep(i as DocId * 64 + bit) {
                    *word &= !(1u64 << bit);
                }
            }
        }
    }

    /// Drops the deleted documents.
    fn and_alive(&mut self, alive: &AliveBitSet) {
        let live = live_words(alive, self.words.len());
        for (word, live) in self.words.iter_mut().zip(live) {
            *word &= live;
        }
    }
}

/// The number of bits set in `words`. The default x86-64 target has no population-count
/// instruction, and a bitmap of a million documents is 15,625 words: counted in software that
/// is tens of microseconds per search, so the instruction is used where the CPU has it.
fn ones(words: impl Iterator<Item = u64>) -> u64 {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("popcnt") {
        // SAFETY: the CPU supports the instruction `ones_popcnt` is compiled with.
        return unsafe { ones_popcnt(words) };
    }
    words.map(|w| u64::from(w.count_ones())).sum()
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "popcnt")]
unsafe fn ones_popcnt(words: impl Iterator<Item = u64>) -> u64 {
    words.map(|w| u64::from(w.count_ones())).sum()
}

/// The alive set, 64 documents per word. tantivy exposes it word by word only through this
/// intersection.
fn live_words(alive: &AliveBitSet, words: usize) -> impl Iterator<Item = u64> {
    let mut set = BitSet::with_max_value_and_full(words as u32 * 64);
    set.intersect_update(alive.bitset());
    (0..words as u32).map(move |i| u64::from_le_bytes(set.tinyset(i).into_bytes()))
}

/// The deleted documents of a segment, in increasing order.
fn deleted_docs(segment: &SegmentReader, alive: &AliveBitSet) -> Vec<DocId> {
    let max_doc = segment.max_doc();
    let mut out = Vec::with_capacity(segment.num_deleted_docs() as usize);
    for (i, live) in live_words(alive, (max_doc as usize).div_ceil(64)).enumerate() {
        let mut gone = !live;
        while gone != 0 {
            let doc = i as DocId * 64 + gone.trailing_zeros();
            gone &= gone - 1;
            if doc < max_doc {
                out.push(doc);
            }
        }
    }
    out
}

/// A document must contain `term`, or else every one of `parts` (all in the `all` field).
pub(crate) struct WordCondition {
    pub term: Term,
    pub parts: Vec<Term>,
}

/// What a segment's matching documents are, once computed.
pub(crate) enum Members<'a> {
    /// Exactly these documents.
    Bits(Bits),
    /// A single plain word and nothing else: every live document of its lists. Only documents
    /// read from that word's own posting lists may be asked about.
    Alive(Option<&'a AliveBitSet>),
}

impl Members<'_> {
    /// Whether `doc`, read from a posting list of the search's words, is a match.
    #[inline]
    pub(crate) fn contains(&self, doc: DocId) -> bool {
        match self {
            Members::Bits(bits) => bits.contains(doc),
            Members::Alive(alive) => alive.is_none_or(|a| a.is_alive(doc)),
        }
    }
}

/// One condition to intersect: a word, or an exact filter (a single term).
enum Condition<'c> {
    Word(&'c WordCondition),
    Filter(&'c Term),
}

fn doc_freq(segment: &SegmentReader, term: &Term) -> tantivy::Result<u32> {
    let inverted = segment.inverted_index(term.field())?;
    Ok(inverted.get_term_info(term)?.map_or(0, |info| info.doc_freq))
}

fn postings(segment: &SegmentReader, term: &Term) -> tantivy::Result<Option<SegmentPostings>> {
    let inverted = segment.inverted_index(term.field())?;
    Ok(inverted.read_postings(term, IndexRecordOption::Basic)?)
}

/// Largest ratio of a condition's size to the current set's at which decoding it is cheaper than
/// seeking it once per remaining document.
const PROBE_RATIO: u64 = 32;

impl Condition<'_> {
    /// An upper bound of the documents it can match, to order conditions by.
    fn size(&self, segment: &SegmentReader) -> tantivy::Result<u64> {
        Ok(match self {
            Condition::Filter(term) => u64::from(doc_freq(segment, term)?),
            Condition::Word(w) => {
                let mut parts = u64::MAX;
                for p in &w.parts {
                    parts = parts.min(u64::from(doc_freq(segment, p)?));
                }
                let parts = if w.parts.is_empty() { 0 } else { parts };
                u64::from(doc_freq(segment, &w.term)?) + parts
            }
        })
    }

    fn bits<'a>(
        &self,
        segment: &SegmentReader,
        dense: Option<&'a SegmentBitmaps>,
    ) -> tantivy::Result<Cow<'a, Bits>> {
        match self {
            Condition::Filter(term) => Bits::of_term(segment, dense, term),
            Condition::Word(w) => {
                let mut bits = Bits::of_term(segment, dense, &w.term)?;
                if let Some((first, rest)) = w.parts.split_first() {
                    let mut parts = Bits::of_term(segment, dense, first)?.into_owned();
                    for p in rest {
                        parts.and(&*Bits::of_term(segment, dense, p)?);
                    }
                    bits.to_mut().or(&parts);
                }
                Ok(bits)
            }
        }
    }

    /// Removes from `bits` the documents this condition does not match, by seeking.
    fn probe(&self, segment: &SegmentReader, bits: &mut Bits) -> tantivy::Result<()> {
        let (whole, parts) = match self {
            Condition::Filter(term) => (*term, &[][..]),
            Condition::Word(w) => (&w.term, &w.parts[..]),
        };
        let mut whole = postings(segment, whole)?;
        let mut parts = parts.iter().map(|p| postings(segment, p)).collect::<tantivy::Result<Vec<_>>>()?;
        if parts.iter().any(Option::is_none) {
            parts.clear();
        }
        let mut parts: Vec<SegmentPostings> = parts.into_iter().flatten().collect();
        bits.retain(|doc| {
            whole.as_mut().is_some_and(|p| seek_to(p, doc))
                || (!parts.is_empty() && parts.iter_mut().all(|p| seek_to(p, doc)))
        });
        Ok(())
    }
}

/// Whether the postings hold `doc`; they only move forward.
#[inline]
pub(crate) fn seek_to(postings: &mut SegmentPostings, doc: DocId) -> bool {
    let at = postings.doc();
    if at == doc {
        return true;
    }
    at < doc && at != TERMINATED && postings.seek(doc) == doc
}

/// The matches of one segment and how many there are.
pub(crate) struct MatchSet<'a> {
    pub count: u64,
    pub members: Members<'a>,
}

/// Computes the documents of `segment` that contain every word and every filter term, pass the
/// numeric filters and are alive in `alive` (`None`: all are). `words` must not be empty.
pub(crate) fn compute<'a>(
    segment: &'a SegmentReader,
    alive: Option<&'a AliveBitSet>,
    dense: Option<&SegmentBitmaps>,
    words: &[WordCondition],
    filters: &[Term],
    numeric: &NumericColumns,
) -> tantivy::Result<MatchSet<'a>> {
    if let [word] = words
        && word.parts.is_empty()
        && filters.is_empty()
        && numeric.is_empty()
    {
        let count = match (alive, dense.and_then(|d| d.get(&word.term))) {
            (Some(alive), Some(bits)) => bits.len_alive(alive),
            _ => count_alive(segment, &word.term, alive)?,
        };
        return Ok(MatchSet { count, members: Members::Alive(alive) });
    }
    let mut conditions: Vec<(u64, Condition)> = Vec::with_capacity(words.len() + filters.len());
    for c in words.iter().map(Condition::Word).chain(filters.iter().map(Condition::Filter)) {
        let size = c.size(segment)?;
        if size == 0 {
            return Ok(MatchSet { count: 0, members: Members::Bits(Bits::empty(0)) });
        }
        conditions.push((size, c));
    }
    conditions.sort_by_key(|(size, _)| *size);
    let mut conditions = conditions.into_iter();
    let Some((_, first)) = conditions.next() else {
        return Ok(MatchSet { count: 0, members: Members::Bits(Bits::empty(0)) });
    };
    let mut bits = first.bits(segment, dense)?.into_owned();
    let mut count = bits.len();
    for (size, c) in conditions {
        if count == 0 {
            break;
        }
        let held = matches!(c, Condition::Filter(t) if dense.is_some_and(|d| d.get(t).is_some()))
            || matches!(c, Condition::Word(w) if w.parts.is_empty() && dense.is_some_and(|d| d.get(&w.term).is_some()));
        if !held && size > count.saturating_mul(PROBE_RATIO) {
            c.probe(segment, &mut bits)?;
        } else {
            bits.and(&*c.bits(segment, dense)?);
        }
        count = bits.len();
    }
    if let Some(alive) = alive {
        bits.and_alive(alive);
    }
    if !numeric.is_empty() {
        bits.retain(|doc| numeric.passes(doc));
    }
    let count = bits.len();
    Ok(MatchSet { count, members: Members::Bits(bits) })
}

/// The live documents of `term`'s list: its document count, less the deleted ones it holds,
/// found by probing the list with each deleted document when they are few.
fn count_alive(segment: &SegmentReader, term: &Term, alive: Option<&AliveBitSet>) -> tantivy::Result<u64> {
    let df = u64::from(doc_freq(segment, term)?);
    let Some(alive) = alive else {
        return Ok(df);
    };
    if df == 0 {
        return Ok(0);
    }
    let Some(mut list) = postings(segment, term)? else {
        return Ok(0);
    };
    let deleted = u64::from(segment.num_deleted_docs());
    if deleted.saturating_mul(8) < df {
        let gone: u64 =
            deleted_docs(segment, alive).into_iter().map(|d| u64::from(seek_to(&mut list, d))).sum();
        Ok(df - gone)
    } else {
        Ok(u64::from(list.doc_freq_given_deletes(alive)))
    }
}
