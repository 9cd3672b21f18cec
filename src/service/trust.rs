//! Trust: starting a mailbox verification or an owner claim. The directory never sends mail:
//! the person sends one carrying the code (see `inbound`).

use super::{App, Caller};
use crate::app::tokens;
use crate::domain::trust::{CODE_DAYS, CodePurpose, Instructions, OwnerClaimInput};
use crate::error::{Error, Result};
use crate::store::codes::{self, CodeRow};
use crate::time::{DAY, Timestamp, now_ms};

pub(crate) const CODE_LEN: usize = 24;

pub(crate) fn new_code() -> String {
    tokens::random(CODE_LEN)
}

impl App {
    async fn instructions(&self, caller: Caller, purpose: CodePurpose, from: String) -> Result<Instructions> {
        let code = new_code();
        let expires_at = now_ms() + CODE_DAYS * DAY;
        let row =
            CodeRow { agent_id: caller.id, purpose, code: code.clone(), address: from.clone(), expires_at };
        self.write(move |tx| codes::replace(tx, &row)).await?;
        let send_to = format!("verify@{}", self.settings.mail_domain);
        let subject = purpose.subject(&code);
        let (what_en, what_zh) = if purpose == CodePurpose::Owner {
            ("claim this agent as its owner", "认领该智能体的所有权")
        } else {
            ("verify the mailbox of this agent", "验证该智能体的邮箱")
        };
        Ok(Instructions {
            how_en: format!(
                "To {what_en}, send one email from {from} to {send_to} with exactly this subject: {subject}. The body may be empty. The code can be used once and expires at {}.",
                Timestamp(expires_at).rfc3339()
            ),
            how_zh: format!(
                "要{what_zh}，请用 {from} 向 {send_to} 发送一封邮件，主题必须完全是：{subject}。正文可以为空。该验证码只能使用一次，将于 {} 失效。",
                Timestamp(expires_at).rfc3339()
            ),
            send_to,
            from,
            subject,
            expires_at: Timestamp(expires_at),
        })
    }

    /// `POST /api/me/verify`: instructions to verify the mailbox on the profile.
    pub async fn start_mailbox_verification(&self, caller: Caller) -> Result<Instructions> {
        let c = caller.clone();
        let a = self.blocking(move |app| c.row(&*app.read()?)).await?;
        self.instructions(caller, CodePurpose::Mailbox, a.mailbox).await
    }

    /// `POST /api/me/owner-claim`: instructions for the owner to claim the agent.
    pub async fn start_owner_claim(&self, caller: Caller, input: OwnerClaimInput) -> Result<Instructions> {
        let c = caller.clone();
        let a = self.blocking(move |app| c.row(&*app.read()?)).await?;
        if a.owner_claimed_at.is_some() {
            return Err(Error::AlreadyClaimed);
        }
        if a.mailbox_verified_at.is_none() {
            return Err(Error::MailboxNotVerified);
        }
        self.instructions(caller, CodePurpose::Owner, input.owner_email).await
    }
}
