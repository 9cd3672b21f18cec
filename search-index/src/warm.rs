//! Per-segment data prepared once, when a reader first sees a segment (a tantivy `Warmer`, run
//! by `reload` before the new searcher is used), and dropped when no searcher holds the segment
//! any more: the key and time columns, whose opening decodes their whole block index (about
//! 30 µs for a million documents, too much to pay on every search), the dense terms' bitmaps
//! (dense.rs), and each scored field's longest length code.
//! Segments never change, so nothing here goes stale.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, RwLock};

use tantivy::columnar::ColumnValues;
use tantivy::index::SegmentId;
use tantivy::schema::Field;
use tantivy::{Searcher, SearcherGeneration, SegmentReader, Warmer};

use crate::collect::dense;
use crate::dense::SegmentBitmaps;
use crate::schema::{KEY, TS};

pub(crate) struct SegmentData {
    /// The `key` fast field, one value per document.
    pub key: Arc<dyn ColumnValues<u64>>,
    /// The `ts` fast field (recency order), one value per document.
    pub ts: Arc<dyn ColumnValues<i64>>,
    pub bitmaps: SegmentBitmaps,
    /// Per scored field, the highest field-length code of any document: no term can occur in a
    /// field more often than the field has tokens, which bounds its scores (see rank.rs).
    pub longest: HashMap<Field, u8>,
}

impl SegmentData {
    fn build(segment: &SegmentReader, fields: &Fields) -> tantivy::Result<SegmentData> {
        let ff = segment.fast_fields();
        let mut longest = HashMap::new();
        for &field in &fields.scored {
            let norms = segment.get_fieldnorms_reader(field)?;
            let max = (0..segment.max_doc()).map(|d| norms.fieldnorm_id(d)).max().unwrap_or(0);
            longest.insert(field, max);
        }
        Ok(SegmentData {
            key: dense(ff.u64(KEY)?, 0),
            ts: dense(ff.i64(TS)?, i64::MIN),
            bitmaps: SegmentBitmaps::build(segment, &fields.counted)?,
            longest,
        })
    }
}

/// The fields an index's segment data is prepared for.
pub(crate) struct Fields {
    /// The fields whose terms searches count: `all` and the exact-filter fields.
    pub counted: Vec<Field>,
    /// The scored text fields.
    pub scored: Vec<Field>,
}

/// The prepared data of every live segment of one index.
pub(crate) struct Segments {
    fields: Fields,
    map: RwLock<HashMap<SegmentId, Arc<SegmentData>>>,
    /// The overlay's segments (overlay.rs), which no reader generation knows: prepared when
    /// built, dropped when flushed.
    extra: RwLock<HashMap<SegmentId, Arc<SegmentData>>>,
}

impl Segments {
    pub(crate) fn new(fields: Fields) -> Segments {
        Segments { fields, map: RwLock::new(HashMap::new()), extra: RwLock::new(HashMap::new()) }
    }

    #[cfg(test)]
    pub(crate) fn is_prepared(&self, segment: &SegmentReader) -> bool {
        self.map.read().unwrap_or_else(|e| e.into_inner()).contains_key(&segment.segment_id())
    }

    /// The segment's data; prepared now if the reader's warming has not (it always has).
    pub(crate) fn get(&self, segment: &SegmentReader) -> tantivy::Result<Arc<SegmentData>> {
        let id = segment.segment_id();
        let found = self
            .map
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(&id)
            .cloned()
            .or_else(|| self.extra.read().unwrap_or_else(|e| e.into_inner()).get(&id).cloned());
        match found {
            Some(data) => Ok(data),
            None => Ok(Arc::new(SegmentData::build(segment, &self.fields)?)),
        }
    }
}

impl Segments {
    pub(crate) fn prepare_extra(&self, segment: &SegmentReader) -> tantivy::Result<()> {
        let data = Arc::new(SegmentData::build(segment, &self.fields)?);
        self.extra.write().unwrap_or_else(|e| e.into_inner()).insert(segment.segment_id(), data);
        Ok(())
    }

    pub(crate) fn forget_extra(&self, segment: &SegmentReader) {
        self.extra.write().unwrap_or_else(|e| e.into_inner()).remove(&segment.segment_id());
    }
}

impl Warmer for Segments {
    fn warm(&self, searcher: &Searcher) -> tantivy::Result<()> {
        for segment in searcher.segment_readers() {
            let known =
                self.map.read().unwrap_or_else(|e| e.into_inner()).contains_key(&segment.segment_id());
            if !known {
                let data = Arc::new(SegmentData::build(segment, &self.fields)?);
                self.map.write().unwrap_or_else(|e| e.into_inner()).insert(segment.segment_id(), data);
            }
        }
        Ok(())
    }

    fn garbage_collect(&self, live_generations: &[&SearcherGeneration]) {
        let live: HashSet<SegmentId> =
            live_generations.iter().flat_map(|g| g.segments().keys().copied()).collect();
        self.map.write().unwrap_or_else(|e| e.into_inner()).retain(|id, _| live.contains(id));
    }
}
