//! The in-memory overlay: what [`crate::SearchIndex::apply`] adds between two flushes.
//!
//! Why: a tantivy commit creates a segment on disk, fsyncs its files and the index's metadata,
//! and the reload after it reopens the segments; on the two-core machine that cost 20–90 ms per
//! commit under load, and the writer paid it once per batch before answering anybody. Now a batch
//! becomes a small segment built in memory on the calling thread (tantivy's single-segment writer
//! into a RAM directory: no worker threads, no fsync, no metadata), and a search reads the disk
//! segments and the overlay's segments as one list. The overlay is written to disk in one commit
//! by [`crate::SearchIndex::flush`], off the writer's path (the server's background pass, every
//! second, or `apply` itself past [`MAX_OVERLAY_DOCS`]).
//!
//! Exactness: a document's latest version is the only one alive. Every key a batch upserts or
//! removes masks the older versions of that key — in the disk segments and in earlier overlay
//! segments — through an alive set of our own per segment (the disk segment's own deletions
//! included), which the search code uses wherever it would use tantivy's. Masked documents keep
//! counting in the BM25 statistics (document count, average field length), exactly as tantivy's
//! own deleted documents do until a merge, so a page is the same before and after a flush:
//! totals count live documents only, and scores use the same statistics either way.
//!
//! A view (the segments and their alive sets, with a generation number) is rebuilt after every
//! change and swapped in whole; a search takes one view and reads only it, so it sees a batch
//! entirely or not at all.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};

use tantivy::directory::{OwnedBytes, RamDirectory};
use tantivy::fastfield::{AliveBitSet, intersect_alive_bitsets, write_alive_bitset};
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::{BitSet, DocId, DocSet, Index, Searcher, SegmentReader, TERMINATED, TantivyDocument, Term};

use crate::warm::Segments;

/// Documents kept in memory before `apply` flushes by itself (the periodic flush normally comes
/// first; this bounds memory and the number of segments a search reads, e.g. during a start-up
/// replay of a long change log).
pub const MAX_OVERLAY_DOCS: usize = 20_000;

/// Indexing memory of one overlay segment, per document. tantivy sizes the segment's term hash
/// table from the budget (the largest power of two under a third of it, at 8 bytes a slot, capped
/// at 2^19) and allocates, zeroes and at the end scans the whole table: with the 15 MB of an
/// index writer that is 512K slots per batch, which was most of the writer thread's time. A
/// batch holds a few thousand distinct terms at most; the table grows by itself when it fills.
const BUDGET_PER_DOC: usize = 4_000;
const MIN_SEGMENT_BUDGET: usize = 150_000;
const MAX_SEGMENT_BUDGET: usize = 15_000_000;

/// One segment as a search sees it: the reader, and which of its documents are alive.
pub(crate) struct Leaf {
    pub reader: SegmentReader,
    /// `None`: every document is alive.
    pub alive: Option<AliveBitSet>,
    pub num_docs: u32,
}

impl Leaf {
    pub(crate) fn is_alive(&self, doc: DocId) -> bool {
        self.alive.as_ref().is_none_or(|a| a.is_alive(doc))
    }
}

/// What one search reads: the disk segments then the overlay's, each with its alive set.
pub(crate) struct View {
    pub leaves: Vec<Arc<Leaf>>,
    /// Grows with every change of the view; names the result-cache generation.
    pub generation: u64,
}

impl View {
    pub(crate) fn num_docs(&self) -> u64 {
        self.leaves.iter().map(|l| u64::from(l.num_docs)).sum()
    }
}

/// One entry of a batch for one index: the key, and its new document (`None`: removed).
pub(crate) type Entry = (u64, Option<TantivyDocument>);

/// One applied batch, in memory.
struct Batch {
    /// Names the batch in `State::latest` (a seq can be applied twice).
    id: u64,
    seq: u64,
    /// The segment of the batch's upserts (none when it only removed).
    reader: Option<SegmentReader>,
    /// Every key the batch upserted or removed.
    keys: Vec<u64>,
    /// Its own documents that a later batch replaced or removed.
    masked: Vec<DocId>,
    leaf: Option<Arc<Leaf>>,
}

/// One disk segment with the documents the overlay masks in it.
struct Disk {
    reader: SegmentReader,
    masked: Vec<DocId>,
    leaf: Arc<Leaf>,
}

struct State {
    disk: Vec<Disk>,
    /// Keys already looked up in the disk segments.
    checked: HashSet<u64>,
    batches: Vec<Batch>,
    /// Where each key's latest overlay version is: (batch id, document).
    latest: HashMap<u64, (u64, DocId)>,
    next_id: u64,
    docs: usize,
    generation: u64,
}

pub(crate) struct Overlay {
    key: Field,
    state: Mutex<State>,
    view: RwLock<Arc<View>>,
}

impl Overlay {
    pub(crate) fn new(key: Field, disk: &Searcher) -> tantivy::Result<Overlay> {
        let mut state = State {
            disk: Vec::new(),
            checked: HashSet::new(),
            batches: Vec::new(),
            latest: HashMap::new(),
            next_id: 0,
            docs: 0,
            generation: 0,
        };
        state.set_disk(disk);
        let view = RwLock::new(Arc::new(state.view()));
        Ok(Overlay { key, state: Mutex::new(state), view })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // Every change is computed first and stored at the end, so a panic leaves it consistent.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn view(&self) -> Arc<View> {
        self.view.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn publish(&self, state: &mut State) {
        state.generation += 1;
        let view = Arc::new(state.view());
        *self.view.write().unwrap_or_else(|e| e.into_inner()) = view;
    }

    /// Documents held in memory.
    pub(crate) fn docs(&self) -> usize {
        self.lock().docs
    }

    /// Adds a batch: `entries` in the order of the changes. A key may come more than once; like
    /// tantivy's own delete-then-add, every version becomes a document and all but the last
    /// are masked, so the statistics match those of the same changes committed to disk.
    pub(crate) fn add(
        &self,
        seq: u64,
        entries: Vec<Entry>,
        template: &Index,
        segments: &Segments,
    ) -> tantivy::Result<()> {
        if entries.is_empty() {
            return Ok(());
        }
        let mut keys = Vec::with_capacity(entries.len());
        let mut docs = Vec::new();
        let mut versions = Vec::with_capacity(entries.len());
        for (key, doc) in entries {
            keys.push(key);
            versions.push(doc.as_ref().map(|_| docs.len() as DocId));
            docs.extend(doc);
        }
        let count = docs.len();
        let reader = if docs.is_empty() { None } else { Some(build_segment(template, docs)?) };
        if let Some(r) = &reader {
            segments.prepare_extra(r)?;
        }
        let mut state = self.lock();
        let id = state.next_id;
        let mut masked = Vec::new();
        for (&key, version) in keys.iter().zip(versions) {
            // The older version of this key in the overlay, if any.
            if let Some((older, doc)) = state.latest.remove(&key) {
                if older == id {
                    masked.push(doc);
                } else if let Some(b) = state.batches.iter_mut().find(|b| b.id == older) {
                    b.masked.push(doc);
                    b.leaf = None;
                }
            }
            if let Some(doc) = version {
                state.latest.insert(key, (id, doc));
            }
        }
        // The disk versions.
        state.mask_disk(self.key, &keys)?;
        state.next_id += 1;
        state.docs += count;
        state.batches.push(Batch { id, seq, reader, keys, masked, leaf: None });
        state.refresh_leaves()?;
        self.publish(&mut state);
        Ok(())
    }

    /// After a flush up to `seq` (or a rebuild: `u64::MAX`): the disk segments are now those of
    /// `disk`, and the batches up to `seq` are in them.
    pub(crate) fn replace_disk(&self, disk: &Searcher, seq: u64, segments: &Segments) -> tantivy::Result<()> {
        let mut state = self.lock();
        let (gone, kept): (Vec<Batch>, Vec<Batch>) =
            std::mem::take(&mut state.batches).into_iter().partition(|b| b.seq <= seq);
        for b in &gone {
            if let Some(r) = &b.reader {
                segments.forget_extra(r);
            }
        }
        let kept_ids: HashSet<u64> = kept.iter().map(|b| b.id).collect();
        state.batches = kept;
        state.latest.retain(|_, (id, _)| kept_ids.contains(id));
        state.docs =
            state.batches.iter().map(|b| b.reader.as_ref().map_or(0, |r| r.max_doc() as usize)).sum();
        state.set_disk(disk);
        let keys: Vec<u64> = state.batches.iter().flat_map(|b| b.keys.iter().copied()).collect();
        state.mask_disk(self.key, &keys)?;
        state.refresh_leaves()?;
        self.publish(&mut state);
        Ok(())
    }
}

impl State {
    fn set_disk(&mut self, disk: &Searcher) {
        self.checked.clear();
        self.disk = disk
            .segment_readers()
            .iter()
            .map(|r| Disk {
                reader: r.clone(),
                masked: Vec::new(),
                leaf: Arc::new(Leaf {
                    reader: r.clone(),
                    alive: r.alive_bitset().cloned(),
                    num_docs: r.num_docs(),
                }),
            })
            .collect();
    }

    /// Masks the disk versions of `keys` (those not looked up before).
    fn mask_disk(&mut self, key_field: Field, keys: &[u64]) -> tantivy::Result<()> {
        let mut touched = vec![false; self.disk.len()];
        for &key in keys {
            if !self.checked.insert(key) {
                continue;
            }
            let term = Term::from_field_u64(key_field, key);
            for (i, d) in self.disk.iter_mut().enumerate() {
                let Some(mut list) =
                    d.reader.inverted_index(key_field)?.read_postings(&term, IndexRecordOption::Basic)?
                else {
                    continue;
                };
                while list.doc() != TERMINATED {
                    if !d.reader.is_deleted(list.doc()) {
                        d.masked.push(list.doc());
                        touched[i] = true;
                    }
                    list.advance();
                }
            }
        }
        for (d, touched) in self.disk.iter_mut().zip(touched) {
            if touched {
                d.leaf = Arc::new(leaf(&d.reader, &d.masked));
            }
        }
        Ok(())
    }

    fn refresh_leaves(&mut self) -> tantivy::Result<()> {
        for b in &mut self.batches {
            if b.leaf.is_none()
                && let Some(r) = &b.reader
            {
                b.leaf = Some(Arc::new(leaf(r, &b.masked)));
            }
        }
        Ok(())
    }

    fn view(&self) -> View {
        let disk = self.disk.iter().map(|d| d.leaf.clone());
        let overlay = self.batches.iter().filter_map(|b| b.leaf.clone());
        View { leaves: disk.chain(overlay).collect(), generation: self.generation }
    }
}

/// The reader with `masked` deleted on top of its own deletions.
fn leaf(reader: &SegmentReader, masked: &[DocId]) -> Leaf {
    if masked.is_empty() {
        return Leaf {
            reader: reader.clone(),
            alive: reader.alive_bitset().cloned(),
            num_docs: reader.num_docs(),
        };
    }
    let mut bits = BitSet::with_max_value_and_full(reader.max_doc());
    for &doc in masked {
        bits.remove(doc);
    }
    let mut bytes = Vec::new();
    // Writing to a Vec cannot fail.
    let _ = write_alive_bitset(&bits, &mut bytes);
    let mut alive = AliveBitSet::open(OwnedBytes::new(bytes));
    if let Some(own) = reader.alive_bitset() {
        alive = intersect_alive_bitsets(alive, own.clone());
    }
    let num_docs = alive.num_alive_docs() as u32;
    Leaf { reader: reader.clone(), alive: Some(alive), num_docs }
}

/// One segment of `docs`, in memory, with the schema and tokenizers of `template`; document ids
/// follow the order of `docs`.
fn build_segment(template: &Index, docs: Vec<TantivyDocument>) -> tantivy::Result<SegmentReader> {
    let budget = docs.len().saturating_mul(BUDGET_PER_DOC).clamp(MIN_SEGMENT_BUDGET, MAX_SEGMENT_BUDGET);
    let mut writer = Index::builder()
        .schema(template.schema())
        .tokenizers(template.tokenizers().clone())
        .single_segment_index_writer(RamDirectory::create(), budget)?;
    for doc in docs {
        writer.add_document(doc)?;
    }
    let index = writer.finalize()?;
    let segment = index
        .searchable_segments()?
        .into_iter()
        .next()
        .ok_or_else(|| tantivy::TantivyError::InternalError("overlay segment missing".into()))?;
    SegmentReader::open(&segment)
}
