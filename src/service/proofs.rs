//! Link proofs: a page at a URL the agent controls says `agentdir-proof:<handle>`. The fetch is
//! SSRF-safe (see `link_fetch`); a proof lives 180 days after it was established. It is recorded
//! under the URL where the text was found, after redirects: that origin, and only that one, is
//! what it proves (the card's `host`, the `owned` of endpoints). The URL the agent submitted is
//! kept beside it, so the agent may remove the proof by either.

use super::{App, Caller};
use crate::app::limits::Persistent;
use crate::checks::link_fetch::{self, FetchOutcome, FetchPolicy};
use crate::derived::views;
use crate::domain::trust::{LinkList, LinkProofInput, proof_text};
use crate::error::{Error, Result};
use crate::store::{agents, proofs};
use crate::time::now_ms;

impl App {
    /// Spends one unit of the agent's own `limit` in a write of its own: for work that runs
    /// before, or instead of, the write it pays for (a link proof's fetch counts even when it
    /// fails).
    pub(crate) async fn spend_agent_budget(&self, limit: Persistent, agent_id: i64) -> Result<()> {
        let app = self.clone();
        self.write(move |tx| app.limits.spend_agent(tx, limit, agent_id, now_ms())).await
    }

    /// `POST /api/me/links`: records a proof after fetching the page, or removes one.
    pub async fn link_proof(&self, caller: Caller, input: LinkProofInput) -> Result<LinkList> {
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
        self.spend_agent_budget(Persistent::Links, caller.id).await?;
        let url = link_fetch::check_url(&input.url).map_err(|reason| Error::LinkFetchFailed { reason })?;
        let policy = FetchPolicy::reaching(&self.settings.link_fetch_allow_private);
        let found_at =
            match link_fetch::fetch_contains(url.as_str(), &proof_text(&caller.handle), &policy).await {
                Ok(FetchOutcome::Found { final_url }) => final_url,
                Ok(FetchOutcome::NotFound) => return Err(Error::ProofNotFound),
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
