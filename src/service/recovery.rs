//! Key recovery through the mailbox: starting one (public), its mail step (`inbound`), and the
//! exchange of the token for a new key. The mail may come from the agent's mailbox or, for
//! [`PREVIOUS_MAILBOX_DAYS`] after a change of it, from the mailbox verified before the change,
//! whose recovery undoes the change: a stolen key cannot lock the owner out.

use rusqlite::Connection;

use super::events::{tell, tell_recovery_started};
use super::trust::new_code;
use super::{App, deletion, handles};
use crate::app::limits::Persistent;
use crate::app::tokens;
use crate::domain::agent;
use crate::domain::events::{ChangedBy, EventDetail, EventKind, SubjectKind};
use crate::domain::recovery::{
    PREVIOUS_MAILBOX_DAYS, PreviousMailbox, RECOVERY_MINUTES, Recovered, RecoveryExchange, RecoveryStarted,
};
use crate::domain::trust::CodePurpose;
use crate::error::{Error, Result};
use crate::store::agents::AgentRow;
use crate::store::recoveries::{self, RecoveryRow};
use crate::store::{agents, audit, codes};
use crate::time::{SECOND, Timestamp, now_ms};

const LIFETIME_MS: i64 = RECOVERY_MINUTES * 60 * SECOND;

/// The mailbox of an agent a recovery mail proves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Through {
    /// The agent's mailbox now.
    Current,
    /// The mailbox verified before a change, within its days: the exchange puts it back.
    Previous(PreviousMailbox),
}

/// Through which mailbox of `a` a recovery mail from `from` recovers it at `now`, if any.
pub(crate) fn recovering_mailbox(
    conn: &Connection,
    a: &AgentRow,
    from: &str,
    now: i64,
) -> Result<Option<Through>> {
    if a.mailbox.eq_ignore_ascii_case(from) {
        return Ok(Some(Through::Current));
    }
    Ok(agents::recovering_previous_mailbox(conn, a.id, now)?
        .filter(|p| p.mailbox.eq_ignore_ascii_case(from))
        .map(Through::Previous))
}

/// Called as the mailbox of `a` is about to change: remembers the mailbox it replaces when that
/// one was verified, so that it recovers the agent for [`PREVIOUS_MAILBOX_DAYS`]. A change
/// within the days of an earlier one keeps what that one remembered (a thief who changes the
/// mailbox twice, verifying the first of its own, must not replace the owner's) and does not
/// extend them.
pub(crate) fn mailbox_changing(tx: &Connection, a: &AgentRow, now: i64) -> Result<()> {
    if agents::recovering_previous_mailbox(tx, a.id, now)?.is_some() {
        return Ok(());
    }
    let previous = a
        .mailbox_verified_at
        .is_some()
        .then(|| PreviousMailbox { mailbox: a.mailbox.clone(), changed_at: now });
    agents::set_previous_mailbox(tx, a.id, previous.as_ref())
}

impl App {
    /// `POST /api/agents/{handle}/recover`: a token and the mail to send. Every start is a
    /// recovery of its own, limited per client address only, so nobody who starts recoveries
    /// for a handle can cancel, replace or rate-limit its owner's. The handle an agent had
    /// before its last rename (while held) starts the recovery of that agent: its owner may
    /// know only that one.
    pub async fn start_recovery(&self, handle: String, client_ip: String) -> Result<RecoveryStarted> {
        if !agent::is_handle(&handle) {
            return Err(Error::NotFound);
        }
        let now = now_ms();
        let token = tokens::RECOVERY.issue();
        let code = new_code();
        let expires_at = now + LIFETIME_MS;
        let (token_id, token_hash) = (token.id.clone(), tokens::digest(&token.secret).to_vec());
        let subject = CodePurpose::Recovery.subject(&code);
        let app = self.clone();
        let shown = self
            .write(move |tx| {
                let found = match agents::by_handle(tx, &handle)? {
                    Some(a) => Some(a),
                    None => handles::renamed_from(tx, &handle, now)?,
                };
                let a = match found {
                    Some(a) if a.suspended_at.is_some() => return Err(Error::Suspended),
                    // A deleted agent can recover (which undoes the deletion) while it is restorable.
                    Some(a) if a.deleted_at.is_some() && !deletion::restorable(&a, now) => {
                        return Err(Error::NotFound);
                    }
                    Some(a) => a,
                    None => return Err(Error::NotFound),
                };
                app.limits.check(tx, Persistent::Recovery, &client_ip, now)?;
                recoveries::insert(
                    tx,
                    &RecoveryRow {
                        token_id,
                        agent_id: a.id,
                        token_hash,
                        code,
                        expires_at,
                        confirmed_at: None,
                        confirmed_from: None,
                    },
                )?;
                app.limits.record(tx, Persistent::Recovery, &client_ip, now)?;
                audit::record(tx, "recovery-started", &a.handle, "api", None, now)?;
                tell_recovery_started(tx, a.id, &a.public_id, now)?;
                Ok(a.handle)
            })
            .await?;
        let send_to = format!("verify@{}", self.settings.mail_domain);
        let until = Timestamp(expires_at).rfc3339();
        Ok(RecoveryStarted {
            how_en: format!(
                "To get a new API key for {shown}, send one email from the mailbox registered for it (or, within {PREVIOUS_MAILBOX_DAYS} days of a change of that mailbox, from the mailbox verified before the change, which the recovery then puts back) to {send_to} with exactly this subject: {subject}. Then POST /api/recover with {{\"recovery_token\": …}} before {until}. The token works once; the old key stops working then. Keep the token secret."
            ),
            how_zh: format!(
                "要为 {shown} 获取新的 API 密钥，请用该智能体登记的邮箱（或在该邮箱更改后的 {PREVIOUS_MAILBOX_DAYS} 天内，用更改前已验证的邮箱，找回后该邮箱将恢复为智能体的邮箱）向 {send_to} 发送一封邮件，主题必须完全是：{subject}。随后在 {until} 之前调用 POST /api/recover，请求体为 {{\"recovery_token\": …}}。该令牌只能使用一次，届时旧密钥立即失效。请妥善保管令牌。"
            ),
            recovery_token: token.full,
            send_to,
            subject,
            expires_at: Timestamp(expires_at),
        })
    }

    /// `POST /api/recover`: the new key, once the mail confirmed the recovery.
    pub async fn complete_recovery(&self, input: RecoveryExchange) -> Result<Recovered> {
        let (token_id, secret) = tokens::RECOVERY.parse(&input.recovery_token).ok_or(Error::NotFound)?;
        let (token_id, secret) = (token_id.to_owned(), secret.to_owned());
        let now = now_ms();
        // Checked before hashing a new key, so a wrong token costs no argon2 run.
        let found = {
            let token_id = token_id.clone();
            self.blocking(move |app| recoveries::by_token_id(&*app.read()?, &token_id)).await?
        };
        let live = found.filter(|r| tokens::matches(&secret, &r.token_hash) && r.expires_at > now);
        let Some(recovery) = live else {
            return Err(Error::NotFound);
        };
        if recovery.confirmed_at.is_none() {
            return Err(Error::RecoveryNotConfirmed);
        }
        let key = self.new_key().await?;
        let (key_id, hash) = (key.key_id.clone(), key.hash.clone());
        let (handle, old_key_id) = self
            .write(move |tx| {
                // Decided again under the write lock: a concurrent exchange may have come first.
                let r = recoveries::by_token_id(tx, &token_id)?.ok_or(Error::NotFound)?;
                if r.expires_at <= now_ms() {
                    return Err(Error::NotFound);
                }
                if r.confirmed_at.is_none() {
                    return Err(Error::RecoveryNotConfirmed);
                }
                let a = agents::by_id(tx, r.agent_id)?.ok_or(Error::NotFound)?;
                if a.suspended_at.is_some() {
                    return Err(Error::Suspended);
                }
                // The mailbox the mail came from must still recover the agent (a recovery
                // confirmed before this column existed came from the mailbox of then).
                let through = match &r.confirmed_from {
                    None => Through::Current,
                    Some(from) => recovering_mailbox(tx, &a, from, now)?.ok_or(Error::NotFound)?,
                };
                // A recovery within the undo time of a deletion undoes it.
                deletion::undo(tx, &a, now)?;
                // This exchange outlives the other recoveries of the agent, but one through the
                // mailbox that replaced a verified one still in its days may be the thief's own
                // (the previous mailbox's holder is the owner as far as anyone can tell): the
                // recoveries under way through the previous mailbox outlive it, or the thief
                // would end each of the owner's with one of its own until those days ran out.
                // (A mailbox set back to the previous one is the owner's again: no thief's.)
                let owners_previous = match (&through, agents::recovering_previous_mailbox(tx, a.id, now)?) {
                    (Through::Current, Some(previous))
                        if !previous.mailbox.eq_ignore_ascii_case(&a.mailbox) =>
                    {
                        Some(previous.mailbox)
                    }
                    _ => None,
                };
                recoveries::remove(tx, &token_id)?;
                recoveries::remove_of_agent(tx, a.id, owners_previous.as_deref())?;
                agents::set_key(tx, a.id, &key_id, &hash)?;
                codes::remove_started_by_key(tx, a.id)?;
                // Renames before now no longer pace the owner's (handles::rename): they may have
                // been a thief's. Not when the recovery may be the thief's own.
                if owners_previous.is_none() {
                    agents::set_recovered(tx, a.id, now)?;
                }
                let by = || EventDetail { by: Some(ChangedBy::Recovery), ..EventDetail::default() };
                tell(tx, a.id, EventKind::KeyRotated, SubjectKind::Agent, &a.public_id, by(), now)?;
                match through {
                    // The mail proved the mailbox.
                    Through::Current if a.mailbox_verified_at.is_none() => {
                        agents::set_mailbox_verified(tx, a.id, Some(now))?;
                    }
                    Through::Current => {}
                    // A recovery through the previous mailbox undoes the change: the mailbox the
                    // change brought (and a verification of it under way) no longer count.
                    Through::Previous(previous) => {
                        agents::restore_mailbox(tx, a.id, &previous.mailbox, now)?;
                        let (kind, sub) = (EventKind::MailboxChanged, &a.public_id);
                        tell(tx, a.id, kind, SubjectKind::Agent, sub, by(), now)?;
                        audit::record(tx, "mailbox-restored", &a.handle, "recovery", None, now)?;
                    }
                }
                super::events::tell_trust(tx, &a, by(), now)?;
                audit::record(tx, "recovery-completed", &a.handle, "api", None, now)?;
                Ok((a.handle, a.key_id))
            })
            .await?;
        self.keys.forget(&old_key_id);
        self.keys.remember_issued(&key);
        Ok(Recovered { handle, api_key: key.key })
    }
}
