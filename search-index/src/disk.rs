//! The on-disk side: directory lock, opening or recreating each tantivy index, the commit
//! payload (schema version + applied change-log seq), and merge control.
//!
//! Layout under the directory given to `open`:
//! - `.agentdir-search.lock` — held for the life of the `SearchIndex`. It is taken before
//!   anything is inspected, so a second process fails with `Locked` instead of wiping an index
//!   that the first one is writing.
//! - `agents/`, `calls/` — one tantivy index each.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use tantivy::directory::error::LockError;
use tantivy::directory::{DirectoryLock, Lock, MmapDirectory};
use tantivy::indexer::IndexWriterOptions;
use tantivy::merge_policy::{LogMergePolicy, NoMergePolicy};
use tantivy::schema::Schema;
use tantivy::tokenizer::WhitespaceTokenizer;
use tantivy::{Directory, Index, IndexReader, IndexWriter, ReloadPolicy, TantivyError, Warmer};
use tantivy_jieba::jieba_rs::Jieba;

use crate::IndexError;
use crate::analysis::{TEXT_TOKENIZER, jieba};
use crate::part::Part;
use crate::schema::{AgentFields, CallFields, SCHEMA_VERSION};
use crate::warm::{Fields, Segments};

const LOCK_FILE: &str = ".agentdir-search.lock";

/// Indexing memory for each index's single worker thread: 80 MB in all. One worker, not two:
/// every commit stops and restarts the workers, and on a busy two-core machine each extra thread
/// hand-off adds scheduling delay (measured: one-document upsert p50 114 ms with two workers vs
/// 34 ms with one, under a load average of 6). In a rebuild the caller analyses the text (jieba)
/// on one core while the worker writes postings on the other.
const AGENTS_BUDGET_PER_THREAD: usize = 32_000_000;
const CALLS_BUDGET_PER_THREAD: usize = 48_000_000;
const WORKER_THREADS: usize = 1;

pub(crate) struct Opened {
    pub agents: (Part, IndexWriter),
    pub calls: (Part, IndexWriter),
    pub agent_fields: AgentFields,
    pub call_fields: CallFields,
    pub jieba: Arc<Jieba>,
    pub needs_rebuild: bool,
    pub applied_seq: u64,
    pub lock: DirectoryLock,
}

/// What each commit records. A batch that touches only one index commits only that one (a
/// commit costs milliseconds of fsync and CPU), so the two indexes' `seq`s drift apart; the
/// later one is the true high-water mark unless its last batch also had to reach the other
/// index and a crash stopped it there. `partner` says exactly that: the seq the other index must
/// have reached for this `seq` to hold (0 when the batch did not touch the other index).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Payload {
    pub schema: u32,
    pub seq: u64,
    #[serde(default)]
    pub partner: u64,
}

/// The seq up to which both indexes have applied every change. Only the last batch can be half
/// committed (batches are applied one at a time), so this is exact, and never too high.
pub(crate) fn applied_seq(a: Payload, b: Payload) -> u64 {
    let (hi, lo) = if a.seq >= b.seq { (a, b) } else { (b, a) };
    if hi.partner <= lo.seq { hi.seq } else { lo.seq }
}

pub(crate) fn open(dir: &Path) -> Result<Opened, IndexError> {
    fs::create_dir_all(dir)?;
    let top = MmapDirectory::open(dir).map_err(|e| IndexError::Engine(e.into()))?;
    let lock =
        top.acquire_lock(&Lock { filepath: PathBuf::from(LOCK_FILE), is_blocking: false }).map_err(|e| {
            match e {
                LockError::LockBusy => IndexError::Locked,
                LockError::IoError(io) => IndexError::Io(std::io::Error::new(io.kind(), io.to_string())),
            }
        })?;

    // Loads the dictionaries now rather than on the first query.
    let jieba = jieba();
    let _ = super::analysis::simplified("");
    let (agent_schema, agent_fields) = AgentFields::build();
    let (call_schema, call_fields) = CallFields::build();
    let (agents, agents_seq) = open_part(
        &dir.join("agents"),
        &agent_schema,
        Fields {
            counted: agent_fields.counted().to_vec(),
            scored: agent_fields.text_fields().map(|f| f.0).to_vec(),
        },
        AGENTS_BUDGET_PER_THREAD,
    )?;
    let (calls, calls_seq) = open_part(
        &dir.join("calls"),
        &call_schema,
        Fields {
            counted: call_fields.counted().to_vec(),
            scored: call_fields.text_fields().map(|f| f.0).to_vec(),
        },
        CALLS_BUDGET_PER_THREAD,
    )?;
    let (needs_rebuild, applied_seq) = match (agents_seq, calls_seq) {
        (Some(a), Some(c)) => (false, applied_seq(a, c)),
        _ => (true, 0),
    };
    Ok(Opened { agents, calls, agent_fields, call_fields, jieba, needs_rebuild, applied_seq, lock })
}

/// `None` for the payload means the part was (re)created empty.
fn open_part(
    path: &Path,
    schema: &Schema,
    fields: Fields,
    budget: usize,
) -> Result<((Part, IndexWriter), Option<Payload>), IndexError> {
    let segments = Arc::new(Segments::new(fields));
    fs::create_dir_all(path)?;
    if path.join("meta.json").exists() {
        // A damaged file must not be able to take the server down at start: a panic inside
        // tantivy while reading it is treated like any other unreadable index.
        let attempt = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            open_existing(path, schema, budget, &segments)
        }))
        .unwrap_or_else(|_| Err(Unusable::Reason("panicked while opening".into())));
        match attempt {
            Ok((part, writer, payload)) => return Ok(((part, writer), Some(payload))),
            Err(Unusable::Locked) => return Err(IndexError::Locked),
            Err(Unusable::Reason(reason)) => {
                tracing::warn!(path = %path.display(), %reason,
                    "search index unusable; recreating it empty");
            }
        }
    }
    fs::remove_dir_all(path)?;
    fs::create_dir_all(path)?;
    let index = Index::builder().schema(schema.clone()).create_in_dir(path)?;
    let mut writer = prepare(&index, budget)?;
    commit(&mut writer, 0, 0)?;
    let reader = reader(&index, &segments)?;
    Ok(((Part::new(reader, segments)?, writer), None))
}

enum Unusable {
    Locked,
    Reason(String),
}

impl From<TantivyError> for Unusable {
    fn from(e: TantivyError) -> Self {
        match e {
            TantivyError::LockFailure(LockError::LockBusy, _) => Unusable::Locked,
            other => Unusable::Reason(other.to_string()),
        }
    }
}

fn open_existing(
    path: &Path,
    schema: &Schema,
    budget: usize,
    segments: &Arc<Segments>,
) -> Result<(Part, IndexWriter, Payload), Unusable> {
    let index = Index::open_in_dir(path)?;
    if index.schema() != *schema {
        return Err(Unusable::Reason("schema differs".into()));
    }
    let meta = index.load_metas()?;
    let payload: Payload = meta
        .payload
        .as_deref()
        .and_then(|p| serde_json::from_str(p).ok())
        .ok_or_else(|| Unusable::Reason("no readable commit payload".into()))?;
    if payload.schema != SCHEMA_VERSION {
        return Err(Unusable::Reason(format!(
            "schema version {} (expected {SCHEMA_VERSION})",
            payload.schema
        )));
    }
    // Reads every live file once (page cache speed); catches a torn or bit-flipped segment now
    // instead of as a failing or wrong query later.
    let damaged = index.validate_checksum()?;
    if !damaged.is_empty() {
        return Err(Unusable::Reason(format!("{} damaged file(s)", damaged.len())));
    }
    let writer = prepare(&index, budget)?;
    let reader = reader(&index, segments)?;
    Ok((Part::new(reader, segments.clone())?, writer, payload))
}

fn prepare(index: &Index, budget: usize) -> Result<IndexWriter, TantivyError> {
    index.tokenizers().register(TEXT_TOKENIZER, WhitespaceTokenizer::default());
    let options = IndexWriterOptions::builder()
        .memory_budget_per_thread(budget)
        .num_worker_threads(WORKER_THREADS)
        .num_merge_threads(1)
        .build();
    index.writer_with_options(options)
}

fn reader(index: &Index, segments: &Arc<Segments>) -> Result<IndexReader, TantivyError> {
    let warmer: Arc<dyn Warmer> = segments.clone();
    index
        .reader_builder()
        .reload_policy(ReloadPolicy::Manual)
        .warmers(vec![Arc::downgrade(&warmer)])
        .try_into()
}

/// Commits with `seq` in the payload; `partner` as described on [`Payload`].
pub(crate) fn commit(writer: &mut IndexWriter, seq: u64, partner: u64) -> Result<(), TantivyError> {
    let payload = Payload { schema: SCHEMA_VERSION, seq, partner };
    let payload = serde_json::to_string(&payload).map_err(|e| TantivyError::InternalError(e.to_string()))?;
    let mut prepared = writer.prepare_commit()?;
    prepared.set_payload(&payload);
    prepared.commit()?;
    Ok(())
}

pub(crate) fn pause_merges(writer: &IndexWriter) {
    writer.set_merge_policy(Box::new(NoMergePolicy));
}

pub(crate) fn resume_merges(writer: &IndexWriter) {
    writer.set_merge_policy(Box::new(LogMergePolicy::default()));
}

/// Merges every searchable segment into one; logs and carries on if that fails.
pub(crate) fn merge_all(writer: &mut IndexWriter) {
    let ids = match writer.index().searchable_segment_ids() {
        Ok(ids) => ids,
        Err(e) => {
            tracing::warn!(error = %e, "search index: listing segments failed");
            return;
        }
    };
    if ids.len() > 1
        && let Err(e) = writer.merge(&ids).wait()
    {
        tracing::warn!(error = %e, "search index: merging segments failed");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(seq: u64, partner: u64) -> Payload {
        Payload { schema: SCHEMA_VERSION, seq, partner }
    }

    #[test]
    fn applied_seq_trusts_the_later_index_only_when_its_batch_is_complete() {
        // Both committed the same batch.
        assert_eq!(applied_seq(p(7, 7), p(7, 7)), 7);
        // The later batches touched only one index.
        assert_eq!(applied_seq(p(9, 0), p(7, 7)), 9);
        assert_eq!(applied_seq(p(3, 3), p(12, 0)), 12);
        // Batch 9 touched both; a crash let only one side commit it.
        assert_eq!(applied_seq(p(9, 9), p(7, 0)), 7);
        assert_eq!(applied_seq(p(5, 0), p(9, 9)), 5);
        // A fresh index.
        assert_eq!(applied_seq(p(0, 0), p(0, 0)), 0);
    }
}
