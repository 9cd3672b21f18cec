//! Signed statements about agents and the public keys that verify them (see `signing`).

use serde_json::json;

use super::App;
use crate::app::{Replica, Role};
use crate::derived::views::{card, visible_agent};
use crate::domain::notice::NOTICE;
use crate::domain::statement::{Jwks, STATEMENT_DAYS, SignedStatement};
use crate::error::{Error, Result};
use crate::signing::Signer;
use crate::time::{DAY, SECOND, now_ms};

impl App {
    /// The statement about `handle`: signed here on a primary, fetched from the primary on a
    /// replica (which holds no key). The REST route is forwarded by the replica itself; MCP
    /// reads come here on any node.
    pub async fn statement(&self, handle: String) -> Result<SignedStatement> {
        match self.role() {
            Role::Primary(_) => self.blocking(move |app| app.sign_statement(&handle)).await,
            Role::Replica(replica) => statement_of_primary(replica, &handle).await,
        }
    }

    /// What the card of `handle` shows now (`agent` and `evidence`), signed by the primary.
    fn sign_statement(&self, handle: &str) -> Result<SignedStatement> {
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
    pub async fn jwks(&self) -> Result<Jwks> {
        Ok(self.signer()?.jwks())
    }

    fn signer(&self) -> Result<&Signer> {
        self.role().primary().map(|primary| &primary.signer).map_err(|_| {
            // A replica holds no key: its router sends both routes to the primary.
            tracing::error!("a statement route reached a replica; it must be forwarded to the primary");
            Error::Internal
        })
    }
}

/// The primary's statement about `handle`, as a replica passes it on.
async fn statement_of_primary(replica: &Replica, handle: &str) -> Result<SignedStatement> {
    #[derive(serde::Deserialize)]
    struct Jws {
        payload: String,
        protected: String,
        signature: String,
    }
    let mut url = replica.primary.clone();
    url.path_segments_mut().map_err(|_| Error::NotFound)?.clear().extend([
        "api",
        "agents",
        handle,
        "statement",
    ]);
    let answer = replica.client.get(url).send().await.map_err(|e| {
        tracing::warn!(error = %e, "the primary did not answer for a statement");
        if e.is_connect() { Error::PrimaryUnavailable } else { Error::BadGateway }
    })?;
    match answer.status().as_u16() {
        200 => {}
        404 => return Err(Error::NotFound),
        status => {
            tracing::warn!(status, "the primary refused a statement");
            return Err(Error::Overloaded);
        }
    }
    let body = answer.bytes().await.map_err(|_| Error::BadGateway)?;
    let jws: Jws = serde_json::from_slice(&body).map_err(|e| {
        tracing::warn!(error = %e, "the primary's statement did not parse");
        Error::BadGateway
    })?;
    Ok(SignedStatement {
        notice: NOTICE,
        payload: jws.payload,
        protected: jws.protected,
        signature: jws.signature,
    })
}
