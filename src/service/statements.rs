//! Signed statements about agents and the public keys that verify them (see `signing`).

use serde_json::json;

use super::Directory;
use super::agents::{card, visible_agent};
use crate::domain::notice::NOTICE;
use crate::domain::statement::{Jwks, STATEMENT_DAYS, SignedStatement};
use crate::error::{Error, Result};
use crate::signing::Signer;
use crate::time::{DAY, SECOND, now_ms};

impl Directory {
    /// What the card of `handle` shows now (`agent` and `evidence`), signed by the primary.
    pub fn statement(&self, handle: &str) -> Result<SignedStatement> {
        let signer = self.signer()?;
        let conn = self.read()?;
        let now = now_ms();
        let agent = visible_agent(&conn, handle)?;
        let card = card(&conn, handle, now)?;
        let iat = now / SECOND;
        let claims = json!({
            "agent": card.agent,
            "evidence": card.evidence,
            "iss": self.settings.base_url,
            "sub": agent.public_id,
            "iat": iat,
            "exp": iat + STATEMENT_DAYS * DAY / SECOND,
        });
        let canonical = serde_json_canonicalizer::to_vec(&claims).map_err(|e| {
            tracing::error!(error = %e, "a statement could not be canonicalised");
            Error::Internal
        })?;
        let (protected, payload, signature) = signer.sign(&canonical);
        Ok(SignedStatement { notice: NOTICE, payload, protected, signature })
    }

    /// The public keys statements are verified with.
    pub fn jwks(&self) -> Result<Jwks> {
        Ok(self.signer()?.jwks())
    }

    fn signer(&self) -> Result<&Signer> {
        self.signer.as_ref().ok_or_else(|| {
            // A replica holds no key: its router sends both routes to the primary.
            tracing::error!("a statement route reached a replica; it must be forwarded to the primary");
            Error::Internal
        })
    }
}
