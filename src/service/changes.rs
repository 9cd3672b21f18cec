//! The public change feed (`GET /api/changes`) over the change log, and the retention that
//! forgets old deletions.

use std::collections::HashMap;

use super::App;
use crate::derived::rendered::Rendered;
use crate::derived::views;
use crate::domain::changes::{
    ChangeData, ChangeEntry, ChangeFeed, ChangeOp, ChangesQuery, Cursor, CursorFault, DEFAULT_LIMIT,
    EntityKind,
};
use crate::domain::notice::NOTICE;
use crate::error::{Error, Result, Rule};
use crate::store::changes::{self, Change, ChangeKind};
use crate::store::positions::ChangeSeq;
use crate::store::{calls, collabs};
use crate::time::{Timestamp, now_ms};

/// Log rows retention looks at per pass.
const RETENTION_BATCH: u32 = 10_000;

fn kind(k: ChangeKind) -> EntityKind {
    match k {
        ChangeKind::Agent => EntityKind::Agent,
        ChangeKind::Call => EntityKind::Call,
        ChangeKind::Collab => EntityKind::Collab,
    }
}

impl App {
    /// One page of the feed, read in one snapshot (the log position and the data agree), and
    /// rendered there too: a page can hold hundreds of cards.
    pub async fn changes(&self, q: ChangesQuery) -> Result<Rendered> {
        self.blocking(move |app| {
            let limit = q.limit.unwrap_or(DEFAULT_LIMIT);
            let conn = app.read()?;
            let snapshot = conn.unchecked_transaction()?;
            let epoch = changes::epoch(&snapshot)?;
            let newest = changes::max_seq(&snapshot)?.get();
            let after = match q.after.as_deref() {
                // A reading from the beginning: its horizon is the newest seq now.
                None => Cursor::issued(epoch, 0, newest),
                // Past the newest seq ever handed out, the primary never issued it. A replica's
                // copy may not have reached a cursor its primary issued: there it reads as
                // "nothing new yet".
                Some(text) => match Cursor::parse(text, epoch) {
                    Err(CursorFault::OtherFeed) => return Err(Error::FeedCursorOfAnotherFeed),
                    Ok(c) if app.role().replica().is_some() || c.seq.max(c.horizon) <= newest => c,
                    _ => return Err(Error::validation("after", Rule::Cursor)),
                },
            };
            if after.missed_a_forgotten_deletion(changes::pruned_through(&snapshot)?.get()) {
                return Err(Error::CursorExpired);
            }
            let mut rows = changes::after(&snapshot, ChangeSeq::new(after.seq), limit + 1)?;
            let has_more = rows.len() > limit as usize;
            rows.truncate(limit as usize);
            let mut data = app.current(&snapshot, &rows)?;
            // With nothing new, the cursor given, as it was written.
            let next = match (rows.last(), q.after) {
                (Some(c), _) => Cursor::issued(epoch, c.seq.get(), after.horizon).to_string(),
                (None, Some(given)) => given,
                (None, None) => after.to_string(),
            };
            let changes = rows
                .into_iter()
                .map(|c| {
                    let found = data.remove(&(c.kind, c.id.clone()));
                    ChangeEntry {
                        cursor: Cursor::issued(epoch, c.seq.get(), after.horizon).to_string(),
                        kind: kind(c.kind),
                        op: if found.is_some() { ChangeOp::Upsert } else { ChangeOp::Delete },
                        id: c.id,
                        at: Timestamp(c.at),
                        data: found,
                    }
                })
                .collect();
            Rendered::of(&ChangeFeed { notice: NOTICE, changes, next, has_more })
        })
        .await
    }

    /// What a public read shows now of each entity of `rows` that is publicly readable: one
    /// statement per kind for the whole page.
    fn current(
        &self,
        conn: &rusqlite::Connection,
        rows: &[Change],
    ) -> Result<HashMap<(ChangeKind, String), ChangeData>> {
        let keys =
            |k: ChangeKind| -> Vec<i64> { rows.iter().filter(|c| c.kind == k).map(|c| c.key).collect() };
        let mut out = HashMap::with_capacity(rows.len());
        for (_, agent) in views::agents_by_ids(conn, &keys(ChangeKind::Agent), now_ms())? {
            out.insert((ChangeKind::Agent, agent.handle.clone()), ChangeData::Agent(Box::new(agent)));
        }
        for row in calls::by_keys(conn, &keys(ChangeKind::Call))?.into_iter().filter(|c| c.visible) {
            out.insert((ChangeKind::Call, row.summary.id.clone()), ChangeData::Call(Box::new(row.summary)));
        }
        let collab_ids: Vec<String> =
            rows.iter().filter(|c| c.kind == ChangeKind::Collab).map(|c| c.id.clone()).collect();
        for row in collabs::public_by_ids(conn, &collab_ids)? {
            out.insert(
                (ChangeKind::Collab, row.id.clone()),
                ChangeData::Collab(Box::new(views::collab(row, false))),
            );
        }
        Ok(out)
    }

    /// Forgets deletions older than the retention (`AGENTDIR_CHANGES_RETENTION`); a cursor that
    /// may have missed one of them is then `cursor_expired` (`Cursor::missed_a_forgotten_deletion`).
    pub(crate) fn forget_old_deletions(&self) -> Result<usize> {
        let cutoff = now_ms() - self.settings.changes_retention_ms;
        self.write_blocking(move |tx| changes::forget_old_deletions(tx, cutoff, RETENTION_BATCH))
    }
}
