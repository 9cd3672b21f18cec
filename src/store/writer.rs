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
//! 4. The triggers of the batch appended their change-log rows inside the same transaction; the
//!    `after_commit` hook (the followers: search index, read caches) applies them before
//!    anybody is answered. It runs on a second thread, the applier, so that the writer commits
//!    the next batch while the applier applies the last one (the two take about the same time,
//!    on two cores). When the applier falls behind it applies every batch committed meanwhile
//!    in one go (one in-memory segment of the search index's overlay for all of them, see
//!    `search-index/src/overlay.rs`), so its cost per write falls as the load rises.
//! 5. Only then is every job of the batch answered, so once a write is answered every read sees
//!    it (read-your-writes).
//!
//! Reads never wait for this thread: they use read-only connections of their own, and WAL lets
//! them read the last committed state while a batch is being written. Other processes
//! (`inbound-mail`, `admin`) write through their own connections; SQLite's lock serialises them
//! with the batches, and the followers pick their changes up from the same log.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Instant;

use rusqlite::Connection;
use tokio::sync::oneshot;

use crate::error::{Error, Result};

/// Most jobs in one transaction: bounds how long the first job of a batch waits for the last.
pub const MAX_BATCH: usize = 512;

/// What to answer once the batch of a job that ran is settled: the commit's seq, or why the
/// batch as a whole failed.
type Reply = Box<dyn FnOnce(Result<u64>) + Send>;

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
        let reply: Reply = Box::new(move |batch: Result<u64>| {
            let _ = answer.send(batch.and(out));
        });
        (failed, reply)
    }

    fn refuse(self: Box<Self>, e: Error) {
        let _ = self.answer.send(Err(e));
    }
}

/// Called on the applier thread after commits, with the newest change-log seq; the followers
/// apply the batches there, before any of their jobs is answered.
pub type AfterCommit = Box<dyn Fn(u64) + Send>;

/// A handle to the writer thread. Dropping every handle stops the thread after the jobs already
/// queued are done.
pub struct Writer {
    queue: Option<mpsc::Sender<Box<dyn Job>>>,
    thread: Option<JoinHandle<()>>,
    applier: Option<JoinHandle<()>>,
}

/// A committed batch waiting for the applier: its seq and the answers to give once applied.
type Committed = (u64, Vec<Reply>);

impl Writer {
    /// Starts the writer thread over `conn`, which must be a read-write connection.
    pub fn start(conn: Connection, after_commit: AfterCommit) -> std::io::Result<Writer> {
        let (tx, rx) = mpsc::channel::<Box<dyn Job>>();
        let (committed_tx, committed_rx) = mpsc::channel::<Committed>();
        let applier = std::thread::Builder::new()
            .name("agentdir-applier".into())
            .spawn(move || apply(committed_rx, after_commit))?;
        let thread = std::thread::Builder::new()
            .name("agentdir-writer".into())
            .spawn(move || run(conn, rx, committed_tx))?;
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
    /// followers have applied it.
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
        // last owner may be a job's own reply on the applier thread: it cannot wait for itself.
        for thread in [self.thread.take(), self.applier.take()].into_iter().flatten() {
            if thread.thread().id() != std::thread::current().id() {
                let _ = thread.join();
            }
        }
    }
}

fn run(mut conn: Connection, rx: mpsc::Receiver<Box<dyn Job>>, applier: mpsc::Sender<Committed>) {
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
        run_batch(&mut conn, batch, &applier);
        metrics::histogram!(crate::telemetry::WRITE_BATCH_SIZE).record(size as f64);
        metrics::histogram!(crate::telemetry::WRITE_BATCH_SECONDS).record(started.elapsed().as_secs_f64());
    }
    tracing::debug!("writer thread stopped");
}

/// The applier: runs the followers over everything committed so far, then answers every batch
/// it covered.
fn apply(rx: mpsc::Receiver<Committed>, after_commit: AfterCommit) {
    while let Ok(first) = rx.recv() {
        let mut committed = vec![first];
        committed.extend(rx.try_iter());
        let newest = committed.iter().map(|(seq, _)| *seq).max().unwrap_or_default();
        after_commit(newest);
        for (seq, replies) in committed {
            for reply in replies {
                reply(Ok(seq));
            }
        }
    }
    tracing::debug!("applier thread stopped");
}

/// Runs one batch in one transaction and answers every job. A job's own failure only rolls
/// back its savepoint; a failure of the transaction itself (the lock, a savepoint, the commit)
/// answers every job with that error.
fn run_batch(conn: &mut Connection, batch: Vec<Box<dyn Job>>, applier: &mpsc::Sender<Committed>) {
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
    let committed = match failure {
        Some(e) => Err(e),
        None => crate::store::changes::max_seq(conn)
            .and_then(|seq| conn.execute_batch("COMMIT").map(|()| seq).map_err(Error::from)),
    };
    match committed {
        Ok(seq) => {
            if let Err(mpsc::SendError((seq, replies))) = applier.send((seq, replies)) {
                // No applier (it panicked): the write is committed; the background pass brings
                // the followers up to date.
                tracing::error!("the applier thread is gone");
                for reply in replies {
                    reply(Ok(seq));
                }
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
