//! Handles: who may take one (reserved and held handles), renaming, and where an old handle
//! leads.

use rusqlite::Connection;

use super::events::tell;
use super::{App, Caller};
use crate::derived::views::{own_profile, visible_agent};
use crate::domain::events::{ChangedBy, EventDetail, EventKind, SubjectKind};
use crate::domain::handles::{HOLD_MS, HandleChange, HoldReason, RENAME_EVERY_MS, Renamed, ReservedHandles};
use crate::error::{Error, RateRule, Result};
use crate::store::agents::{self as agents_store, AgentRow};
use crate::store::audit;
use crate::store::holds::{self, HeldRow};
use crate::time::{Timestamp, now_ms, seconds_until};

/// Whether `agent` (or, with `None`, a new registration) may take `handle`: not another agent's,
/// not held for someone else. An agent may take back its own previous handle.
pub(crate) fn ensure_free(conn: &Connection, handle: &str, agent: Option<i64>, now: i64) -> Result<()> {
    if agents_store::by_handle(conn, handle)?.is_some() {
        return Err(Error::HandleTaken);
    }
    match holds::live(conn, handle, now)? {
        Some(h) if h.reason == HoldReason::Renamed && h.agent_id.is_some() && h.agent_id == agent => Ok(()),
        Some(_) => Err(Error::HandleTaken),
        None => Ok(()),
    }
}

/// The agent that had `old` before its last rename, while `old` is held for it; listed or not
/// (the caller decides what a suspended or deleted agent may do).
pub(crate) fn renamed_from(conn: &Connection, old: &str, now: i64) -> Result<Option<AgentRow>> {
    let Some(h) = holds::live(conn, old, now)? else {
        return Ok(None);
    };
    match h.agent_id.filter(|_| h.reason == HoldReason::Renamed) {
        Some(agent_id) => agents_store::by_id(conn, agent_id),
        None => Ok(None),
    }
}

/// The listed agent `handle` names, or named before its last rename while the handle is held
/// for it: what a contact request or a collaboration proposal sent to a handle reaches, as the
/// old handle's card answers 301 to the new one.
pub(crate) fn reachable_agent(conn: &Connection, handle: &str, now: i64) -> Result<AgentRow> {
    match visible_agent(conn, handle) {
        Err(Error::NotFound) => {
            renamed_from(conn, handle, now)?.filter(AgentRow::is_listed).ok_or(Error::NotFound)
        }
        found => found,
    }
}

/// Who renames: the agent itself (once per [`RENAME_EVERY_MS`]) or an operator (any time).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RenamedBy {
    Agent,
    Operator,
}

/// Moves agent `a` to `handle` inside the caller's transaction: the previous handle is held for
/// [`HOLD_MS`] and redirects to the agent; the one held before it is released.
pub(crate) fn rename(
    tx: &Connection,
    reserved: &ReservedHandles,
    a: &AgentRow,
    handle: &str,
    by: RenamedBy,
    now: i64,
) -> Result<Renamed> {
    if reserved.contains(handle) {
        return Err(Error::HandleReserved);
    }
    if a.handle == handle {
        return Err(Error::HandleTaken);
    }
    // Only the agent's own renames pace it. One before its last key recovery does not pace
    // taking back the handle it held before (the owner who got a stolen key's agent back takes
    // its handle back at once); any other handle waits, or a recovery between renames would
    // free each handle held for the agent at once.
    let recovered = agents_store::recovered_at(tx, a.id)?;
    let taking_back = renamed_from(tx, handle, now)?.is_some_and(|held_for| held_for.id == a.id);
    let paced_from = agents_store::renamed_at(tx, a.id)?
        .filter(|&last| !taking_back || recovered.is_none_or(|r| last > r));
    let next_rename_at = paced_from.map_or(now, |last| last + RENAME_EVERY_MS);
    if by == RenamedBy::Agent && next_rename_at > now {
        return Err(Error::RateLimited {
            retry_after: seconds_until(next_rename_at, now),
            rule: RateRule::Rename,
        });
    }
    ensure_free(tx, handle, Some(a.id), now)?;
    holds::release(tx, a.id, HoldReason::Renamed)?;
    agents_store::set_handle(tx, a.id, handle)?;
    if by == RenamedBy::Agent {
        agents_store::set_renamed_at(tx, a.id, now)?;
    }
    let until = now + HOLD_MS;
    holds::hold(
        tx,
        &HeldRow {
            handle: a.handle.clone(),
            agent_id: Some(a.id),
            reason: HoldReason::Renamed,
            held_at: now,
            until: Some(until),
        },
    )?;
    let detail = EventDetail {
        by: Some(match by {
            RenamedBy::Agent => ChangedBy::Agent,
            RenamedBy::Operator => ChangedBy::Operator,
        }),
        previous_handle: Some(a.handle.clone()),
        handle: Some(handle.to_owned()),
        ..EventDetail::default()
    };
    tell(tx, a.id, EventKind::HandleChanged, SubjectKind::Agent, &a.public_id, detail, now)?;
    let renamed = agents_store::by_id(tx, a.id)?.ok_or(Error::Internal)?;
    Ok(Renamed {
        previous_handle: a.handle.clone(),
        previous_held_until: Timestamp(until),
        next_rename_at: Timestamp(match by {
            RenamedBy::Agent => now + RENAME_EVERY_MS,
            RenamedBy::Operator => next_rename_at,
        }),
        profile: own_profile(tx, &renamed, now)?,
    })
}

impl App {
    /// `POST /api/me/handle`.
    pub async fn rename(&self, caller: Caller, input: HandleChange) -> Result<Renamed> {
        let now = now_ms();
        let app = self.clone();
        self.write(move |tx| {
            let a = caller.row(tx)?;
            let renamed =
                rename(tx, &app.settings.reserved_handles, &a, &input.handle, RenamedBy::Agent, now)?;
            audit::record(tx, "rename", &renamed.previous_handle, "api", Some(&input.handle), now)?;
            Ok(renamed)
        })
        .await
    }

    /// The handle a renamed agent now has, when `old` is its held previous handle and the agent
    /// is public.
    pub async fn moved_to(&self, old: String) -> Result<Option<String>> {
        self.blocking(move |app| {
            let conn = app.read()?;
            Ok(renamed_from(&conn, &old, now_ms())?.filter(AgentRow::is_listed).map(|a| a.handle))
        })
        .await
    }
}
