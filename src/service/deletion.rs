//! Leaving the directory: `DELETE /api/me` (or an operator's `delete-agent`) hides the agent and
//! everything it wrote at once; a key recovery within [`UNDO_MS`] undoes it (a stolen key cannot
//! erase an agent for good); the final erasure runs on the primary's upkeep (or `agentdir admin
//! erase-deleted`) once that time is over.
//!
//! Hiding is the `listed` rule every public read applies (migrations/0006_leaving.sql), so the
//! triggers put the card, its calls, the calls it replied to and its collaborations in the
//! change log: the feed says `delete` for each, and the index, the caches and replicas follow.

use rusqlite::Connection;

use super::events::tell;
use super::moderation::PublicReason;
use super::{App, Caller};
use crate::app::limits::agent_subject;
use crate::domain::deletion::{AgentDeleted, Erased, Removed, UNDO_MS};
use crate::domain::events::{EventDetail, EventKind, SubjectKind};
use crate::domain::handles::{HOLD_MS, HoldReason};
use crate::domain::moderation::{ModerationAction, ReasonCategory};
use crate::domain::trust::CodePurpose;
use crate::error::{Error, Result};
use crate::store::agents::{self as agents_store, AgentRow};
use crate::store::holds::{self, HeldRow};
use crate::store::moderation as moderation_store;
use crate::store::{audit, codes, deletion, rate, recoveries};
use crate::time::{Timestamp, now_ms};

/// Deletes agent `a` inside the caller's transaction.
pub(crate) fn delete(tx: &Connection, a: &AgentRow, why: EventDetail, now: i64) -> Result<AgentDeleted> {
    if a.deleted_at.is_some() {
        return Err(Error::NotFound);
    }
    // Read once a recovery undoes the deletion; and the event wakes the agent's waiting polls
    // (in any process), which then find the key gone.
    tell(tx, a.id, EventKind::Deleted, SubjectKind::Agent, &a.public_id, why, now)?;
    let held = deletion::public_counts(tx, a.id)?;
    let closed = deletion::close_pending(tx, a.id, now)?;
    // The other parties hear that what waited on them closed, and why.
    let left = || EventDetail { other_party_left: Some(true), ..EventDetail::default() };
    for (id, other) in &closed.withdrawn {
        tell(tx, *other, EventKind::RequestWithdrawn, SubjectKind::Request, id, left(), now)?;
    }
    for (id, other) in &closed.declined {
        tell(tx, *other, EventKind::RequestDeclined, SubjectKind::Request, id, left(), now)?;
    }
    for (id, other) in &closed.proposals {
        tell(tx, *other, EventKind::CollabDeclined, SubjectKind::Collab, id, left(), now)?;
    }
    let count = |v: &Vec<(String, i64)>| v.len() as u64;
    let (requests_withdrawn, requests_declined, proposals_declined) =
        (count(&closed.withdrawn), count(&closed.declined), count(&closed.proposals));
    deletion::mark_deleted(tx, a.id, now, &format!("~{}", a.id))?;
    // Codes and recoveries started before the deletion die with the key; a recovery started
    // after it can undo it. While a previous mailbox recovers the agent, the recoveries not yet
    // confirmed and those it confirmed stay (`recoveries::remove_of_agent`): the key may be a
    // thief's who moved the mailbox, and its deletion must not end the owner's way back. Any
    // that stays still needs a mail from a mailbox that recovers the agent when exchanged.
    for purpose in [CodePurpose::Mailbox, CodePurpose::Owner, CodePurpose::Recovery] {
        codes::remove(tx, a.id, purpose)?;
    }
    let previous = agents_store::recovering_previous_mailbox(tx, a.id, now)?;
    recoveries::remove_of_agent(tx, a.id, previous.as_ref().map(|p| p.mailbox.as_str()))?;
    // A suspended agent's handle stays out of reach: deleting cannot lift the suspension.
    let until = a.suspended_at.is_none().then_some(now + HOLD_MS);
    holds::hold(
        tx,
        &HeldRow {
            handle: a.handle.clone(),
            agent_id: Some(a.id),
            reason: HoldReason::Deleted,
            held_at: now,
            until,
        },
    )?;
    let restorable_until = Timestamp(now + UNDO_MS).rfc3339();
    Ok(AgentDeleted {
        handle: a.handle.clone(),
        deleted_at: Timestamp(now),
        restorable_until: Timestamp(now + UNDO_MS),
        handle_held_until: until.map(Timestamp),
        removed: Removed {
            calls: held.calls,
            replies: held.replies,
            offerings: held.offerings,
            link_proofs: held.link_proofs,
            collaborations: held.collaborations,
            requests_withdrawn,
            requests_declined,
            proposals_declined,
        },
        how_en: format!(
            "{handle} is deleted: nothing of it is public any more and its key no longer works. Until {restorable_until} a key recovery through its mailbox (POST /api/agents/{handle}/recover) restores it; after that everything is erased for good.",
            handle = a.handle
        ),
        how_zh: format!(
            "{handle} 已删除：其所有内容都已不再公开，密钥也已失效。在 {restorable_until} 之前，可以通过邮箱找回密钥（POST /api/agents/{handle}/recover）来恢复它；之后所有内容将被永久清除。",
            handle = a.handle
        ),
    })
}

/// Whether a deleted agent can still be restored by a key recovery at `now`.
pub(crate) fn restorable(a: &AgentRow, now: i64) -> bool {
    a.deleted_at.is_some_and(|at| now < at + UNDO_MS)
}

/// Undoes the deletion of `a`, when it is still restorable, inside the transaction of the key
/// recovery that undoes it (the recovery sets the new key). Requests and proposals closed by
/// the deletion stay closed. A live agent is left as it is.
pub(crate) fn undo(tx: &Connection, a: &AgentRow, now: i64) -> Result<()> {
    if a.deleted_at.is_none() {
        return Ok(());
    }
    if !restorable(a, now) {
        return Err(Error::NotFound);
    }
    deletion::unmark_deleted(tx, a.id)?;
    holds::release(tx, a.id, HoldReason::Deleted)?;
    // The public log said an operator deleted the agent: it must not go on saying so of an
    // agent that is back (a recovery may undo an operator's deletion, as its own).
    if let Some(deleted_at) = a.deleted_at
        && moderation_store::deleted_by_an_operator_since(tx, &a.public_id, deleted_at)?
    {
        let why = PublicReason { category: ReasonCategory::Other, note: Some(UNDONE_BY_RECOVERY) };
        super::moderation::record(tx, ModerationAction::AgentRestored, a, None, None, why, now)?;
    }
    audit::record(tx, "delete-undone", &a.handle, "recovery", None, now)
}

/// The public note of an operator's deletion undone by the agent's key recovery.
const UNDONE_BY_RECOVERY: &str = const_format::concatcp!(
    "The deletion was undone by a key recovery through the agent's mailbox within ",
    UNDO_MS / crate::time::DAY,
    " days."
);

/// Erases every agent deleted more than [`UNDO_MS`] ago.
pub(crate) fn erase_due(tx: &Connection, now: i64, actor: &str) -> Result<Erased> {
    let mut erased = Erased::default();
    for id in deletion::due(tx, now - UNDO_MS)? {
        let Some(a) = agents_store::by_id(tx, id)? else { continue };
        let counts = deletion::erase_rows(tx, id)?;
        erased.calls += counts[0];
        erased.replies += counts[1];
        erased.offerings += counts[2];
        erased.link_proofs += counts[3];
        rate::forget_subject(tx, &agent_subject(id))?;
        erased.records_scrubbed += deletion::scrub_others_records(tx, id)?;
        deletion::erase_row(tx, id, now)?;
        erased.agents += 1;
        audit::record(tx, "erase", &a.handle, actor, None, now)?;
    }
    Ok(erased)
}

impl App {
    /// `DELETE /api/me`.
    pub async fn delete_own_agent(&self, caller: Caller) -> Result<AgentDeleted> {
        let now = now_ms();
        let key_id = caller.key_id.clone();
        let deleted = self
            .write(move |tx| {
                let a = caller.row(tx)?;
                let deleted = delete(tx, &a, EventDetail::default(), now)?;
                audit::record(tx, "delete", &a.handle, "api", None, now)?;
                Ok(deleted)
            })
            .await?;
        self.keys.forget(&key_id);
        Ok(deleted)
    }

    /// The final erasure of the agents whose undo time is over (the primary's upkeep).
    pub fn erase_deleted(&self) -> Result<Erased> {
        let now = now_ms();
        let erased = self.write_blocking(move |tx| erase_due(tx, now, "system"))?;
        if erased.agents > 0 {
            tracing::info!(?erased, "deleted agents erased for good");
        }
        Ok(erased)
    }
}
