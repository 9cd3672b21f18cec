//! Online backups: a consistent copy of the live database, taken with SQLite's backup API while
//! the server keeps writing, and checked before it is called a backup. The copy holds what the
//! database holds (mailboxes, key hashes): it is made with the database's mode and group.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rusqlite::Connection;
use rusqlite::backup::{Backup, StepResult};

use crate::error::{Error, Result};
use crate::progress::Progress;

/// How long to retry while another connection holds a lock the copy needs.
const BUSY_WAIT: Duration = Duration::from_secs(30);
/// Pages copied between two progress reports (1 MiB at SQLite's default page size).
const PAGES_PER_STEP: i32 = 256;

/// Copies the database behind `src` to `dest`. The copy is written beside `dest` and renamed
/// into place only once complete and checked, so `dest` never holds half a backup. It is
/// created [`super::DB_FILE_MODE`] with the group of the source's data dir before anything is
/// written to it (its journal follows its mode).
pub fn copy_to(src: &Connection, dest: &Path, progress: &mut Progress) -> Result<()> {
    let partial = partial_path(dest);
    let _ = std::fs::remove_file(&partial);
    let result =
        create_copy(src, &partial).and_then(|()| copy_checked(src, &partial, progress)).and_then(|()| {
            std::fs::rename(&partial, dest).map_err(|e| {
                tracing::error!(error = %e, dest = %dest.display(), "cannot move the backup into place");
                Error::Internal
            })
        });
    if result.is_err() {
        let _ = std::fs::remove_file(&partial);
    }
    result
}

/// Creates the empty file of the copy, private to its owner and the source's data dir's group.
fn create_copy(src: &Connection, partial: &Path) -> Result<()> {
    // An in-memory source has no data dir: the copy then keeps the group it is created with.
    let gid = src
        .path()
        .map(Path::new)
        .and_then(Path::parent)
        .filter(|dir| !dir.as_os_str().is_empty())
        .and_then(|dir| super::group_of(dir).ok());
    super::create_private(partial, gid).map_err(|e| {
        tracing::error!(error = %e, file = %partial.display(), "cannot create the backup file");
        Error::Internal
    })
}

fn partial_path(dest: &Path) -> PathBuf {
    let mut name = dest.file_name().map(|n| n.to_os_string()).unwrap_or_default();
    name.push(".partial");
    dest.with_file_name(name)
}

fn copy_checked(src: &Connection, partial: &Path, progress: &mut Progress) -> Result<()> {
    let mut out = Connection::open(partial)?;
    {
        // One read transaction around every step: under WAL each step then copies the same
        // snapshot while writers go on. Without it each step would read afresh, and a copy made
        // step by step restarts whenever another connection writes: it might never finish on a
        // busy server. Reading the page count opens that transaction.
        let snapshot = src.unchecked_transaction()?;
        let page_size: i64 = snapshot.query_row("PRAGMA page_size", [], |r| r.get(0))?;
        let pages: i64 = snapshot.query_row("PRAGMA page_count", [], |r| r.get(0))?;
        let bytes = |pages: i64| u64::try_from(pages * page_size).unwrap_or(0);
        progress.start(bytes(pages));
        let backup = Backup::new(&snapshot, &mut out)?;
        let deadline = Instant::now() + BUSY_WAIT;
        loop {
            match backup.step(PAGES_PER_STEP)? {
                StepResult::Done => break,
                StepResult::More => {
                    let p = backup.progress();
                    progress.set(bytes(i64::from(p.pagecount - p.remaining)));
                }
                _ if Instant::now() >= deadline => {
                    tracing::error!("the database stayed locked; backup abandoned");
                    return Err(Error::Overloaded);
                }
                _ => std::thread::sleep(Duration::from_millis(50)),
            }
        }
        progress.finish();
    }
    let verdict: String = out.query_row("PRAGMA quick_check", [], |r| r.get(0))?;
    if verdict != "ok" {
        tracing::error!(%verdict, "the backup copy failed its integrity check");
        return Err(Error::Internal);
    }
    // A feed of its own: a server restored from the copy lacks what was written after it, and
    // a reader holding a cursor of those writes must be told to read again (410), not skip
    // what the restored server writes under the same seqs.
    super::changes::draw_new_epoch(&out)?;
    // Leave one self-contained file: no -wal beside it to lose on the way to the backup store.
    out.execute_batch("PRAGMA journal_mode = DELETE")?;
    out.close().map_err(|(_, e)| Error::from(e))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

    use super::*;

    /// A copy of many steps while another connection keeps writing: it finishes (no restart per
    /// write) and holds one snapshot (each write adds a row to both tables, so they stay equal).
    #[test]
    fn a_copy_in_steps_is_one_snapshot_while_another_connection_writes() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("source.sqlite3");
        let src = Connection::open(&path).expect("open");
        src.execute_batch(
            "PRAGMA journal_mode = WAL; CREATE TABLE a (x BLOB); CREATE TABLE b (x BLOB);
             CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
             WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 256)
             INSERT INTO a SELECT randomblob(16384) FROM n;
             INSERT INTO b SELECT randomblob(16384) FROM a;",
        )
        .expect("fill");
        let pages: i32 = src.query_row("PRAGMA page_count", [], |r| r.get(0)).expect("pages");
        assert!(pages > 8 * PAGES_PER_STEP, "the copy should take many steps ({pages} pages)");

        // A copy that restarted at every write would only finish once the writer gave up.
        const WRITES: u64 = 20_000;
        let stop = Arc::new(AtomicBool::new(false));
        let written = Arc::new(AtomicU64::new(0));
        let writer = {
            let (stop, written, path) = (stop.clone(), written.clone(), path.clone());
            std::thread::spawn(move || {
                let conn = Connection::open(path).expect("open");
                conn.busy_timeout(Duration::from_secs(5)).expect("busy timeout");
                // Commits without waiting for the disk: a write lands between any two steps.
                conn.execute_batch("PRAGMA synchronous = OFF").expect("synchronous");
                while !stop.load(Ordering::Relaxed) && written.load(Ordering::Relaxed) < WRITES {
                    conn.execute_batch(
                        "BEGIN IMMEDIATE; INSERT INTO a VALUES (randomblob(16));
                         INSERT INTO b VALUES (randomblob(16)); COMMIT;",
                    )
                    .expect("write");
                    written.fetch_add(1, Ordering::Relaxed);
                }
            })
        };
        while written.load(Ordering::Relaxed) == 0 {
            std::thread::yield_now();
        }
        let dest = dir.path().join("copy.sqlite3");
        let before = written.load(Ordering::Relaxed);
        copy_to(&src, &dest, &mut Progress::silent()).expect("copy");
        let during = written.load(Ordering::Relaxed);
        stop.store(true, Ordering::Relaxed);
        writer.join().expect("writer");

        let copy = Connection::open(&dest).expect("open the copy");
        let count = |table: &str| -> u64 {
            let n: i64 =
                copy.query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get(0)).expect("count");
            u64::try_from(n).expect("count")
        };
        assert_eq!(count("a"), count("b"), "the copy mixes two moments");
        assert!(during < WRITES, "the copy finished only once the writes stopped");
        // The copy shows the moment it began (give or take the writes of its first instants),
        // not a later one it restarted from.
        let copied = count("a").checked_sub(256).expect("the copy lost rows");
        assert!(copied >= before, "the copy lost rows");
        assert!(copied - before <= (during - before) / 2, "{copied} writes copied, {before} before the copy");
    }
}
