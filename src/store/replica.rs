//! The SQLite side of read replicas: the write position every server write advances (so a
//! replica can tell whether its copy holds a given write), and opening the copy Litestream
//! keeps up to date.
//!
//! Litestream's follower (`litestream restore -f`) writes pages straight into the copy under
//! SQLite's exclusive lock, so the copy must be read the way SQLite expects in rollback-journal
//! mode:
//! - the copy's header still says WAL right after the first restore (Litestream only rewrites
//!   it when a shipped change touches page 1), and a connection to a WAL database holds a shared
//!   lock for as long as it is open, which blocks the follower forever; the header is switched
//!   to rollback mode once, before the read connections open;
//! - the follower does not move SQLite's change counter unless page 1 changed, so a connection's
//!   page cache would serve old pages: every connection drops its cached pages before it is
//!   used (`App::read`), and its reads then come from the file as it is now;
//! - the follower waits for open read transactions, so reads stay short.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use r2d2_sqlite::SqliteConnectionManager;
use rusqlite::{Connection, OpenFlags, named_params};

use super::positions::WritePosition;
use super::{DB_FILE, Pool, ReadPool, read_connection};
use crate::error::Result;

/// `meta` key of the write position.
const WRITE_POSITION: &str = "write_position";

/// How long a replica waits at start for Litestream's first restore to produce the copy.
pub const COPY_WAIT: Duration = Duration::from_secs(120);

/// Advances the write position inside a write and returns the new value.
pub fn advance(conn: &Connection) -> Result<WritePosition> {
    let value: String = conn
        .prepare_cached(
            "INSERT INTO meta (key, value) VALUES (:key, '1')
             ON CONFLICT (key) DO UPDATE SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT)
             RETURNING value",
        )?
        .query_row(named_params! {":key": WRITE_POSITION}, |r| r.get("value"))?;
    Ok(WritePosition::new(value.parse().unwrap_or(0)))
}

/// The write position of the database (0 before the first write).
pub fn position(conn: &Connection) -> Result<WritePosition> {
    Ok(WritePosition::new(super::meta::get(conn, WRITE_POSITION)?.and_then(|v| v.parse().ok()).unwrap_or(0)))
}

/// The copy in `data_dir` and the file Litestream writes its position to after each apply.
pub fn copy_paths(data_dir: &Path) -> (PathBuf, PathBuf) {
    let db = data_dir.join(DB_FILE);
    let mut txid = db.clone().into_os_string();
    txid.push("-txid");
    (db, PathBuf::from(txid))
}

/// Which file the copy is: a restore replaces the file (a new one under the same name), so a
/// server holding the old one reads a copy nothing updates any more.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CopyIdentity {
    dev: u64,
    ino: u64,
}

impl CopyIdentity {
    /// The file at `path` now; none when there is none.
    pub fn of(path: &Path) -> Option<CopyIdentity> {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(path).ok().map(|m| CopyIdentity { dev: m.dev(), ino: m.ino() })
    }
}

/// Opens the Litestream-followed copy read-only: a pool of read connections and two more
/// (the follower's and the watcher's), like `open_server` without the writer and migrations,
/// and which file they opened. A follower started beside the server wipes an old copy and
/// restores a new one: the server waits for the restore to be done (the copy and Litestream's
/// position file, written after it), and opens again when the file was replaced while it
/// opened it (it would otherwise read a deleted file, or switch one file out of WAL mode and
/// open the next in it, which blocks the follower).
pub fn open_copy(
    data_dir: &Path,
    readers: ReadPool,
) -> anyhow::Result<(Pool, Connection, Connection, CopyIdentity)> {
    let (path, txid) = copy_paths(data_dir);
    let started = Instant::now();
    let waited_too_long = |why: String| -> anyhow::Result<()> {
        if started.elapsed() > COPY_WAIT {
            anyhow::bail!(
                "{why} after {}s: start `litestream restore -f -o {} URL` first",
                COPY_WAIT.as_secs(),
                path.display()
            );
        }
        std::thread::sleep(Duration::from_millis(100));
        Ok(())
    };
    loop {
        let Some(identity) = CopyIdentity::of(&path).filter(|_| txid.exists()) else {
            waited_too_long(format!("no restored copy at {}", path.display()))?;
            continue;
        };
        match open_copy_once(&path, readers) {
            Ok((pool, follower, watch)) if CopyIdentity::of(&path) == Some(identity) => {
                return Ok((pool, follower, watch, identity));
            }
            Ok(_) => {
                tracing::info!("the copy was replaced while it was being opened; opening the new one");
                waited_too_long("the copy kept being replaced".to_owned())?;
            }
            Err(e) => waited_too_long(format!("cannot open the copy ({e})"))?,
        }
    }
}

fn open_copy_once(path: &Path, readers: ReadPool) -> anyhow::Result<(Pool, Connection, Connection)> {
    leave_wal(path)?;
    let flags =
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX | OpenFlags::SQLITE_OPEN_URI;
    let manager = SqliteConnectionManager::file(path).with_flags(flags).with_init(read_connection);
    let pool = readers.build(manager)?;
    let open = || -> anyhow::Result<Connection> {
        let mut conn = Connection::open_with_flags(path, flags)?;
        read_connection(&mut conn)?;
        Ok(conn)
    };
    Ok((pool, open()?, open()?))
}

/// Switches a copy whose header still says WAL to rollback mode (see the module comment).
fn leave_wal(path: &Path) -> anyhow::Result<()> {
    // Never created here: a copy removed since it was seen is for the follower to restore.
    let flags =
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX | OpenFlags::SQLITE_OPEN_URI;
    let conn = Connection::open_with_flags(path, flags)?;
    conn.busy_timeout(Duration::from_secs(30))?;
    let mode: String = conn.query_row("PRAGMA journal_mode", [], |r| r.get(0))?;
    if mode.eq_ignore_ascii_case("wal") {
        let now: String = conn.query_row("PRAGMA journal_mode = DELETE", [], |r| r.get(0))?;
        tracing::info!(journal_mode = %now, "switched the copy out of WAL mode so Litestream can apply changes");
    }
    Ok(())
}
