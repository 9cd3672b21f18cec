//! Link proofs: a page at a URL the agent controls says `agentdir-proof:<handle>`. The fetch is
//! SSRF-safe (see `link_fetch`); a proof lives 180 days after it was established. It is recorded
//! under the URL where the text was found, after redirects: that origin, and only that one, is
//! what it proves (the card's `host`, the `owned` of endpoints). The URL the agent submitted is
//! kept beside it, so the agent may remove the proof by either.

use std::net::IpAddr;

use rusqlite::Connection;

use super::events::tell;
use super::{App, Caller};
use crate::app::limits::Persistent;
use crate::checks::link_fetch::{self, FetchOutcome, FetchPolicy};
use crate::derived::views;
use crate::domain::events::{EventDetail, EventKind, PROOF_EXPIRING_MS, SubjectKind};
use crate::domain::trust::{LINK_PROOF_DAYS, LinkList, LinkProofInput, carries_proof_text, proof_text};
use crate::error::{Error, Result, Rule};
use crate::store::{agents, proofs};
use crate::time::now_ms;

/// What time brings to link proofs at `now`, inside the caller's transaction: the proofs past
/// their lifetime are noted (their cards change) and their agents told; the agents of proofs
/// that expire within [`PROOF_EXPIRING_MS`] are told once. Returns how many proofs were noted.
pub(crate) fn note_expiries(tx: &Connection, now: i64) -> Result<usize> {
    let lifetime = LINK_PROOF_DAYS * crate::time::DAY;
    let expired = proofs::note_expired(tx, now - lifetime)?;
    for p in &expired {
        tell(
            tx,
            p.agent_id,
            EventKind::LinkProofExpired,
            SubjectKind::LinkProof,
            &p.url,
            EventDetail::default(),
            now,
        )?;
    }
    let expiring = proofs::note_expiring(tx, now - lifetime + PROOF_EXPIRING_MS)?;
    for p in &expiring {
        let detail = EventDetail {
            expires_at: Some(crate::time::Timestamp(p.verified_at + lifetime)),
            ..EventDetail::default()
        };
        tell(tx, p.agent_id, EventKind::LinkProofExpiring, SubjectKind::LinkProof, &p.url, detail, now)?;
    }
    Ok(expired.len() + expiring.len())
}

impl App {
    /// Spends one unit of the agent's own `limit` in a write of its own: for work that runs
    /// before, or instead of, the write it pays for (a link proof's fetch counts even when it
    /// fails).
    pub(crate) async fn spend_agent_budget(&self, limit: Persistent, agent_id: i64) -> Result<()> {
        let app = self.clone();
        self.write(move |tx| app.limits.spend_agent(tx, limit, agent_id, now_ms())).await
    }

    /// `POST /api/me/links`: records a proof after fetching the page, or removes one.
    pub async fn link_proof(
        &self,
        caller: Caller,
        client: IpAddr,
        input: LinkProofInput,
    ) -> Result<LinkList> {
        if input.remove == Some(true) {
            let written = link_fetch::check_url(&input.url).map_or_else(|_| input.url.clone(), String::from);
            return self
                .write(move |tx| {
                    let now = now_ms();
                    proofs::remove(tx, caller.id, &input.url, &written)?;
                    agents::touch(tx, caller.id, now, true)?;
                    Ok(LinkList { links: views::links(tx, caller.id, now)? })
                })
                .await;
        }
        if carries_proof_text(&input.url) {
            return Err(Error::validation("url", Rule::ProofInUrl));
        }
        let url = link_fetch::check_url(&input.url).map_err(|reason| Error::LinkFetchFailed { reason })?;
        let _turn = self.link_fetches.take(client)?;
        self.spend_agent_budget(Persistent::Links, caller.id).await?;
        let policy = FetchPolicy::reaching(&self.settings.link_fetch_allow_private);
        let found_at =
            match link_fetch::fetch_contains(url.as_str(), &proof_text(&caller.handle), &policy).await {
                // Redirected to an address that carries the text: the page may echo it.
                Ok(FetchOutcome::Found { final_url }) if carries_proof_text(&final_url) => {
                    return Err(Error::validation("url", Rule::ProofInUrl));
                }
                Ok(FetchOutcome::Found { final_url }) => final_url,
                Ok(FetchOutcome::NotFound) => return Err(Error::ProofNotFound),
                Ok(FetchOutcome::OnADirectory) => return Err(Error::ProofOnADirectory),
                Err(e) => {
                    tracing::info!(error = ?e, "link proof fetch failed");
                    return Err(Error::LinkFetchFailed { reason: e });
                }
            };
        let host =
            url::Url::parse(&found_at).ok().and_then(|u| u.host_str().map(str::to_owned)).unwrap_or_default();
        self.write(move |tx| {
            let now = now_ms();
            proofs::upsert(tx, caller.id, &found_at, &input.url, &host, now)?;
            agents::touch(tx, caller.id, now, true)?;
            Ok(LinkList { links: views::links(tx, caller.id, now)? })
        })
        .await
    }
}
