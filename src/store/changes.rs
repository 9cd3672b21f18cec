//! The `changes` table: the compacted change log every follower reads (see
//! `migrations/0002_change_log.sql` for what the triggers record and why).

use rusqlite::{Connection, named_params};

use super::positions::ChangeSeq;
use crate::error::Result;

/// What kind of public entity a change is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, strum::IntoStaticStr, strum::VariantArray)]
#[strum(serialize_all = "snake_case")]
pub enum ChangeKind {
    /// An agent: its card (the id is the handle).
    Agent,
    /// A call with its replies (the id is the `post_` id).
    Call,
    /// A confirmed collaboration (the id is the `col_` id).
    Collab,
}

impl ChangeKind {
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// One row of the log: the latest change of one entity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub seq: ChangeSeq,
    pub kind: ChangeKind,
    /// The public id: handle, post id or collab id.
    pub id: String,
    /// The search index's key of the entity (agents.id, calls.seq; 0 for collaborations).
    pub key: i64,
    /// Unix milliseconds.
    pub at: i64,
}

/// The newest seq ever handed out (compaction and pruning never lower it).
pub fn max_seq(conn: &Connection) -> Result<ChangeSeq> {
    super::newest_seq(conn, "changes").map(ChangeSeq::new)
}

/// Entities changed after `seq`, oldest change first, at most `limit`: one indexed range scan.
pub fn after(conn: &Connection, seq: ChangeSeq, limit: u32) -> Result<Vec<Change>> {
    let mut stmt = conn.prepare_cached(
        "SELECT seq, kind, id, key, at FROM changes WHERE seq > :after ORDER BY seq LIMIT :limit",
    )?;
    let rows = stmt.query_map(named_params! {":after": seq.get() as i64, ":limit": limit}, |r| {
        Ok(Change {
            seq: ChangeSeq::new(r.get::<_, i64>("seq")? as u64),
            kind: r.get("kind")?,
            id: r.get("id")?,
            key: r.get("key")?,
            at: r.get("at")?,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// `meta` key of the feed's epoch: a random number drawn when the log was created, part of every
/// cursor, so a cursor of another database is never read as one of this.
const EPOCH: &str = "changes_epoch";
/// `meta` key of the highest seq of a deletion that retention forgot: a cursor below it missed
/// something.
const PRUNED_THROUGH: &str = "changes_pruned_through";
/// `meta` key of the seq up to which retention has looked at the log.
const SCANNED_THROUGH: &str = "changes_scanned_through";

fn meta_u64(conn: &Connection, key: &str) -> Result<u64> {
    Ok(super::meta::get(conn, key)?.and_then(|v| v.parse().ok()).unwrap_or(0))
}

pub fn epoch(conn: &Connection) -> Result<u64> {
    meta_u64(conn, EPOCH)
}

/// Draws a new feed epoch (as migration 0002 drew the first), so that no cursor issued before
/// is taken for one of this feed: for a backup copy, and for a database a data dir did not
/// serve before ([`adopt`]), which lack writes readers may hold cursors of.
pub fn draw_new_epoch(conn: &Connection) -> Result<()> {
    conn.execute(
        "UPDATE meta SET value = abs(random()) % 2821109907456 WHERE key = :key",
        rusqlite::named_params! {":key": EPOCH},
    )?;
    Ok(())
}

/// `meta` key of the database's own id, drawn once.
const DATABASE_ID: &str = "database_id";
/// The file in a primary's data dir naming the database it serves (its `database_id`).
pub const SERVED_DATABASE_FILE: &str = "served-database-id";

/// Makes the database in `data_dir` the one that data dir serves, and draws a new feed epoch
/// when it was another's: a restore (a backup, or Litestream's copy after losing the primary)
/// lacks what was written after its copy was made, so a reader's cursor of those writes must be
/// told to read again (410), not be taken for a position of the restored log. A database and
/// data dir of a version before this mark adopt each other as they are. Returns whether a new
/// epoch was drawn.
pub fn adopt(conn: &Connection, data_dir: &std::path::Path) -> Result<bool> {
    let file = data_dir.join(SERVED_DATABASE_FILE);
    let in_dir = std::fs::read_to_string(&file).ok().map(|id| id.trim().to_owned());
    let in_db = super::meta::get(conn, DATABASE_ID)?;
    let restored = match (&in_db, &in_dir) {
        (Some(db), Some(dir)) if db == dir => return Ok(false),
        // This version's first start over this database and data dir.
        (None, None) => false,
        _ => true,
    };
    if restored {
        draw_new_epoch(conn)?;
    }
    let id = match in_db {
        Some(id) => id,
        None => {
            let id: String = conn.query_row("SELECT lower(hex(randomblob(16)))", [], |r| r.get(0))?;
            super::meta::set(conn, DATABASE_ID, &id)?;
            id
        }
    };
    std::fs::write(&file, format!("{id}\n")).map_err(|e| {
        tracing::error!(error = %e, file = %file.display(), "cannot write which database this data dir serves");
        crate::error::Error::Internal
    })?;
    Ok(restored)
}

pub fn pruned_through(conn: &Connection) -> Result<ChangeSeq> {
    meta_u64(conn, PRUNED_THROUGH).map(ChangeSeq::new)
}

/// Whether the entity of a log row `ch` is publicly readable now: the same rules as the public
/// reads (`calls::VISIBLE`, `collabs::PUBLIC`).
fn public() -> String {
    format!(
        "CASE ch.kind
            WHEN 'agent' THEN EXISTS (SELECT 1 FROM agents a WHERE a.handle = ch.id AND a.listed)
            WHEN 'call' THEN EXISTS (SELECT 1 FROM calls p JOIN agents a ON a.id = p.agent_id
                                     WHERE p.id = ch.id AND {visible})
            ELSE EXISTS (SELECT 1 FROM collaborations c JOIN agents p ON p.id = c.proposer_id
                         JOIN agents q ON q.id = c.partner_id WHERE c.id = ch.id AND {public})
         END",
        visible = super::calls::VISIBLE,
        public = super::collabs::PUBLIC,
    )
}

/// Forgets deletions older than `cutoff` (unix ms), looking at up to `batch` rows past where
/// the last pass stopped; returns how many were forgotten. A row it looked at and kept (a
/// public entity) only comes back into question by changing, which moves it to a new seq, so
/// no row is looked at twice.
pub fn forget_old_deletions(conn: &Connection, cutoff: i64, batch: u32) -> Result<usize> {
    let scanned = meta_u64(conn, SCANNED_THROUGH)?;
    // The log is in time order: the rows past the first that is not old enough are as young,
    // so a pass reads at most `batch` rows however long the log is (a filter on `at` alone
    // would walk every younger row to find none).
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT ch.seq, ch.at, {} AS public FROM changes ch
         WHERE ch.seq > :scanned ORDER BY ch.seq LIMIT :batch",
        public()
    ))?;
    let rows: Vec<(i64, i64, bool)> = stmt
        .query_map(named_params! {":scanned": scanned as i64, ":batch": batch}, |r| {
            Ok((r.get("seq")?, r.get("at")?, r.get("public")?))
        })?
        .collect::<rusqlite::Result<_>>()?;
    let rows: Vec<(i64, bool)> = rows
        .into_iter()
        .take_while(|&(_, at, _)| at < cutoff)
        .map(|(seq, _, public)| (seq, public))
        .collect();
    let Some(&(last, _)) = rows.last() else {
        return Ok(0);
    };
    let mut forgotten = 0;
    let mut highest = None;
    for (seq, public) in &rows {
        if !public {
            conn.prepare_cached("DELETE FROM changes WHERE seq = :seq")?
                .execute(named_params! {":seq": seq})?;
            forgotten += 1;
            highest = Some(*seq);
        }
    }
    super::meta::set(conn, SCANNED_THROUGH, &last.to_string())?;
    if let Some(highest) = highest {
        let through = pruned_through(conn)?.max(ChangeSeq::new(highest as u64));
        super::meta::set(conn, PRUNED_THROUGH, &through.to_string())?;
    }
    Ok(forgotten)
}
