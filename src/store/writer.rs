//! The one writer. A dedicated thread owns the server's only write connection; services hand it
//! write jobs and await their answers.
//!
//! How a write travels:
//! 1. The service does everything that needs no lock first (validation, hashing, link fetches)
//!    and then queues a job: a closure over the connection, the body of what used to be its own
//!    transaction.
//! 2. The writer thread takes every job waiting in the queue (up to [`MAX_BATCH`]) as one batch,
//!    opens one `BEGIN IMMEDIATE` transaction and runs each job inside its own `SAVEPOINT`: a job
//!    that fails is rolled back to its savepoint alone and keeps its own error, the others go on.
//! 3. One `COMMIT` makes the whole batch durable: with `synchronous = FULL` in WAL mode that is
//!    one fsync of the WAL for the batch, not one per write, so durability costs no throughput.
//! 4. The triggers of the batch appended their change-log rows inside the same transaction.
//!    Right after the commit, still on the writer thread, the `on_commit` hook evicts the
//!    rendered views those rows name (one indexed read of the log and a few map removals).
//! 5. Then every job of the batch is answered.
//! 6. The search index follows on a second thread, the applier (`after_commit`), off the
//!    answer's path. Building an index segment has a fixed cost of milliseconds however few
//!    documents it holds, so the applier applies everything committed since its last pass in
//!    one segment and spaces its passes by at least [`APPLY_SPACING`] under load: the cost per
//!    write falls as the load rises. A search that starts before the applier got there applies
//!    what is missing itself (`App::catch_up`), so once a write is answered every read
//!    sees it, searches included (read-your-writes): the index knows its position, and a read
//!    waits for the index to reach the newest commit.
//!
//! Reads never wait for this thread: they use read-only connections of their own, and WAL lets
//! them read the last committed state while a batch is being written. Other processes
//! (`inbound-mail`, `admin`) write through their own connections; SQLite's lock serialises them
//! with the batches, and the followers pick their changes up from the same log.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rusqlite::Connection;
use tokio::sync::oneshot;

use super::positions::ChangeSeq;
use crate::error::{Error, Result};

/// Most jobs in one transaction: bounds how long the first job of a batch waits for the last.
pub const MAX_BATCH: usize = 512;

/// Least time between the starts of two passes of the applier. An idle server applies a write
/// at once; under load a pass covers every commit of the last [`APPLY_SPACING`], so the search
/// index builds a few segments a second instead of one per batch.
pub const APPLY_SPACING: Duration = Duration::from_millis(50);

/// What to answer once the batch of a job that ran is settled: the commit's seq, or why the
/// batch as a whole failed.
type Reply = Box<dyn FnOnce(Result<ChangeSeq>) + Send>;

/// A queued write: run inside a savepoint (telling whether it failed), or refused unrun.
trait Job: Send {
    fn run(self: Box<Self>, conn: &Connection) -> (bool, Reply);
    fn refuse(self: Box<Self>, e: Error);
}

struct Typed<T, F> {
    f: F,
    answer: oneshot::Sender<Result<T>>,
}

impl<T, F> Job for Typed<T, F>
where
    T: Send + 'static,
    F: FnOnce(&Connection) -> Result<T> + Send,
{
    fn run(self: Box<Self>, conn: &Connection) -> (bool, Reply) {
        let Typed { f, answer } = *self;
        let out = catch_unwind(AssertUnwindSafe(|| f(conn))).unwrap_or_else(|_| {
            tracing::error!("a write job panicked");
            Err(Error::Internal)
        });
        let failed = out.is_err();
        let reply: Reply = Box::new(move |batch: Result<ChangeSeq>| {
            let _ = answer.send(batch.and(out));
        });
        (failed, reply)
    }

    fn refuse(self: Box<Self>, e: Error) {
        let _ = self.answer.send(Err(e));
    }
}

/// Called on the writer thread after each commit, before the batch is answered, with the
/// connection and the batch's newest change-log seq (the rendered views are evicted there).
pub type OnCommit = Box<dyn Fn(&Connection, ChangeSeq) + Send>;

/// Called on the applier thread after commits, with the newest change-log seq (the search
/// index follows there).
pub type AfterCommit = Box<dyn Fn(ChangeSeq) + Send>;

/// A handle to the writer thread. Dropping every handle stops the thread after the jobs already
/// queued are done.
pub struct Writer {
    queue: Option<mpsc::Sender<Box<dyn Job>>>,
    thread: Option<JoinHandle<()>>,
    applier: Option<JoinHandle<()>>,
}

impl Writer {
    /// Starts the writer thread over `conn`, which must be a read-write connection.
    pub fn start(
        conn: Connection,
        on_commit: OnCommit,
        after_commit: AfterCommit,
    ) -> std::io::Result<Writer> {
        let (tx, rx) = mpsc::channel::<Box<dyn Job>>();
        let (committed_tx, committed_rx) = mpsc::channel::<ChangeSeq>();
        let applier = std::thread::Builder::new()
            .name("agentdir-applier".into())
            .spawn(move || apply(committed_rx, after_commit))?;
        let committed = Committed { on_commit, applier: committed_tx };
        let thread = std::thread::Builder::new()
            .name("agentdir-writer".into())
            .spawn(move || run(conn, rx, committed))?;
        Ok(Writer { queue: Some(tx), thread: Some(thread), applier: Some(applier) })
    }

    /// A writer that refuses every job (its thread could not be started).
    pub fn stopped() -> Writer {
        Writer { queue: None, thread: None, applier: None }
    }

    fn queue<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Connection) -> Result<T> + Send + 'static,
    ) -> Result<oneshot::Receiver<Result<T>>> {
        let (answer, rx) = oneshot::channel();
        let queue = self.queue.as_ref().ok_or(Error::Overloaded)?;
        queue.send(Box::new(Typed { f, answer })).map_err(|_| {
            tracing::error!("the writer thread is gone");
            Error::Internal
        })?;
        Ok(rx)
    }

    /// Runs `f` in the next batch and returns its value once the batch is committed and the
    /// views it changed are evicted.
    pub async fn write<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Connection) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        self.queue(f)?.await.map_err(|_| Error::Internal)?
    }

    /// `write` for callers on a blocking thread (never the writer thread itself).
    pub fn write_blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Connection) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        self.queue(f)?.blocking_recv().map_err(|_| Error::Internal)?
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        drop(self.queue.take());
        // The writer ends once the queue is gone, and the applier once the writer is gone. The
        // last owner may be a hook on the writer or the applier thread: it cannot wait for
        // itself.
        for thread in [self.thread.take(), self.applier.take()].into_iter().flatten() {
            if thread.thread().id() != std::thread::current().id() {
                let _ = thread.join();
            }
        }
    }
}

/// What the writer does with a commit: its hook, then a word to the applier.
struct Committed {
    on_commit: OnCommit,
    applier: mpsc::Sender<ChangeSeq>,
}

fn run(mut conn: Connection, rx: mpsc::Receiver<Box<dyn Job>>, committed: Committed) {
    while let Ok(first) = rx.recv() {
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(job) => batch.push(job),
                Err(_) => break,
            }
        }
        let started = Instant::now();
        let size = batch.len();
        run_batch(&mut conn, batch, &committed);
        metrics::histogram!(crate::telemetry::WRITE_BATCH_SIZE).record(size as f64);
        metrics::histogram!(crate::telemetry::WRITE_BATCH_SECONDS).record(started.elapsed().as_secs_f64());
    }
    tracing::debug!("writer thread stopped");
}

/// The applier: follows everything committed so far, at most once per [`APPLY_SPACING`].
fn apply(rx: mpsc::Receiver<ChangeSeq>, after_commit: AfterCommit) {
    while let Ok(first) = rx.recv() {
        let started = Instant::now();
        let newest = rx.try_iter().fold(first, ChangeSeq::max);
        after_commit(newest);
        if let Some(rest) = APPLY_SPACING.checked_sub(started.elapsed()) {
            std::thread::sleep(rest);
        }
    }
    tracing::debug!("applier thread stopped");
}

/// Runs one batch in one transaction and answers every job. A job's own failure only rolls
/// back its savepoint; a failure of the transaction itself (the lock, a savepoint, the commit)
/// answers every job with that error.
fn run_batch(conn: &mut Connection, batch: Vec<Box<dyn Job>>, committed: &Committed) {
    if let Err(e) = begin(conn) {
        for job in batch {
            job.refuse(e.clone());
        }
        return;
    }
    let mut replies: Vec<Reply> = Vec::with_capacity(batch.len());
    let mut jobs = batch.into_iter();
    let failure = loop {
        let Some(job) = jobs.next() else { break None };
        if let Err(e) = conn.execute_batch("SAVEPOINT job") {
            job.refuse(e.into());
            break Some(Error::Internal);
        }
        let (failed, reply) = job.run(conn);
        replies.push(reply);
        let settled = if failed {
            conn.execute_batch("ROLLBACK TO job; RELEASE job")
        } else {
            conn.execute_batch("RELEASE job")
        };
        if let Err(e) = settled {
            break Some(e.into());
        }
    };
    let outcome = match failure {
        Some(e) => Err(e),
        None => crate::store::changes::max_seq(conn)
            .and_then(|seq| conn.execute_batch("COMMIT").map(|()| seq).map_err(Error::from)),
    };
    match outcome {
        Ok(seq) => {
            (committed.on_commit)(conn, seq);
            for reply in replies {
                reply(Ok(seq));
            }
            if committed.applier.send(seq).is_err() {
                // No applier (it panicked): searches and the background pass still follow.
                tracing::error!("the applier thread is gone");
            }
        }
        Err(e) => {
            if let Err(rollback) = conn.execute_batch("ROLLBACK") {
                tracing::error!(error = %rollback, "rolling back a failed batch failed");
            }
            for reply in replies {
                reply(Err(e.clone()));
            }
            for job in jobs {
                job.refuse(e.clone());
            }
        }
    }
}

/// `BEGIN IMMEDIATE`. When another process holds the write lock, the connection's busy timeout
/// waits for it; past that the batch is answered `overloaded`.
fn begin(conn: &Connection) -> Result<()> {
    Ok(conn.execute_batch("BEGIN IMMEDIATE")?)
}
