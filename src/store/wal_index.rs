//! Whether anyone committed to the database since a given moment, read from the header of
//! SQLite's WAL-index: the `-shm` file beside the database that every connection to it maps
//! (sqlite.org/walformat.html, "The WAL-Index Header"). A look is two reads of shared memory, with
//! no lock and no system call, where asking SQLite (`PRAGMA data_version`) opens a read
//! transaction: a mutex around the one connection that asks, SQLite's own shared-memory mutex
//! and two `fcntl` locks, on every cached read. The cache and the index still ask SQLite when
//! this says something changed (see `app::followers`).
//!
//! Why it is exact: every commit, by any process, appends at least its commit frame to the WAL
//! and rewrites the header before `COMMIT` returns, so `mxFrame` grows; when a writer starts the
//! WAL over, `aSalt[0]` grows by one and `mxFrame` starts from 0. The pair never repeats. SQLite's
//! own readers decide whether anything changed by comparing the same header (`walIndexTryHdr`),
//! read the same way: copy 0, a barrier, copy 1, equal or not trusted (a writer writes copy 1
//! first, then copy 0).

use std::path::Path;
use std::sync::atomic::{AtomicU32, Ordering, fence};

use super::DB_FILE;

/// Two copies of the 48-byte header at the start of the file.
const HEADER_WORDS: usize = 12;
const MAPPED_BYTES: usize = 2 * HEADER_WORDS * 4;
/// Words of the header (native byte order): `isInit` is the first byte of word 3, `mxFrame` word
/// 4, `aSalt[0]` word 8.
const IS_INIT_WORD: usize = 3;
const MX_FRAME_WORD: usize = 4;
const SALT_WORD: usize = 8;

/// Where the log of commits stands: the WAL's salt and its last valid frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommitStamp(u64);

impl CommitStamp {
    /// The value that stands for no stamp where one is kept in an atomic.
    pub const NONE: u64 = u64::MAX;

    pub fn get(self) -> u64 {
        self.0
    }
}

/// A read-only map of the database's WAL-index header.
pub struct CommitWatch {
    map: memmap2::Mmap,
    /// Never closed while the watch lives: POSIX drops every `fcntl` lock a process holds on a
    /// file when the process closes any descriptor of it, so closing this one would take away
    /// the locks SQLite's connections of this process hold on the `-shm` (its "someone has it
    /// open" lock among them). Another process opening the database then takes itself for the
    /// first, truncates the file under this map (SIGBUS on the next look) and rebuilds the
    /// index under this process's connections.
    _file: std::fs::File,
}

impl CommitWatch {
    /// Maps the `-shm` file of the database in `data_dir`. `None` when there is none (another
    /// journal mode) or it is shorter than the header. Open it after a connection of this process
    /// has the database open in WAL mode: while one does, no other process may truncate the file
    /// (SQLite truncates it only when it is the first to open the database), so the map stays
    /// backed by the file.
    pub fn open(data_dir: &Path) -> Option<CommitWatch> {
        let path = data_dir.join(format!("{DB_FILE}-shm"));
        let file = std::fs::File::open(&path).ok()?;
        // Closing a descriptor of the file would drop this process's locks on it (see `_file`):
        // the one opened here stays open for the life of the process, watch or no watch.
        let Some(map) = Self::map(&file) else {
            std::mem::forget(file);
            return None;
        };
        let watch = CommitWatch { map, _file: file };
        if watch.now().is_none() {
            std::mem::forget(watch);
            return None;
        }
        Some(watch)
    }

    fn map(file: &std::fs::File) -> Option<memmap2::Mmap> {
        if file.metadata().ok()?.len() < MAPPED_BYTES as u64 {
            return None;
        }
        // SAFETY: the map is read only through atomic loads (other processes write the file
        // while it is mapped, which is its purpose), and the file keeps its length while this
        // process has the database open (see above).
        unsafe { memmap2::MmapOptions::new().len(MAPPED_BYTES).map(file) }.ok()
    }

    fn word(&self, i: usize) -> u32 {
        debug_assert!(i < 2 * HEADER_WORDS);
        // SAFETY: the map is page-aligned and `MAPPED_BYTES` long, so word `i` is in it and
        // aligned for an `AtomicU32`.
        let word = unsafe { AtomicU32::from_ptr(self.map.as_ptr().cast::<u32>().cast_mut().add(i)) };
        word.load(Ordering::Relaxed)
    }

    /// The stamp now, or `None` when a commit is rewriting the header at this instant (its two
    /// copies differ) or the header is not set up: then the caller asks SQLite.
    pub fn now(&self) -> Option<CommitStamp> {
        let mut first = [0u32; HEADER_WORDS];
        for (i, w) in first.iter_mut().enumerate() {
            *w = self.word(i);
        }
        fence(Ordering::SeqCst);
        let same = (0..HEADER_WORDS).all(|i| self.word(HEADER_WORDS + i) == first[i]);
        let initialised = first[IS_INIT_WORD].to_ne_bytes()[0] != 0;
        let stamp = u64::from(first[SALT_WORD]) << 32 | u64::from(first[MX_FRAME_WORD]);
        (same && initialised && stamp != CommitStamp::NONE).then_some(CommitStamp(stamp))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_commit_moves_the_stamp_and_nothing_else_does() {
        let dir = tempfile::tempdir().expect("temp dir");
        let db = dir.path().join(DB_FILE);
        let writer = rusqlite::Connection::open(&db).expect("opens");
        writer.execute_batch("PRAGMA journal_mode = WAL; CREATE TABLE t (x INTEGER);").expect("WAL");
        let watch = CommitWatch::open(dir.path()).expect("the -shm is mapped");
        let before = watch.now().expect("a stamp");
        let reader = rusqlite::Connection::open(&db).expect("opens");
        let count = |c: &rusqlite::Connection| -> i64 {
            c.query_row("SELECT count(*) FROM t", [], |r| r.get(0)).expect("reads")
        };
        assert_eq!(count(&reader), 0);
        assert_eq!(watch.now(), Some(before), "a read is no commit");
        // Another connection (as another process would) commits: the stamp moves, each time.
        writer.execute("INSERT INTO t VALUES (1)", []).expect("writes");
        let after_one = watch.now().expect("a stamp");
        assert_ne!(after_one, before);
        writer.execute("INSERT INTO t VALUES (2)", []).expect("writes");
        let after_two = watch.now().expect("a stamp");
        assert_ne!(after_two, after_one);
        // A rolled-back transaction commits nothing.
        writer.execute_batch("BEGIN; INSERT INTO t VALUES (3); ROLLBACK;").expect("rolls back");
        assert_eq!(watch.now(), Some(after_two));
        // A checkpoint that starts the WAL over: the next commit still gets a stamp never seen.
        writer.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);").expect("checkpoints");
        writer.execute("INSERT INTO t VALUES (4)", []).expect("writes");
        let restarted = watch.now().expect("a stamp");
        assert!(![before, after_one, after_two].contains(&restarted));
        assert_eq!(count(&reader), 3);
    }

    #[test]
    fn no_wal_index_no_watch() {
        let dir = tempfile::tempdir().expect("temp dir");
        let conn = rusqlite::Connection::open(dir.path().join(DB_FILE)).expect("opens");
        conn.execute_batch("CREATE TABLE t (x INTEGER);").expect("rollback journal");
        assert!(CommitWatch::open(dir.path()).is_none());
    }
}
