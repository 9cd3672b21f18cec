//! Online backups: a consistent copy of the live database, taken with SQLite's backup API while
//! the server keeps writing, and checked before it is called a backup.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rusqlite::Connection;
use rusqlite::backup::{Backup, StepResult};

use crate::error::{Error, Result};

/// How long to retry while another connection holds a lock the copy needs.
const BUSY_WAIT: Duration = Duration::from_secs(30);

/// Copies the database behind `src` to `dest`. The copy is written beside `dest` and renamed
/// into place only once complete and checked, so `dest` never holds half a backup.
pub fn copy_to(src: &Connection, dest: &Path) -> Result<()> {
    let partial = partial_path(dest);
    let _ = std::fs::remove_file(&partial);
    let result = copy_checked(src, &partial).and_then(|()| {
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

fn partial_path(dest: &Path) -> PathBuf {
    let mut name = dest.file_name().map(|n| n.to_os_string()).unwrap_or_default();
    name.push(".partial");
    dest.with_file_name(name)
}

fn copy_checked(src: &Connection, partial: &Path) -> Result<()> {
    let mut out = Connection::open(partial)?;
    {
        // All pages in one step: under WAL the copy reads one snapshot while writers go on,
        // whereas a step-by-step copy restarts whenever another connection writes and may never
        // finish on a busy server.
        let backup = Backup::new(src, &mut out)?;
        let deadline = Instant::now() + BUSY_WAIT;
        loop {
            match backup.step(-1)? {
                StepResult::Done => break,
                _ if Instant::now() >= deadline => {
                    tracing::error!("the database stayed locked; backup abandoned");
                    return Err(Error::Overloaded);
                }
                _ => std::thread::sleep(Duration::from_millis(50)),
            }
        }
    }
    let verdict: String = out.query_row("PRAGMA quick_check", [], |r| r.get(0))?;
    if verdict != "ok" {
        tracing::error!(%verdict, "the backup copy failed its integrity check");
        return Err(Error::Internal);
    }
    // Leave one self-contained file: no -wal beside it to lose on the way to the backup store.
    out.execute_batch("PRAGMA journal_mode = DELETE")?;
    out.close().map_err(|(_, e)| Error::from(e))?;
    Ok(())
}
