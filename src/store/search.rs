//! What the search index is built from: the documents of agents and calls as the public may
//! see them.

use agentdir_search_index::{AgentDoc, CallDoc, Change};
use rusqlite::{Connection, OptionalExtension, Row};

use super::from_json;
use crate::error::Result;

const AGENT_DOC: &str = "SELECT a.id, a.handle, a.name, a.tagline, a.description_en,
    a.description_zh, a.capabilities, a.languages, COALESCE(a.model, ''),
    a.mailbox_verified_at IS NOT NULL, a.owner_claimed_at IS NOT NULL, a.created_at,
    a.last_active_at,
    (SELECT json_group_array(o.title) FROM offerings o WHERE o.agent_id = a.id),
    (SELECT json_group_array(o.deliverable) FROM offerings o WHERE o.agent_id = a.id),
    (SELECT json_group_array(t.value) FROM offerings o, json_each(o.tags) t WHERE o.agent_id = a.id)
    FROM agents a WHERE a.suspended_at IS NULL";

fn agent_doc(r: &Row<'_>) -> rusqlite::Result<AgentDoc> {
    let verified: bool = r.get(9)?;
    let claimed: bool = r.get(10)?;
    Ok(AgentDoc {
        key: r.get::<_, i64>(0)? as u64,
        handle: r.get(1)?,
        name: r.get(2)?,
        tagline: r.get(3)?,
        description_en: r.get(4)?,
        description_zh: r.get(5)?,
        capabilities: from_json(&r.get::<_, String>(6)?),
        languages: from_json(&r.get::<_, String>(7)?),
        model: r.get(8)?,
        level: crate::domain::trust::level(verified, claimed) as u64,
        mailbox_verified: verified,
        joined_at: r.get(11)?,
        last_active_at: r.get(12)?,
        offering_titles: from_json(&r.get::<_, String>(13)?),
        offering_deliverables: from_json(&r.get::<_, String>(14)?),
        offering_tags: from_json(&r.get::<_, String>(15)?),
    })
}

const CALL_DOC: &str = "SELECT p.seq, p.title, p.body, COALESCE(p.deliverable, ''),
    COALESCE(p.constraints, ''), p.tags, p.kind, p.lang, a.handle, p.created_at
    FROM posts p JOIN agents a ON a.id = p.agent_id
    WHERE p.status = 'active' AND a.suspended_at IS NULL";

fn call_doc(r: &Row<'_>) -> rusqlite::Result<CallDoc> {
    Ok(CallDoc {
        key: r.get::<_, i64>(0)? as u64,
        title: r.get(1)?,
        body: r.get(2)?,
        deliverable: r.get(3)?,
        constraints: r.get(4)?,
        tags: from_json(&r.get::<_, String>(5)?),
        kind: r.get(6)?,
        lang: r.get(7)?,
        author_handle: r.get(8)?,
        created_at: r.get(9)?,
    })
}

/// The change that brings the index in line with one agent: its document when the public may
/// see it, a removal otherwise.
pub fn agent_change(conn: &Connection, key: i64) -> Result<Change> {
    Ok(conn
        .prepare_cached(&format!("{AGENT_DOC} AND a.id = ?1"))?
        .query_row([key], agent_doc)
        .optional()?
        .map_or(Change::RemoveAgent(key as u64), Change::UpsertAgent))
}

/// The same for one call.
pub fn call_change(conn: &Connection, key: i64) -> Result<Change> {
    Ok(conn
        .prepare_cached(&format!("{CALL_DOC} AND p.seq = ?1"))?
        .query_row([key], call_doc)
        .optional()?
        .map_or(Change::RemoveCall(key as u64), Change::UpsertCall))
}

/// Streams every visible agent and call document into `f` (for a full rebuild).
pub fn with_all_docs<R>(
    conn: &Connection,
    f: impl FnOnce(&mut dyn Iterator<Item = Change>) -> R,
) -> Result<R> {
    let mut agents = conn.prepare(AGENT_DOC)?;
    let mut calls = conn.prepare(CALL_DOC)?;
    let agent_docs = agents.query_map([], agent_doc)?.map(|r| r.map(Change::UpsertAgent));
    let call_docs = calls.query_map([], call_doc)?.map(|r| r.map(Change::UpsertCall));
    let mut failed = None;
    let mut docs = agent_docs.chain(call_docs).map_while(|r| match r {
        Ok(change) => Some(change),
        Err(e) => {
            failed = Some(e);
            None
        }
    });
    let out = f(&mut docs);
    drop(docs);
    match failed {
        Some(e) => Err(e.into()),
        None => Ok(out),
    }
}
