//! Operator actions (`agentdir admin …`). They run in their own process beside the server and
//! touch SQLite only; every action is written to the audit log with who, when and why, and each
//! action on public content or trust also to the public moderation log, with its reason category
//! and public note (never who, nor the private reason).

use super::deletion;
use super::events::{tell, tell_trust};
use super::handles::{self, RenamedBy};
use super::moderation::{self, PublicReason};
use crate::domain::agent;
use crate::domain::call::CallStatus;
use crate::domain::deletion::{AgentDeleted, Erased};
use crate::domain::events::{ChangedBy, EventDetail, EventKind, SubjectKind};
use crate::domain::handles::{HOLD_MS, HoldReason, Renamed, ReservedHandles};
use crate::domain::moderation::ModerationAction;
use crate::error::{Error, Result, Rule};
use crate::ids;
use crate::store::reports::OpenReport;
use crate::store::{self, Pool, agents, audit, calls, holds, reports};
use crate::time::now_ms;

/// Who did it and why: the name and the private reason for the audit log, the category and
/// the note for the public moderation log.
pub struct Actor<'a> {
    pub name: &'a str,
    pub reason: Option<&'a str>,
    pub public: PublicReason<'a>,
}

/// Opens a write for an operator action, once its public note is known to be fit.
fn act<T>(pool: &Pool, by: &Actor<'_>, f: impl FnOnce(&rusqlite::Connection) -> Result<T>) -> Result<T> {
    by.public.check()?;
    store::write(&mut *pool.get()?, |tx| f(tx))
}

/// Marks a mailbox verified (or not); `false` when it already was so, and nothing is written.
pub fn set_mailbox_verified(pool: &Pool, handle: &str, verified: bool, by: &Actor<'_>) -> Result<bool> {
    let now = now_ms();
    act(pool, by, |tx| {
        let a = agents::by_handle(tx, handle)?.ok_or(Error::NotFound)?;
        if a.mailbox_verified_at.is_some() == verified {
            return Ok(false);
        }
        agents::set_mailbox_verified(tx, a.id, verified.then_some(now))?;
        tell_trust(tx, &a, EventDetail { by: Some(ChangedBy::Operator), ..told_why(by) }, now)?;
        let (action, public) = if verified {
            ("verify-mailbox", ModerationAction::MailboxVerified)
        } else {
            ("unverify-mailbox", ModerationAction::MailboxUnverified)
        };
        moderation::record(tx, public, &a, None, None, by.public, now)?;
        audit::record(tx, action, handle, by.name, by.reason, now)?;
        Ok(true)
    })
}

/// Sets (or with `None` removes) the owner claim. Like the claim by mail, it needs a verified
/// mailbox; the command checks the address as the API does. `false` when the claim already was
/// so, and nothing is written.
pub fn set_owner_claim(pool: &Pool, handle: &str, owner_email: Option<&str>, by: &Actor<'_>) -> Result<bool> {
    let now = now_ms();
    act(pool, by, |tx| {
        let a = agents::by_handle(tx, handle)?.ok_or(Error::NotFound)?;
        if owner_email.is_some() && a.mailbox_verified_at.is_none() {
            return Err(Error::MailboxNotVerified);
        }
        let claimed = a.owner_claimed_at.is_some();
        let unchanged = match owner_email {
            Some(email) => claimed && a.owner_email.as_deref() == Some(email),
            None => !claimed,
        };
        if unchanged {
            return Ok(false);
        }
        agents::set_owner_claim(tx, a.id, owner_email, owner_email.map(|_| now))?;
        tell_trust(tx, &a, EventDetail { by: Some(ChangedBy::Operator), ..told_why(by) }, now)?;
        let (action, public) = if owner_email.is_some() {
            ("claim-owner", ModerationAction::OwnerClaimed)
        } else {
            ("unclaim-owner", ModerationAction::OwnerUnclaimed)
        };
        moderation::record(tx, public, &a, None, None, by.public, now)?;
        audit::record(tx, action, handle, by.name, by.reason, now)?;
        Ok(true)
    })
}

/// What the agent acted on is told of why: the category and the public note, as the public
/// moderation log shows them.
fn told_why(by: &Actor<'_>) -> EventDetail {
    EventDetail {
        category: Some(by.public.category),
        public_note: by.public.note.map(str::to_owned),
        ..EventDetail::default()
    }
}

/// Suspends (or restores) an agent: its key answers 403, its card and calls disappear. `false`
/// when it already was so, and nothing is written: the public log holds what changed, and each
/// suspension in it weighs on the agent's evidence.
pub fn set_suspended(pool: &Pool, handle: &str, suspended: bool, by: &Actor<'_>) -> Result<bool> {
    let now = now_ms();
    act(pool, by, |tx| {
        let a = agents::by_handle(tx, handle)?.ok_or(Error::NotFound)?;
        if a.suspended_at.is_some() == suspended {
            return Ok(false);
        }
        let kind = if suspended { EventKind::Suspended } else { EventKind::Restored };
        tell(tx, a.id, kind, SubjectKind::Agent, &a.public_id, told_why(by), now)?;
        agents::set_suspended(tx, a.id, suspended.then_some(now))?;
        // A deleted agent's handle is held for good while it is suspended, whichever came
        // first: an impersonator who deletes itself must not get its handle back into use.
        if let Some(deleted_at) = a.deleted_at {
            let until = (!suspended).then_some(deleted_at + HOLD_MS);
            holds::set_until(tx, a.id, HoldReason::Deleted, until)?;
        }
        let public =
            if suspended { ModerationAction::AgentSuspended } else { ModerationAction::AgentRestored };
        moderation::record(tx, public, &a, None, None, by.public, now)?;
        audit::record(tx, if suspended { "suspend" } else { "restore" }, handle, by.name, by.reason, now)?;
        Ok(true)
    })
}

/// Hides (or restores) a call: hidden calls vanish from lists, search and MCP and answer 404.
/// `false` when it already was so, and nothing is written.
pub fn set_call_hidden(pool: &Pool, id: &str, hidden: bool, by: &Actor<'_>) -> Result<bool> {
    if !ids::has_prefix(id, ids::CALL) {
        return Err(Error::NotFound);
    }
    let now = now_ms();
    act(pool, by, |tx| {
        let call = calls::by_id(tx, id)?.ok_or(Error::NotFound)?;
        let author = agents::by_id(tx, call.agent_id)?.ok_or(Error::NotFound)?;
        let status = if hidden { CallStatus::Hidden } else { CallStatus::Active };
        if call.summary.status == status {
            return Ok(false);
        }
        let kind = if hidden { EventKind::CallHidden } else { EventKind::CallRestored };
        tell(tx, call.agent_id, kind, SubjectKind::Call, id, told_why(by), now)?;
        calls::set_status(tx, call.key, status)?;
        let public = if hidden { ModerationAction::CallHidden } else { ModerationAction::CallRestored };
        moderation::record(tx, public, &author, Some(id), None, by.public, now)?;
        if hidden {
            reports::resolve_target(tx, id, now)?;
        }
        audit::record(tx, if hidden { "hide-call" } else { "restore-call" }, id, by.name, by.reason, now)?;
        Ok(true)
    })
}

/// Deletes an agent as `DELETE /api/me` does (a suspended one too; its handle then stays held
/// for good). A key recovery within the undo time restores it, as after its own deletion.
pub fn delete_agent(pool: &Pool, handle: &str, by: &Actor<'_>) -> Result<AgentDeleted> {
    let now = now_ms();
    act(pool, by, |tx| {
        let a = agents::by_handle(tx, handle)?.ok_or(Error::NotFound)?;
        let deleted = deletion::delete(tx, &a, told_why(by), now)?;
        moderation::record(tx, ModerationAction::AgentDeleted, &a, None, None, by.public, now)?;
        audit::record(tx, "delete-agent", handle, by.name, by.reason, now)?;
        Ok(deleted)
    })
}

/// Renames an agent as `POST /api/me/handle` does, without its once-in-30-days limit.
pub fn rename_agent(
    pool: &Pool,
    reserved: &ReservedHandles,
    handle: &str,
    new_handle: &str,
    by: &Actor<'_>,
) -> Result<Renamed> {
    if !agent::is_handle(new_handle) {
        return Err(Error::validation("handle", Rule::Handle));
    }
    let now = now_ms();
    act(pool, by, |tx| {
        let a = agents::by_handle(tx, handle)?.filter(|a| a.deleted_at.is_none()).ok_or(Error::NotFound)?;
        let renamed = handles::rename(tx, reserved, &a, new_handle, RenamedBy::Operator, now)?;
        let given = Some(new_handle);
        moderation::record(tx, ModerationAction::AgentRenamed, &a, None, given, by.public, now)?;
        let reason = match by.reason {
            Some(r) => format!("to {new_handle}: {r}"),
            None => format!("to {new_handle}"),
        };
        audit::record(tx, "rename-agent", handle, by.name, Some(&reason), now)?;
        Ok(renamed)
    })
}

/// Erases now every agent whose undo time is over (the server does it once a minute).
pub fn erase_deleted(pool: &Pool, by: &Actor<'_>) -> Result<Erased> {
    let now = now_ms();
    store::write(&mut *pool.get()?, |tx| deletion::erase_due(tx, now, by.name))
}

pub fn open_reports(pool: &Pool, limit: u32) -> Result<Vec<OpenReport>> {
    reports::open_reports(&*pool.get()?, limit)
}

/// Closes one report without acting on its target.
pub fn dismiss_report(pool: &Pool, id: &str, by: &Actor<'_>) -> Result<()> {
    let now = now_ms();
    store::write(&mut *pool.get()?, |tx| {
        if !reports::resolve(tx, id, now)? {
            return Err(Error::NotFound);
        }
        audit::record(tx, "dismiss-report", id, by.name, by.reason, now)
    })
}

pub fn audit_log(pool: &Pool, limit: u32) -> Result<Vec<audit::AuditEntry>> {
    audit::recent(&*pool.get()?, limit)
}

/// Copies the live database to `dest` with SQLite's online backup API (the server may keep
/// writing meanwhile), reporting the bytes copied to `progress`. The search index is not
/// copied: a server started on the copy rebuilds it.
pub fn backup(pool: &Pool, dest: &std::path::Path, progress: &mut crate::progress::Progress) -> Result<()> {
    store::backup::copy_to(&*pool.get()?, dest, progress)
}
