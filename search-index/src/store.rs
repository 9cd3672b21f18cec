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
use tantivy::{Directory, Index, IndexReader, IndexWriter, ReloadPolicy, TantivyError};
use tantivy_jieba::jieba_rs::Jieba;

use crate::IndexError;
use crate::analysis::{TEXT_TOKENIZER, index_analyzer, jieba};
use crate::schema::{AgentFields, CallFields, SCHEMA_VERSION};

const LOCK_FILE: &str = ".agentdir-search.lock";

/// Indexing memory per worker thread; with two workers per index the total is 80 MB. Two
/// workers because a rebuild is CPU-bound (jieba) and the machine has two cores.
const AGENTS_BUDGET_PER_THREAD: usize = 16_000_000;
const CALLS_BUDGET_PER_THREAD: usize = 24_000_000;
const WORKER_THREADS: usize = 2;

pub(crate) struct Part {
    pub reader: IndexReader,
}

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

#[derive(Serialize, Deserialize)]
struct Payload {
    schema: u32,
    seq: u64,
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

    // Loads the dictionary now rather than on the first query.
    let jieba = jieba();
    let (agent_schema, agent_fields) = AgentFields::build();
    let (call_schema, call_fields) = CallFields::build();
    let (agents, agents_seq) =
        open_part(&dir.join("agents"), &agent_schema, &jieba, AGENTS_BUDGET_PER_THREAD)?;
    let (calls, calls_seq) = open_part(&dir.join("calls"), &call_schema, &jieba, CALLS_BUDGET_PER_THREAD)?;
    let (needs_rebuild, applied_seq) = match (agents_seq, calls_seq) {
        // Both commit with the same seq; if a crash split them, the lower one is what both have.
        (Some(a), Some(c)) => (false, a.min(c)),
        _ => (true, 0),
    };
    Ok(Opened { agents, calls, agent_fields, call_fields, jieba, needs_rebuild, applied_seq, lock })
}

/// `None` for the seq means the part was (re)created empty.
fn open_part(
    path: &Path,
    schema: &Schema,
    jieba: &Arc<Jieba>,
    budget: usize,
) -> Result<((Part, IndexWriter), Option<u64>), IndexError> {
    fs::create_dir_all(path)?;
    if path.join("meta.json").exists() {
        match open_existing(path, schema, jieba, budget) {
            Ok((part, writer, seq)) => return Ok(((part, writer), Some(seq))),
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
    let mut writer = prepare(&index, jieba, budget)?;
    commit(&mut writer, 0)?;
    let reader = reader(&index)?;
    Ok(((Part { reader }, writer), None))
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
    jieba: &Arc<Jieba>,
    budget: usize,
) -> Result<(Part, IndexWriter, u64), Unusable> {
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
    let writer = prepare(&index, jieba, budget)?;
    let reader = reader(&index)?;
    Ok((Part { reader }, writer, payload.seq))
}

fn prepare(index: &Index, jieba: &Arc<Jieba>, budget: usize) -> Result<IndexWriter, TantivyError> {
    index.tokenizers().register(TEXT_TOKENIZER, index_analyzer(jieba.clone()));
    let options = IndexWriterOptions::builder()
        .memory_budget_per_thread(budget)
        .num_worker_threads(WORKER_THREADS)
        .num_merge_threads(1)
        .build();
    index.writer_with_options(options)
}

fn reader(index: &Index) -> Result<IndexReader, TantivyError> {
    index.reader_builder().reload_policy(ReloadPolicy::Manual).try_into()
}

pub(crate) fn commit(writer: &mut IndexWriter, seq: u64) -> Result<(), TantivyError> {
    let payload = Payload { schema: SCHEMA_VERSION, seq };
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
