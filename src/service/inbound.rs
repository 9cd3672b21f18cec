//! Completing a mailbox verification, an owner claim or the mail step of a key recovery from an
//! inbound message. Runs in the `agentdir inbound-mail` process beside the server: it touches
//! SQLite only, and the server follows the change log, so its reads show the new trust level at
//! once.

use super::events::{by, tell_trust};
use super::recovery::recovering_mailbox;
use super::trust::CODE_LEN;
use crate::domain::events::ChangedBy;
use crate::domain::trust::CodePurpose;
use crate::error::Error;
use crate::store::{self, Pool, agents, audit, codes, recoveries};
use crate::time::now_ms;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MailOutcome {
    MailboxVerified {
        handle: String,
    },
    OwnerClaimed {
        handle: String,
    },
    /// The recovery token may now be exchanged for a new key.
    RecoveryConfirmed {
        handle: String,
    },
}

/// Why a message completed nothing; `Display` is a one-line English reason (the
/// `inbound-mail` command tells the MTA).
#[derive(Debug, thiserror::Error)]
pub enum MailRefused {
    #[error("database unavailable: {0}")]
    Unavailable(r2d2::Error),
    #[error("the subject holds no verification code")]
    NoCode,
    #[error("no live verification code in the subject (wrong, replaced or already used)")]
    NoLiveCode,
    #[error("the subject is not the exact subject given in the instructions")]
    NotTheSubject,
    #[error("the verification code has expired")]
    Expired,
    #[error("the message does not come from the address given in the instructions")]
    WrongSender,
    /// The code, or its agent, could not be read.
    #[error("{0}")]
    Unread(Error),
    /// The directory refused the step when it was applied (the code was used meanwhile, the
    /// mailbox changed, the owner is claimed already, …).
    #[error("{}", .0.messages().en)]
    Refused(Error),
}

/// A code a message may carry: a mailbox or owner code, or a key recovery's own code.
struct MailCode {
    agent_id: i64,
    purpose: CodePurpose,
    code: String,
    /// The address the message must come from. `None` for a recovery, which the agent's
    /// mailboxes decide when the message arrives (its mailbox, or the previous one while that
    /// recovers it).
    address: Option<String>,
    expires_at: i64,
    /// The recovery's token id, for a recovery code.
    recovery: Option<String>,
}

fn live_code(conn: &rusqlite::Connection, code: &str) -> crate::error::Result<Option<MailCode>> {
    if let Some(r) = codes::by_code(conn, code)? {
        let codes::CodeRow { agent_id, purpose, code, address, expires_at } = r;
        return Ok(Some(MailCode {
            agent_id,
            purpose,
            code,
            address: Some(address),
            expires_at,
            recovery: None,
        }));
    }
    Ok(recoveries::by_code(conn, code)?.map(|r| MailCode {
        agent_id: r.agent_id,
        purpose: CodePurpose::Recovery,
        code: r.code,
        address: None,
        expires_at: r.expires_at,
        recovery: Some(r.token_id),
    }))
}

/// Applies the code carried by a message whose sender the receiving MTA authenticated. `from`
/// is the From address. The subject must contain a live code's exact subject, and the message
/// must come from the address that code was issued for (for a key recovery: from the agent's
/// mailbox, or from the mailbox verified before a change while it recovers the agent).
pub fn complete_by_mail(pool: &Pool, from: &str, subject_line: &str) -> Result<MailOutcome, MailRefused> {
    let mut conn = pool.get().map_err(MailRefused::Unavailable)?;
    let now = now_ms();
    let candidates: Vec<String> = subject_line
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|t| t.len() == CODE_LEN)
        .map(str::to_ascii_lowercase)
        .collect();
    if candidates.is_empty() {
        return Err(MailRefused::NoCode);
    }
    let mut reason = MailRefused::NoLiveCode;
    for code in candidates {
        let Some(row) = live_code(&conn, &code).map_err(MailRefused::Unread)? else {
            continue;
        };
        if !subject_line.contains(&row.purpose.subject(&row.code)) {
            reason = MailRefused::NotTheSubject;
            continue;
        }
        if now >= row.expires_at {
            reason = MailRefused::Expired;
            continue;
        }
        let from_right_address = match &row.address {
            Some(address) => address.eq_ignore_ascii_case(from),
            None => match agents::by_id(&conn, row.agent_id).map_err(MailRefused::Unread)? {
                Some(a) => recovering_mailbox(&conn, &a, from, now).map_err(MailRefused::Unread)?.is_some(),
                None => false,
            },
        };
        if !from_right_address {
            reason = MailRefused::WrongSender;
            continue;
        }
        let applied = store::write(&mut conn, |tx| {
            let a = agents::by_id(tx, row.agent_id)?.ok_or(Error::NotFound)?;
            // A suspended agent changes nothing, by its key or by mail; the code stays for its
            // restore (a code lives days, a suspension may be lifted sooner).
            if a.suspended_at.is_some() {
                return Err(Error::Suspended);
            }
            match row.purpose {
                CodePurpose::Owner | CodePurpose::Mailbox => {
                    // Single use: the code is consumed by the transaction that applies it.
                    if codes::by_code(tx, &code)?.is_none_or(|r| r.expires_at <= now) {
                        return Err(Error::InvalidState { status: "used" });
                    }
                    codes::remove(tx, row.agent_id, row.purpose)?;
                }
                CodePurpose::Recovery => {}
            }
            match row.purpose {
                CodePurpose::Owner => {
                    if a.owner_claimed_at.is_some() {
                        return Err(Error::AlreadyClaimed);
                    }
                    if a.mailbox_verified_at.is_none() {
                        return Err(Error::MailboxNotVerified);
                    }
                    agents::set_owner_claim(tx, a.id, row.address.as_deref(), Some(now))?;
                    tell_trust(tx, &a, by(ChangedBy::Mail), now)?;
                    Ok(MailOutcome::OwnerClaimed { handle: a.handle })
                }
                CodePurpose::Mailbox => {
                    if !row.address.as_deref().is_some_and(|m| a.mailbox.eq_ignore_ascii_case(m)) {
                        return Err(Error::InvalidState { status: "changed" });
                    }
                    agents::set_mailbox_verified(tx, a.id, Some(now))?;
                    tell_trust(tx, &a, by(ChangedBy::Mail), now)?;
                    Ok(MailOutcome::MailboxVerified { handle: a.handle })
                }
                CodePurpose::Recovery => {
                    // Decided again under the write lock: only a mailbox that recovers the agent
                    // now proves control of it.
                    if recovering_mailbox(tx, &a, from, now)?.is_none() {
                        return Err(Error::InvalidState { status: "changed" });
                    }
                    let token_id = row.recovery.as_deref().unwrap_or_default();
                    if !recoveries::confirm(tx, token_id, from, now)? {
                        return Err(Error::InvalidState { status: "used" });
                    }
                    audit::record(tx, "recovery-confirmed", &a.handle, "inbound-mail", None, now)?;
                    Ok(MailOutcome::RecoveryConfirmed { handle: a.handle })
                }
            }
        });
        return applied.map_err(MailRefused::Refused);
    }
    Err(reason)
}
