//! The read model: turns stored rows into the values readers get, in one place, so the card,
//! a call, the lists, the feed and MCP show the same thing; and what the public may see of an
//! agent or a call at all.

use rusqlite::Connection;

use crate::domain::agent::{self, AgentCard, AgentView, Contact, Evidence, OwnProfile};
use crate::domain::call::{CALL_REPLIES_SHOWN, CallDetail, CallSummary, ReplyOnOwnCall, ReplyView};
use crate::domain::collab::CollabView;
use crate::domain::contact_request::{
    ContactRequestView, EXPIRY, Mailboxes, OfferingRef, Party, RequestStatus,
};
use crate::domain::endpoint::{
    EndpointAuth, EndpointKind, EndpointStatus, EndpointView, counted_observed, is_owned,
};
use crate::domain::handles::DELETED;
use crate::domain::notice::NOTICE;
use crate::domain::offering::Offering;
use crate::domain::trust::{LinkProofView, ProofStatus, TrustView, proof_expires_at};
use crate::error::{Error, Result};
use crate::ids;
use crate::store::agents::AgentRow;
use crate::store::calls::CallRow;
use crate::store::collabs::CollabRow;
use crate::store::endpoints::EndpointRow;
use crate::store::proofs::ProofRow;
use crate::store::replies::ReplyRow;
use crate::store::requests::RequestRow;
use crate::store::{agents, calls, collabs, endpoints, offerings, proofs, replies};
use crate::time::Timestamp;

pub fn links(conn: &Connection, agent_id: i64, now: i64) -> Result<Vec<LinkProofView>> {
    Ok(link_views(proofs::for_agent(conn, agent_id)?, now))
}

fn link_views(proofs: Vec<ProofRow>, now: i64) -> Vec<LinkProofView> {
    proofs
        .into_iter()
        .map(|p| {
            let expires = proof_expires_at(p.verified_at);
            LinkProofView {
                url: p.url,
                host: p.host,
                verified_at: Timestamp(p.verified_at),
                expires_at: Timestamp(expires),
                status: if now >= expires { ProofStatus::Expired } else { ProofStatus::Verified },
            }
        })
        .collect()
}

pub fn agent(conn: &Connection, a: &AgentRow, now: i64) -> Result<AgentView> {
    let listed = (
        offerings::for_agent(conn, a.id)?,
        proofs::for_agent(conn, a.id)?,
        endpoints::for_agent(conn, a.id)?,
    );
    Ok(agent_view(a, listed, now))
}

fn agent_view(
    a: &AgentRow,
    (offerings, proofs, endpoint_rows): (Vec<Offering>, Vec<ProofRow>, Vec<EndpointRow>),
    now: i64,
) -> AgentView {
    let verified = a.mailbox_verified_at.is_some();
    let (how_en, how_zh) = contact_how(a, offerings.len());
    let links = link_views(proofs, now);
    let endpoints = endpoint_views(endpoint_rows, &links);
    AgentView {
        handle: a.handle.clone(),
        name: a.name.clone(),
        owner: a.owner.clone(),
        tagline: a.tagline.clone(),
        description_zh: a.description_zh.clone(),
        description_en: a.description_en.clone(),
        capabilities: a.capabilities.clone(),
        languages: a.languages.clone(),
        homepage: a.homepage.clone(),
        model: a.model.clone(),
        verified,
        verified_at: a.mailbox_verified_at.map(Timestamp),
        trust: TrustView {
            level: a.level(),
            mailbox_verified: verified,
            owner_claimed: a.owner_claimed_at.is_some(),
            links,
        },
        offerings,
        endpoints,
        contact_policy: a.policy.clone(),
        created_at: Timestamp(a.created_at),
        updated_at: Timestamp(a.updated_at),
        last_active_at: Timestamp(a.last_active_at),
        contact: Contact {
            method: "request".into(),
            email: a.contact_public.then(|| a.mailbox.clone()),
            email_public: a.contact_public,
            mailbox_verified: verified,
            how_en,
            how_zh,
        },
    }
}

/// The card of a public agent, read from `conn` (one snapshot, for the view cache).
pub fn card(conn: &Connection, handle: &str, now: i64) -> Result<AgentCard> {
    let a = visible_agent(conn, handle)?;
    let recent_posts =
        calls::recent_of(conn, a.id, agent::RECENT_POSTS)?.into_iter().map(|c| c.summary).collect();
    Ok(AgentCard {
        notice: NOTICE,
        evidence: Evidence {
            confirmed_collaborations: collabs::evidence_count(conn, a.id)?,
            confirmed_collaborations_note_en: agent::EVIDENCE_NOTE_EN.into(),
            confirmed_collaborations_note_zh: agent::EVIDENCE_NOTE_ZH.into(),
            last_active_at: Timestamp(a.last_active_at),
            joined_at: Timestamp(a.created_at),
        },
        agent: agent(conn, &a, now)?,
        recent_posts,
    })
}

/// A public agent, or 404 (unknown, malformed, suspended or deleted handles alike).
pub fn visible_agent(conn: &Connection, handle: &str) -> Result<AgentRow> {
    if !agent::is_handle(handle) {
        return Err(Error::NotFound);
    }
    match agents::by_handle(conn, handle)? {
        Some(a) if a.is_listed() => Ok(a),
        _ => Err(Error::NotFound),
    }
}

/// What the agent itself sees of its profile.
pub fn own_profile(conn: &Connection, a: &AgentRow, now: i64) -> Result<OwnProfile> {
    Ok(OwnProfile {
        sub: a.public_id.clone(),
        agent: agent(conn, a, now)?,
        mailbox: a.mailbox.clone(),
        owner_email: a.owner_claimed_at.and(a.owner_email.clone()),
    })
}

/// The public agents among `ids`, with their ids, in that order: a page of search results as
/// readers see it. One statement per table for the whole page (agents, offerings, link proofs,
/// endpoints) rather than one per agent: with the first three, 0.19 instead of 0.32 ms of CPU
/// for a page of 20 on the search benchmark's corpus.
pub fn agents_by_ids(conn: &Connection, ids: &[i64], now: i64) -> Result<Vec<(i64, AgentView)>> {
    let rows: Vec<AgentRow> = agents::by_ids(conn, ids)?.into_iter().filter(AgentRow::is_listed).collect();
    let found: Vec<i64> = rows.iter().map(|a| a.id).collect();
    let mut offerings = offerings::for_agents(conn, &found)?;
    let mut proofs = proofs::for_agents(conn, &found)?;
    let mut endpoints = endpoints::for_agents(conn, &found)?;
    Ok(rows
        .iter()
        .map(|a| {
            let listed = (
                offerings.remove(&a.id).unwrap_or_default(),
                proofs.remove(&a.id).unwrap_or_default(),
                endpoints.remove(&a.id).unwrap_or_default(),
            );
            (a.id, agent_view(a, listed, now))
        })
        .collect())
}

/// The endpoints as the card shows them; `links` are the agent's link proofs as shown.
fn endpoint_views(rows: Vec<EndpointRow>, links: &[LinkProofView]) -> Vec<EndpointView> {
    let observed = counted_observed(rows.iter().map(|r| &r.finding));
    rows.into_iter()
        .zip(observed)
        .map(|(r, observed)| {
            let live_proofs =
                links.iter().filter(|l| l.status == ProofStatus::Verified).map(|l| l.url.as_str());
            let owned = is_owned(&r.url, live_proofs);
            let f = r.finding;
            let count = |kind| if r.kind == kind { f.count } else { None };
            let shown = f.status() == EndpointStatus::Live && f.proof.is_some();
            let exposed = |kind| (shown && r.kind == kind).then(|| observed.clone());
            EndpointView {
                owned,
                proof: f.proof,
                skills: exposed(EndpointKind::A2a),
                tools: exposed(EndpointKind::Mcp),
                status: f.status(),
                status_since: Timestamp(r.status_since),
                name: f.name,
                protocol_version: f.protocol_version,
                skill_count: count(EndpointKind::A2a),
                tool_count: count(EndpointKind::Mcp),
                auth: f.auth_required.then_some(EndpointAuth::Required),
                reason: f.reason,
                kind: r.kind,
                url: r.url,
            }
        })
        .collect()
}

fn contact_how(a: &AgentRow, offerings: usize) -> (String, String) {
    let h = &a.handle;
    let p = &a.policy;
    if !p.accepting {
        return (
            format!("{h} is not accepting contact requests right now."),
            format!("{h} 目前不接受联系请求。"),
        );
    }
    let (offering_en, offering_zh) = match (p.require_offering, p.takes_requests(offerings)) {
        (false, _) => ("", ""),
        (true, true) => {
            (", naming one of its offerings in offering_id", "，并在 offering_id 中注明其一项服务")
        }
        (true, false) => (
            ", naming one of its offerings in offering_id; it lists none yet, so it cannot take a request until it publishes one",
            "，并在 offering_id 中注明其一项服务；它目前尚未发布任何服务，在发布服务之前无法接受请求",
        ),
    };
    // An agent that shows its mailbox on its card has nothing left to share on acceptance.
    let (mailbox_en, mailbox_zh) = if a.contact_public {
        (
            "Its mailbox is public on its card; yours is shared with it once it accepts.",
            "其邮箱已公开在名片上；请求被接受后，你的邮箱也会对它可见。",
        )
    } else {
        ("The mailbox is shared once the request is accepted.", "请求被接受后双方可看到彼此的邮箱。")
    };
    (
        format!(
            "Send a contact request with POST /api/agents/{h}/requests{offering_en}. Senders need trust level {} or higher; up to {} requests a week are accepted. {mailbox_en}",
            p.min_level, p.weekly_cap
        ),
        format!(
            "请通过 POST /api/agents/{h}/requests 发送联系请求{offering_zh}。发送方的信任等级须达到 {} 级或以上；每周最多接收 {} 条请求。{mailbox_zh}",
            p.min_level, p.weekly_cap
        ),
    )
}

/// The visible calls among `keys`, with their keys, in that order.
pub fn calls_by_keys(conn: &Connection, keys: &[i64]) -> Result<Vec<(i64, CallSummary)>> {
    Ok(calls::by_keys(conn, keys)?.into_iter().filter(|c| c.visible).map(|c| (c.key, c.summary)).collect())
}

/// A call the public may see, or 404.
pub fn visible_call(conn: &Connection, id: &str) -> Result<CallRow> {
    if !ids::has_prefix(id, ids::CALL) {
        return Err(Error::NotFound);
    }
    match calls::by_id(conn, id)? {
        Some(c) if c.visible => Ok(c),
        _ => Err(Error::NotFound),
    }
}

/// A public call with its replies, read from `conn` (one snapshot, for the view cache).
pub fn call_detail(conn: &Connection, id: &str) -> Result<CallDetail> {
    let c = visible_call(conn, id)?;
    let (_, shown) = replies::for_call(conn, c.key, CALL_REPLIES_SHOWN, 0)?;
    Ok(CallDetail { notice: NOTICE, post: c.summary, replies: shown.into_iter().map(reply).collect() })
}

pub fn reply(r: ReplyRow) -> ReplyView {
    ReplyView {
        id: r.id,
        post_id: r.call_id,
        body: r.body,
        created_at: Timestamp(r.created_at),
        author: r.author,
    }
}

pub fn reply_on_own_call(r: ReplyRow) -> ReplyOnOwnCall {
    ReplyOnOwnCall {
        id: r.id,
        post_id: r.call_id,
        post_title: r.call_title,
        body: r.body,
        created_at: Timestamp(r.created_at),
        author: r.author,
    }
}

/// A party as the other sees it: a deleted agent only as `deleted`.
fn party(a: &AgentRow) -> Party {
    match a.deleted_at {
        Some(_) => Party { handle: DELETED.into(), name: DELETED.into(), level: 0 },
        None => Party { handle: a.handle.clone(), name: a.name.clone(), level: a.level() },
    }
}

/// A contact request as one of its two parties sees it. What a deleted party wrote (the
/// sender's texts, the recipient's offering title) and its mailbox are not shown.
pub fn request(r: RequestRow, sender: &AgentRow, recipient: &AgentRow, now: i64) -> ContactRequestView {
    let status = RequestStatus::effective(r.status, r.created_at, now);
    let either_deleted = sender.deleted_at.is_some() || recipient.deleted_at.is_some();
    let mailboxes = (status == RequestStatus::Accepted && !either_deleted)
        .then(|| Mailboxes { sender: sender.mailbox.clone(), recipient: recipient.mailbox.clone() });
    let by_sender = sender.deleted_at.is_none();
    let offering_title = r.offering_title.filter(|_| recipient.deleted_at.is_none()).unwrap_or_default();
    ContactRequestView {
        id: r.id,
        status,
        sender: party(sender),
        recipient: party(recipient),
        offering: r.offering_id.map(|id| OfferingRef { id, title: offering_title }),
        purpose: if by_sender { r.purpose } else { String::new() },
        deliverable: if by_sender { r.deliverable } else { String::new() },
        deadline: r.deadline.filter(|_| by_sender),
        compensation: r.compensation,
        context: r.context.filter(|_| by_sender),
        decline_reason: r.decline_reason,
        created_at: Timestamp(r.created_at),
        decided_at: r.decided_at.map(Timestamp),
        expires_at: Timestamp(r.created_at + EXPIRY),
        mailboxes,
    }
}

/// A collaboration record; `private` shows the request id (for the two parties only).
pub fn collab(c: CollabRow, private: bool) -> CollabView {
    CollabView {
        id: c.id,
        status: c.status,
        proposer: c.proposer,
        partner: c.partner,
        summary: c.summary,
        post_id: c.call_id,
        request_id: if private { c.request_id } else { None },
        created_at: Timestamp(c.created_at),
        decided_at: c.decided_at.map(Timestamp),
    }
}
