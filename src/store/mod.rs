//! SQLite: the connection pool, the migrations runner, and one module per aggregate. All SQL of
//! the directory lives under this module.

pub mod agents;
pub mod audit;
pub mod backup;
pub mod call_vectors;
pub mod calls;
pub mod changes;
pub mod codes;
pub mod collabs;
pub mod deletion;
pub mod endpoints;
pub mod events;
pub mod holds;
pub mod meta;
pub mod moderation;
pub mod offerings;
pub mod positions;
pub mod proofs;
pub mod rate;
pub mod recoveries;
pub mod replica;
pub mod replies;
pub mod reports;
pub mod requests;
pub mod search;
pub mod stats;
pub mod vectors;
pub mod wal_index;
pub mod writer;

use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use r2d2_sqlite::SqliteConnectionManager;
use rusqlite::{Connection, OptionalExtension, Transaction, TransactionBehavior};

use crate::error::Result;

pub type Pool = r2d2::Pool<SqliteConnectionManager>;
pub type Conn = r2d2::PooledConnection<SqliteConnectionManager>;

/// Every connection reads through its own page cache (SQLite's default, 2 MiB), and pages it
/// lacks come from the OS page cache by `pread`. The bundled SQLite is compiled without
/// SQLITE_ENABLE_MEMORY_MANAGEMENT and with SQLITE_DEFAULT_MEMSTATUS=0 (`.cargo/config.toml`):
/// with the first, every connection's cache shares one LRU behind a process-wide mutex, with
/// the second every allocation counts itself under another, and with 16 concurrent searches
/// hydrating their pages those mutexes doubled the CPU per search. Without them the connections
/// share nothing, so no memory map is needed to get around them. A memory map (the way round
/// before) made the process's RSS count each page of the file once per connection that touched
/// it: at a million agents 0.7 GB of it once listening, 3.4 GB after 2,700 searches (the memory
/// benchmark, `bench/src/bin/memory.rs`).
const READ_PRAGMAS: &str = "PRAGMA busy_timeout = 5000;";

/// A connection that writes: WAL so readers never wait for it, and `synchronous = FULL` so an
/// acknowledged write survives a power loss (the server's writer pays one fsync per batch, not
/// per write). The busy handler below lets writers of other processes queue behind each other.
/// `secure_delete` overwrites what a write removes (an erased agent's profile, calls and texts)
/// in the database file instead of leaving it in free pages; copies made before (backups, the
/// WAL until its next checkpoint) keep it until they are replaced (docs/operations.md).
const WRITE_PRAGMAS: &str = "PRAGMA journal_mode = WAL;
PRAGMA synchronous = FULL;
PRAGMA foreign_keys = ON;
PRAGMA secure_delete = ON;";

/// Migrations in order. Forward-only: a landed file is never edited, a change is a new file.
const MIGRATIONS: &[(i64, &str, &str)] = &[
    (1, "init", include_str!("../../migrations/0001_init.sql")),
    (2, "change_log", include_str!("../../migrations/0002_change_log.sql")),
    (3, "recovery", include_str!("../../migrations/0003_recovery.sql")),
    (4, "calls", include_str!("../../migrations/0004_calls.sql")),
    (5, "recoveries_of_their_own", include_str!("../../migrations/0005_recoveries_of_their_own.sql")),
    (6, "leaving", include_str!("../../migrations/0006_leaving.sql")),
    (7, "endpoints", include_str!("../../migrations/0007_endpoints.sql")),
    (8, "meaning", include_str!("../../migrations/0008_meaning.sql")),
    (9, "previous_mailbox", include_str!("../../migrations/0009_previous_mailbox.sql")),
    (10, "proofs_where_found", include_str!("../../migrations/0010_proofs_where_found.sql")),
    (11, "budgets_by_agent", include_str!("../../migrations/0011_budgets_by_agent.sql")),
    (12, "events", include_str!("../../migrations/0012_events.sql")),
    (13, "observed", include_str!("../../migrations/0013_observed.sql")),
    (14, "moderation_log", include_str!("../../migrations/0014_moderation_log.sql")),
    (16, "call_vectors", include_str!("../../migrations/0016_call_vectors.sql")),
    (20, "endpoint_reasons", include_str!("../../migrations/0020_endpoint_reasons.sql")),
    (21, "after_a_theft", include_str!("../../migrations/0021_after_a_theft.sql")),
    (22, "sitemap_index", include_str!("../../migrations/0022_sitemap_index.sql")),
    (23, "own_renames", include_str!("../../migrations/0023_own_renames.sql")),
    (24, "reports_by_reporter", include_str!("../../migrations/0024_reports_by_reporter.sql")),
    (25, "keys_never_given_again", include_str!("../../migrations/0025_keys_never_given_again.sql")),
    (26, "hidden_calls_by_log", include_str!("../../migrations/0026_hidden_calls_by_log.sql")),
];

/// The key of a new row of `table`: past every key it holds and every key it ever held
/// (`retired_keys`, migration 0025), so no row inherits what was derived from a deleted one.
fn next_key(table: &str, key: &str) -> String {
    format!(
        "max(coalesce((SELECT max({key}) FROM {table}), 0),
             coalesce((SELECT high FROM retired_keys WHERE name = '{table}'), 0)) + 1"
    )
}

pub const DB_FILE: &str = "agentdir.sqlite3";
/// The search index's folder in the data dir.
pub const INDEX_DIR: &str = "search-index";
/// Beside it: the feed epoch of the database the index was built from (`App::repair_index`).
pub const INDEX_EPOCH_FILE: &str = "search-index.epoch";
/// The files SQLite keeps beside the database while it is open in WAL mode.
pub const DB_SIDE_FILES: [&str; 2] = ["-wal", "-shm"];

/// The mode of the database file, its `-wal` and `-shm` and of backup copies: they hold
/// mailboxes and API key hashes, so only their owner and the data dir's group (the mail pipe's
/// own user is in it, README "Permissions") may read or write them, whatever the umask.
pub const DB_FILE_MODE: u32 = 0o660;

/// The database file of `data_dir` and the files beside it, in that order.
/// Records one agent sends another, with when each was made: what a pair's share counts.
pub(crate) struct PairRecords {
    table: &'static str,
    from: &'static str,
    to: &'static str,
}

pub(crate) const CONTACT_REQUESTS: PairRecords =
    PairRecords { table: "contact_requests", from: "sender_id", to: "recipient_id" };
pub(crate) const PROPOSALS: PairRecords =
    PairRecords { table: "collaborations", from: "proposer_id", to: "partner_id" };

/// When the `nth` newest (from 1) of the `records` agent `from` sent agent `to` after `since` was
/// made; none when it sent fewer.
pub(crate) fn nth_newest_of_pair_since(
    conn: &Connection,
    records: &PairRecords,
    (from, to): (i64, i64),
    since: i64,
    nth: u32,
) -> Result<Option<i64>> {
    let PairRecords { table, from: from_column, to: to_column } = records;
    Ok(conn
        .prepare_cached(&format!(
            "SELECT created_at FROM {table}
             WHERE {from_column} = :from AND {to_column} = :to AND created_at > :since
             ORDER BY created_at DESC LIMIT 1 OFFSET :skip"
        ))?
        .query_row(
            rusqlite::named_params! {
                ":from": from, ":to": to, ":since": since, ":skip": i64::from(nth.saturating_sub(1)),
            },
            |r| r.get("created_at"),
        )
        .optional()?)
}

fn db_files(data_dir: &Path) -> Vec<PathBuf> {
    let mut files = vec![data_dir.join(DB_FILE)];
    files.extend(DB_SIDE_FILES.iter().map(|side| data_dir.join(format!("{DB_FILE}{side}"))));
    files
}

/// The group of `dir`, which the database files get.
pub(crate) fn group_of(dir: &Path) -> std::io::Result<u32> {
    Ok(std::fs::metadata(dir)?.gid())
}

/// Creates `path` empty, with [`DB_FILE_MODE`] and group `gid` (when given), before SQLite writes anything to
/// it; an existing file is left as it is. SQLite takes an empty file for an empty database and
/// gives the `-wal`, `-shm` and journal files it creates beside it the same mode (it sets the
/// mode itself, past the umask). A group that cannot be given is logged, not fatal: the mode
/// alone keeps everyone else out.
pub(crate) fn create_private(path: &Path, gid: Option<u32>) -> std::io::Result<()> {
    let file = match std::fs::OpenOptions::new().write(true).create_new(true).mode(DB_FILE_MODE).open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => return Ok(()),
        Err(e) => return Err(e),
    };
    // The umask may have taken bits off the mode asked for.
    file.set_permissions(std::fs::Permissions::from_mode(DB_FILE_MODE))?;
    if let Some(gid) = gid
        && file.metadata()?.gid() != gid
        && let Err(e) = std::os::unix::fs::fchown(&file, None, Some(gid))
    {
        tracing::warn!(file = %path.display(), gid, error = %e, "cannot give the file the data dir's group");
    }
    Ok(())
}

/// Gives an existing database file [`DB_FILE_MODE`] and group `gid` (files of older versions
/// were created `0644`, readable by every local user), and warns of what it changed: the
/// operator learns that the files were open to others. A missing file is left missing; a change
/// the process may not make is logged and skipped.
fn tighten(path: &Path, gid: u32) {
    let Ok(meta) = std::fs::metadata(path) else { return };
    let file = path.display();
    let mode = meta.permissions().mode() & 0o7777;
    if mode != DB_FILE_MODE {
        match std::fs::set_permissions(path, std::fs::Permissions::from_mode(DB_FILE_MODE)) {
            Ok(()) => {
                tracing::warn!(%file, from = %format!("{mode:04o}"), to = %format!("{DB_FILE_MODE:04o}"), "database file permissions changed")
            }
            Err(e) => {
                tracing::warn!(%file, mode = %format!("{mode:04o}"), error = %e, "cannot change the database file's permissions")
            }
        }
    }
    if meta.gid() != gid {
        match std::os::unix::fs::chown(path, None, Some(gid)) {
            Ok(()) => {
                tracing::warn!(%file, from = meta.gid(), to = gid, "database file group changed to the data dir's")
            }
            Err(e) => {
                tracing::warn!(%file, gid, error = %e, "cannot give the database file the data dir's group")
            }
        }
    }
}

/// Makes `data_dir` and its database file, created private when missing; returns the file's
/// path and the data dir's group.
fn prepare_files(data_dir: &Path) -> anyhow::Result<(PathBuf, u32)> {
    use anyhow::Context as _;
    std::fs::create_dir_all(data_dir)
        .with_context(|| format!("cannot make the data dir {}", data_dir.display()))?;
    let gid =
        group_of(data_dir).with_context(|| format!("cannot read the data dir {}", data_dir.display()))?;
    let path = data_dir.join(DB_FILE);
    create_private(&path, Some(gid))
        .with_context(|| format!("cannot create the database {}", path.display()))?;
    Ok((path, gid))
}

fn write_connection(c: &mut Connection) -> rusqlite::Result<()> {
    c.execute_batch(READ_PRAGMAS)?;
    c.execute_batch(WRITE_PRAGMAS)?;
    c.busy_handler(Some(wait_for_write_lock))
}

/// How long a write waits for the write lock another process holds.
pub const WRITE_LOCK_WAIT: Duration = Duration::from_secs(5);

/// The busy handler of connections that write: tries again every millisecond. SQLite's own
/// handler backs off to 100 ms between tries, but under load the server's writer holds the lock
/// for all but a moment between its batches, so a command beside it (`inbound-mail`, `admin`)
/// tried only ~60 times and could miss every gap; a try every millisecond finds one.
fn wait_for_write_lock(tries: i32) -> bool {
    let waited = Duration::from_millis(u64::try_from(tries).unwrap_or(0));
    if waited >= WRITE_LOCK_WAIT {
        return false;
    }
    std::thread::sleep(Duration::from_millis(1));
    true
}

/// Opens (creating if needed) the database in `data_dir` and applies pending migrations: a pool
/// of read-write connections, for the commands that run beside the server (`inbound-mail`,
/// `admin`).
pub fn open(data_dir: &Path, connections: u32) -> anyhow::Result<Pool> {
    let (path, _) = prepare_files(data_dir)?;
    let manager = SqliteConnectionManager::file(path).with_init(write_connection);
    let pool = r2d2::Pool::builder()
        .max_size(connections)
        .connection_timeout(Duration::from_secs(10))
        .build(manager)?;
    migrate(&mut *pool.get()?)?;
    Ok(pool)
}

/// The server's connections: the one write connection (for the writer thread) with migrations
/// applied, and a pool of read-only connections. The database files get [`DB_FILE_MODE`] and
/// the data dir's group: before they are opened, and again once the write connection made the
/// `-wal` and `-shm` (SQLite gives them the database's mode, but the group of whoever made them).
pub fn open_server(data_dir: &Path, readers: ReadPool) -> anyhow::Result<(Connection, Pool)> {
    let (path, gid) = prepare_files(data_dir)?;
    db_files(data_dir).iter().for_each(|f| tighten(f, gid));
    let mut writer = Connection::open(&path)?;
    write_connection(&mut writer)?;
    migrate(&mut writer)?;
    if changes::adopt(&writer, data_dir)? {
        tracing::warn!(
            "this data dir did not serve this database before (a restore): the change feed starts a new epoch, and readers' cursors are told to read again"
        );
    }
    db_files(data_dir).iter().for_each(|f| tighten(f, gid));
    let manager = SqliteConnectionManager::file(&path).with_init(read_connection);
    let readers = readers.build(manager)?;
    Ok((writer, readers))
}

pub(crate) fn read_connection(c: &mut Connection) -> rusqlite::Result<()> {
    c.execute_batch(READ_PRAGMAS)?;
    c.pragma_update(None, "query_only", true)
}

/// One more read-only connection of the server, outside the pool (for the change-log follower).
pub fn open_server_reader(data_dir: &Path) -> anyhow::Result<Connection> {
    let mut conn = Connection::open(data_dir.join(DB_FILE))?;
    read_connection(&mut conn)?;
    Ok(conn)
}

/// The read-only connections a server reads through.
#[derive(Debug, Clone, Copy)]
pub struct ReadPool {
    pub connections: u32,
    /// How long a read waits for a free connection before it is answered `overloaded`.
    pub wait: Duration,
}

/// How long start-up waits for the read connections to open. Reads once serving wait
/// [`ReadPool::wait`] (`App::read`); a busy machine may take longer than that to open them.
pub const READ_POOL_OPEN_WAIT: Duration = Duration::from_secs(10);

impl ReadPool {
    fn build(self, manager: SqliteConnectionManager) -> Result<Pool, r2d2::Error> {
        r2d2::Pool::builder()
            .max_size(self.connections)
            .connection_timeout(READ_POOL_OPEN_WAIT)
            .build(manager)
    }
}

fn migrate(conn: &mut Connection) -> anyhow::Result<()> {
    conn.execute_batch(
        "CREATE TABLE IF NOT EXISTS schema_migrations (
            version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)",
    )?;
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    // Every migration not applied yet, in order, even one numbered below the newest applied:
    // branches take numbers in parallel, so one may land after a higher one did.
    let applied: std::collections::HashSet<i64> = tx
        .prepare("SELECT version FROM schema_migrations")?
        .query_map([], |r| r.get("version"))?
        .collect::<rusqlite::Result<_>>()?;
    // A migration this program does not know was applied by a newer one: what this one would
    // write may no longer fit the schema.
    let mut unknown: Vec<i64> =
        applied.iter().copied().filter(|v| !MIGRATIONS.iter().any(|m| m.0 == *v)).collect();
    unknown.sort_unstable();
    anyhow::ensure!(
        unknown.is_empty(),
        "the database was migrated by a newer agentdir (migrations {unknown:?} are unknown to this one): run that \
         version, or restore a backup made by this one"
    );
    for (version, name, sql) in MIGRATIONS.iter().filter(|m| !applied.contains(&m.0)) {
        tx.execute_batch(sql)?;
        tx.execute(
            "INSERT INTO schema_migrations (version, name, applied_at) VALUES (:version, :name, :at)",
            rusqlite::named_params! {":version": version, ":name": name, ":at": crate::time::now_ms()},
        )?;
        tracing::info!(version, name, "applied migration");
    }
    Ok(tx.commit()?)
}

/// The newest seq SQLite ever handed out for `table` (an AUTOINCREMENT key, so deletions never
/// lower it), 0 before the first row.
pub(crate) fn newest_seq(conn: &Connection, table: &str) -> Result<u64> {
    use rusqlite::OptionalExtension as _;
    let seq: Option<i64> = conn
        .prepare_cached("SELECT seq FROM sqlite_sequence WHERE name = :table")?
        .query_row(rusqlite::named_params! {":table": table}, |r| r.get("seq"))
        .optional()?;
    Ok(seq.unwrap_or(0).max(0) as u64)
}

/// SQLite's data version of `conn`: it moves when another connection commits (see
/// `positions::DataVersion`).
pub fn data_version(conn: &Connection) -> Result<positions::DataVersion> {
    let version: i64 = conn.prepare_cached("PRAGMA data_version")?.query_row([], |r| r.get(0))?;
    Ok(positions::DataVersion::new(version))
}

/// Runs `f` in an IMMEDIATE transaction on a connection of a command beside the server: it
/// takes the write lock up front, so the checks made inside see the state the writes apply to.
/// (The server itself writes only through its writer thread, see `writer`.)
pub fn write<T>(conn: &mut Connection, f: impl FnOnce(&Transaction) -> Result<T>) -> Result<T> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let out = f(&tx)?;
    tx.commit()?;
    Ok(out)
}

/// States stored as their snake_case names, read back strictly: a value the enum does not
/// know is an error, never a default.
macro_rules! stored_as_text {
    ($($state:ty),* $(,)?) => {$(
        impl rusqlite::ToSql for $state {
            fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
                Ok(rusqlite::types::ToSqlOutput::from(self.as_str()))
            }
        }

        impl rusqlite::types::FromSql for $state {
            fn column_result(value: rusqlite::types::ValueRef<'_>) -> rusqlite::types::FromSqlResult<Self> {
                let text = value.as_str()?;
                <$state as strum::VariantArray>::VARIANTS.iter().copied().find(|v| v.as_str() == text).ok_or_else(|| {
                    rusqlite::types::FromSqlError::Other(
                        format!("unknown {} {text:?} in the database", stringify!($state)).into(),
                    )
                })
            }
        }
    )*};
}

stored_as_text!(
    crate::domain::call::CallKind,
    crate::domain::call::CallStatus,
    crate::domain::call::Lang,
    crate::domain::call::ReportTarget,
    crate::domain::collab::CollabStatus,
    crate::domain::contact_request::Compensation,
    crate::domain::contact_request::DeclineReason,
    crate::domain::contact_request::RequestStatus,
    crate::domain::handles::HoldReason,
    crate::domain::endpoint::EndpointKind,
    crate::domain::endpoint::EndpointStatus,
    crate::domain::endpoint::EndpointProof,
    crate::domain::events::EventKind,
    crate::domain::events::SubjectKind,
    crate::domain::moderation::ModerationAction,
    crate::domain::moderation::ReasonCategory,
    crate::domain::moderation::TargetKind,
    crate::domain::endpoint::EndpointReason,
    crate::domain::offering::Mode,
    crate::domain::trust::CodePurpose,
    changes::ChangeKind,
);

pub(crate) fn to_json(list: &[String]) -> String {
    serde_json::to_string(list).unwrap_or_else(|_| "[]".into())
}

/// A list of keys as one JSON array parameter, for `IN (SELECT value FROM json_each(?))`: one
/// cached statement serves lists of any length.
pub(crate) fn id_list(ids: &[i64]) -> String {
    serde_json::to_string(ids).unwrap_or_else(|_| "[]".into())
}

/// The columns naming an agent a row refers to (its author, a collaboration's proposer…):
/// `{role}_handle`, `{role}_name` and `{role}_verified` in the statement.
pub(crate) struct RefColumns {
    handle: &'static str,
    name: &'static str,
    verified: &'static str,
}

macro_rules! ref_columns {
    ($role:literal) => {
        RefColumns {
            handle: concat!($role, "_handle"),
            name: concat!($role, "_name"),
            verified: concat!($role, "_verified"),
        }
    };
}

pub(crate) const AUTHOR: RefColumns = ref_columns!("author");
pub(crate) const PROPOSER: RefColumns = ref_columns!("proposer");
pub(crate) const PARTNER: RefColumns = ref_columns!("partner");

impl RefColumns {
    /// The agent these columns name in `r`.
    pub(crate) fn read(&self, r: &rusqlite::Row<'_>) -> rusqlite::Result<crate::domain::AgentRef> {
        Ok(crate::domain::AgentRef {
            handle: r.get(self.handle)?,
            name: r.get(self.name)?,
            verified: r.get(self.verified)?,
        })
    }
}

/// A column holding a JSON list of strings. A stored value that is not one is an error, never an
/// empty list.
pub(crate) struct JsonList(pub Vec<String>);

impl rusqlite::types::FromSql for JsonList {
    fn column_result(value: rusqlite::types::ValueRef<'_>) -> rusqlite::types::FromSqlResult<Self> {
        serde_json::from_str(value.as_str()?)
            .map(JsonList)
            .map_err(|e| rusqlite::types::FromSqlError::Other(Box::new(e)))
    }
}

/// Whether an error is SQLite refusing a duplicate key.
pub(crate) fn is_unique_violation(e: &rusqlite::Error) -> bool {
    matches!(e, rusqlite::Error::SqliteFailure(f, _)
        if f.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_UNIQUE
            || f.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_PRIMARYKEY)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).expect("stat").permissions().mode() & 0o7777
    }

    /// The first column of every row `sql` gives.
    fn column<T: rusqlite::types::FromSql>(conn: &Connection, sql: &str) -> Vec<T> {
        conn.prepare(sql)
            .expect("prepare")
            .query_map([], |r| r.get(0))
            .expect("query")
            .collect::<rusqlite::Result<_>>()
            .expect("rows")
    }

    /// The build's SQLite is the one `READ_PRAGMAS` counts on: connections that share no page
    /// cache and count no allocation under a process-wide mutex (`.cargo/config.toml`). A build
    /// that lost those flags would read as before, only slower under concurrent searches.
    #[test]
    fn the_bundled_sqlite_shares_no_page_cache_between_connections() {
        let conn = Connection::open_in_memory().expect("open");
        let options: Vec<String> = column(&conn, "PRAGMA compile_options");
        assert!(!options.iter().any(|o| o == "ENABLE_MEMORY_MANAGEMENT"), "{options:?}");
        assert!(options.iter().any(|o| o == "DEFAULT_MEMSTATUS=0"), "{options:?}");
    }

    /// SQLite creates the `-wal` and `-shm` files with the database file's own mode, past the
    /// umask (it sets the mode on the files it creates), so a database created private keeps
    /// its side files private: nothing readable by others is ever written.
    #[test]
    fn the_side_files_sqlite_creates_take_the_database_files_mode() {
        let dir = tempfile::tempdir().expect("temp dir");
        let (path, gid) = prepare_files(dir.path()).expect("prepare");
        assert_eq!(mode(&path), DB_FILE_MODE);
        assert_eq!(std::fs::metadata(&path).expect("stat").gid(), gid);
        let conn = Connection::open(&path).expect("open");
        conn.execute_batch(WRITE_PRAGMAS).expect("pragmas");
        conn.execute_batch("CREATE TABLE t (x TEXT); INSERT INTO t VALUES ('a mailbox');").expect("write");
        for file in db_files(dir.path()) {
            assert!(file.exists(), "{} missing while the database is open", file.display());
            assert_eq!(mode(&file), DB_FILE_MODE, "{}", file.display());
        }
    }

    /// A database that applied a higher-numbered migration first (another branch landed it)
    /// still gets the lower one, and the rest, in order.
    #[test]
    fn a_migration_numbered_below_the_newest_applied_is_still_applied() {
        let mut conn = Connection::open_in_memory().expect("open");
        conn.execute_batch(
            "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)",
        )
        .expect("table");
        for (version, name, sql) in MIGRATIONS.iter().filter(|m| m.0 <= 13 && m.0 != 12) {
            conn.execute_batch(sql).expect("migration");
            conn.execute(
                "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?1, ?2, 0)",
                rusqlite::params![version, name],
            )
            .expect("record");
        }
        migrate(&mut conn).expect("migrate");
        let versions: Vec<i64> = column(&conn, "SELECT version FROM schema_migrations ORDER BY version");
        assert_eq!(versions, MIGRATIONS.iter().map(|m| m.0).collect::<Vec<_>>());
        conn.execute_batch("SELECT seq FROM events LIMIT 1").expect("the events table exists");
    }

    /// A database a newer program migrated is refused, and left as it was.
    #[test]
    fn a_database_of_a_newer_program_is_refused() {
        let mut conn = Connection::open_in_memory().expect("db");
        migrate(&mut conn).expect("migrate");
        conn.execute(
            "INSERT INTO schema_migrations (version, name, applied_at) VALUES (999, 'future', 0)",
            [],
        )
        .expect("a future migration");
        let refused = migrate(&mut conn).expect_err("refused").to_string();
        assert!(refused.contains("newer agentdir") && refused.contains("999"), "{refused}");
        let versions: Vec<i64> = column(&conn, "SELECT version FROM schema_migrations ORDER BY version");
        assert_eq!(versions.len(), MIGRATIONS.len() + 1);
    }

    /// An existing file of an older version gets the mode and the data dir's group.
    #[test]
    fn an_existing_database_file_is_tightened() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join(DB_FILE);
        Connection::open(&path).expect("open").execute_batch("CREATE TABLE t (x)").expect("write");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        tighten(&path, group_of(dir.path()).expect("group"));
        assert_eq!(mode(&path), DB_FILE_MODE);
        // A missing side file stays missing.
        let wal = dir.path().join(format!("{DB_FILE}-wal"));
        tighten(&wal, 0);
        assert!(!wal.exists());
    }
}
