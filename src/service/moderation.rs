//! The public moderation log: reading it (`GET /api/moderation`), and what an operator command
//! appends to it (`record`, in the transaction of the action, beside the audit log).

use rusqlite::Connection;

use super::App;
use crate::domain::moderation::{
    DEFAULT_LIMIT, ModerationAction, ModerationEntry, ModerationLog, ModerationQuery, ReasonCategory, Target,
    TargetKind, cursor, note_is_fit, parse_cursor,
};
use crate::domain::notice::NOTICE;
use crate::error::{Error, Result, Rule};
use crate::store::agents::AgentRow;
use crate::store::moderation::{self as store, NewAction};
use crate::time::Timestamp;

/// Why an operator acts, as the public learns it: a category and an optional note.
#[derive(Debug, Clone, Copy)]
pub struct PublicReason<'a> {
    pub category: ReasonCategory,
    pub note: Option<&'a str>,
}

impl PublicReason<'_> {
    /// Refuses a note the public log would not show as written.
    pub fn check(&self) -> Result<()> {
        let max = crate::domain::moderation::PUBLIC_NOTE_MAX;
        match self.note {
            Some(note) if note_is_fit(note) => Ok(()),
            Some(note) if note.chars().count() > max => {
                Err(Error::validation("public_note", Rule::MaxLength(max as u64)))
            }
            // Within the length, so a line break or another control character.
            Some(_) => Err(Error::validation("public_note", Rule::OneLine)),
            None => Ok(()),
        }
    }
}

/// Appends an action on agent `a` (or, with `call`, on that call of its) to the public log.
pub(crate) fn record(
    tx: &Connection,
    action: ModerationAction,
    a: &AgentRow,
    call: Option<&str>,
    new_handle: Option<&str>,
    why: PublicReason<'_>,
    at: i64,
) -> Result<()> {
    store::record(
        tx,
        &NewAction {
            action,
            target_kind: if call.is_some() { TargetKind::Call } else { TargetKind::Agent },
            agent_sub: Some(&a.public_id),
            handle: Some(&a.handle),
            call_id: call,
            new_handle,
            category: why.category,
            public_note: why.note,
            at,
        },
    )
}

impl App {
    /// `GET /api/moderation`: operator actions after the cursor, oldest first.
    pub async fn moderation_log(&self, q: ModerationQuery) -> Result<ModerationLog> {
        let after = match q.after.as_deref() {
            None => None,
            Some(text) => Some(parse_cursor(text).ok_or(Error::validation("after", Rule::Cursor))?),
        };
        let limit = q.limit.unwrap_or(DEFAULT_LIMIT);
        self.blocking(move |app| {
            let conn = app.read()?;
            let snapshot = conn.unchecked_transaction()?;
            // As the change feed: past the newest seq handed out, a primary never issued it.
            let after = match after {
                Some(seq) if app.role().replica().is_none() && seq > store::max_seq(&snapshot)? => {
                    return Err(Error::validation("after", Rule::Cursor));
                }
                Some(seq) => seq,
                None => 0,
            };
            let mut rows = store::after(&snapshot, after, limit + 1)?;
            let has_more = rows.len() > limit as usize;
            rows.truncate(limit as usize);
            let next = rows.last().map_or(after, |r| r.seq);
            let actions = rows
                .into_iter()
                .map(|r| ModerationEntry {
                    cursor: cursor(r.seq),
                    action: r.action,
                    at: Timestamp(r.at),
                    target: Target {
                        kind: r.target_kind,
                        sub: r.agent_sub,
                        handle: r.handle,
                        post_id: r.call_id,
                        new_handle: r.new_handle,
                    },
                    category: r.category,
                    public_note: r.public_note,
                })
                .collect();
            Ok(ModerationLog { notice: NOTICE, actions, next: cursor(next), has_more })
        })
        .await
    }
}
