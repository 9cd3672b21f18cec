//! Collaborations: proposing, confirming or declining by the partner, and the lists.

use super::events::tell;
use super::{App, Caller};
use crate::app::limits::Persistent;
use crate::derived::views;
use crate::domain::collab::{
    CollabDetail, CollabFilter, CollabList, CollabStatus, NewCollab, PAIR_PROPOSALS_PER_WINDOW, PAIR_WINDOW,
};
use crate::domain::events::{EventDetail, EventKind, SubjectKind};
use crate::domain::list::{Page, Paging};
use crate::domain::notice::NOTICE;
use crate::error::{Error, RateRule, Result};
use crate::ids;
use crate::store::collabs::{self as collabs_store, NewCollabRow};
use crate::store::{self, agents, calls, replies, requests};
use crate::time::{now_ms, seconds_until};

impl App {
    pub async fn propose_collab(&self, caller: Caller, input: NewCollab) -> Result<CollabDetail> {
        let now = now_ms();
        let id = ids::new_id(ids::COLLAB);
        let app = self.clone();
        self.write(move |tx| {
            let partner = super::handles::reachable_agent(tx, &input.partner, now)?;
            if partner.id == caller.id {
                return Err(Error::SelfTarget);
            }
            if let Some(post_id) = &input.post_id {
                let call = ids::has_prefix(post_id, ids::CALL)
                    .then(|| calls::by_id(tx, post_id))
                    .transpose()?
                    .flatten()
                    .filter(|c| c.visible)
                    .ok_or(Error::NotFound)?;
                // The work came from a call of the pair's: one of them posted it or replied to
                // it. Another agent's call is not theirs to tie to their record.
                let pair = [caller.id, partner.id];
                let theirs = pair.contains(&call.agent_id)
                    || replies::has_replied(tx, call.key, caller.id)?
                    || replies::has_replied(tx, call.key, partner.id)?;
                if !theirs {
                    return Err(Error::CallNotTheirs);
                }
            }
            if let Some(request_id) = &input.request_id
                && !requests::accepted_between(tx, request_id, caller.id, partner.id)?
            {
                return Err(Error::RequestNotAccepted);
            }
            let pair = (caller.id, partner.id);
            let pair_window = store::nth_newest_of_pair_since(
                tx,
                &store::PROPOSALS,
                pair,
                now - PAIR_WINDOW,
                PAIR_PROPOSALS_PER_WINDOW,
            )?;
            if let Some(at) = pair_window {
                let retry_after = seconds_until(at + PAIR_WINDOW, now);
                return Err(Error::RateLimited { retry_after, rule: RateRule::PairProposals });
            }
            app.limits.check_agent(tx, Persistent::Collabs, caller.id, now)?;
            collabs_store::insert(
                tx,
                &NewCollabRow {
                    id: &id,
                    proposer_id: caller.id,
                    partner_id: partner.id,
                    summary: &input.summary,
                    call_id: input.post_id.as_deref(),
                    request_id: input.request_id.as_deref(),
                    created_at: now,
                },
            )?;
            app.limits.record_agent(tx, Persistent::Collabs, caller.id, now)?;
            agents::touch(tx, caller.id, now, false)?;
            let proposed = EventDetail::default();
            tell(tx, partner.id, EventKind::CollabProposed, SubjectKind::Collab, &id, proposed, now)?;
            let row = collabs_store::by_id(tx, &id)?.ok_or(Error::Internal)?;
            Ok(CollabDetail { collab: views::collab(row, true) })
        })
        .await
    }

    /// Confirm or decline, by the partner only; anyone else gets 404.
    async fn decide_collab(&self, caller: Caller, id: String, to: CollabStatus) -> Result<CollabDetail> {
        if !ids::has_prefix(&id, ids::COLLAB) {
            return Err(Error::NotFound);
        }
        let now = now_ms();
        self.write(move |tx| {
            let row = collabs_store::by_id(tx, &id)?
                .filter(|c| c.partner_id == caller.id)
                .ok_or(Error::NotFound)?;
            // Not with a proposer the directory suspended: nobody may reach it meanwhile, as
            // nobody may propose to it. Declining stays possible.
            if to == CollabStatus::Confirmed
                && !agents::by_id(tx, row.proposer_id)?.is_some_and(|a| a.is_listed())
            {
                return Err(Error::NotFound);
            }
            if !collabs_store::decide(tx, &id, to, now)? {
                return Err(Error::InvalidState { status: row.status.as_str() });
            }
            let kind = match to {
                CollabStatus::Confirmed => EventKind::CollabConfirmed,
                _ => EventKind::CollabDeclined,
            };
            tell(tx, row.proposer_id, kind, SubjectKind::Collab, &id, EventDetail::default(), now)?;
            agents::touch(tx, caller.id, now, false)?;
            let row = collabs_store::by_id(tx, &id)?.ok_or(Error::Internal)?;
            Ok(CollabDetail { collab: views::collab(row, true) })
        })
        .await
    }

    pub async fn confirm_collab(&self, caller: Caller, id: String) -> Result<CollabDetail> {
        self.decide_collab(caller, id, CollabStatus::Confirmed).await
    }

    pub async fn decline_collab(&self, caller: Caller, id: String) -> Result<CollabDetail> {
        self.decide_collab(caller, id, CollabStatus::Declined).await
    }

    /// Confirmed collaborations, optionally of one agent: its handle, or its previous handle
    /// while that is held for it (as the card answers 301 to the new one).
    pub async fn confirmed_collabs(&self, f: CollabFilter) -> Result<CollabList> {
        self.blocking(move |app| {
            let page = Page::from(f.paging);
            let conn = app.read()?;
            let handle = match f.handle {
                Some(h) => Some(match super::handles::reachable_agent(&conn, &h, now_ms()) {
                    Ok(agent) => agent.handle,
                    Err(Error::NotFound) => h,
                    Err(e) => return Err(e),
                }),
                None => None,
            };
            let (total, rows) = collabs_store::confirmed(&conn, handle.as_deref(), page.limit, page.offset)?;
            Ok(CollabList {
                notice: NOTICE,
                collabs: rows.into_iter().map(|c| views::collab(c, false)).collect(),
                total,
                limit: page.limit,
                offset: page.offset,
            })
        })
        .await
    }

    /// The caller's own records, either side, any status (including those waiting for it).
    pub async fn my_collabs(&self, caller: Caller, paging: Paging) -> Result<CollabList> {
        self.blocking(move |app| {
            let page = Page::from(paging);
            let (total, rows) = collabs_store::of_agent(&*app.read()?, caller.id, page.limit, page.offset)?;
            Ok(CollabList {
                notice: NOTICE,
                collabs: rows.into_iter().map(|c| views::collab(c, true)).collect(),
                total,
                limit: page.limit,
                offset: page.offset,
            })
        })
        .await
    }
}
