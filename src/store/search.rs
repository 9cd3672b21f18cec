//! What the search index is built from: the change log (`search_changes`, filled by triggers)
//! and the documents of agents and calls as the public may see them.

use agentdir_search_index::{AgentDoc, CallDoc, Change};
use rusqlite::{Connection, OptionalExtension, Row, params};

use super::from_json;
use crate::error::Result;

/// The newest sequence number ever handed out (pruning the log does not lower it).
pub fn max_seq(conn: &Connection) -> Result<u64> {
    let seq: Option<i64> = conn
        .prepare_cached("SELECT seq FROM sqlite_sequence WHERE name = 'search_changes'")?
        .query_row([], |r| r.get(0))
        .optional()?;
    Ok(seq.unwrap_or(0).max(0) as u64)
}

pub enum Entity {
    Agent,
    Call,
}

/// Distinct entities changed after `seq`, at most `limit` log rows, and the last seq read.
pub fn changes_after(conn: &Connection, seq: u64, limit: u32) -> Result<(u64, Vec<(Entity, i64)>)> {
    let mut stmt = conn
        .prepare_cached("SELECT seq, entity, key FROM search_changes WHERE seq > ?1 ORDER BY seq LIMIT ?2")?;
    let mut rows = stmt.query(params![seq as i64, limit])?;
    let mut last = seq;
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    while let Some(r) = rows.next()? {
        last = r.get::<_, i64>(0)? as u64;
        let entity: String = r.get(1)?;
        let key: i64 = r.get(2)?;
        if seen.insert((entity.clone(), key)) {
            out.push((if entity == "agent" { Entity::Agent } else { Entity::Call }, key));
        }
    }
    Ok((last, out))
}

/// Forgets log rows the index has applied.
pub fn prune(conn: &Connection, up_to: u64) -> Result<()> {
    conn.prepare_cached("DELETE FROM search_changes WHERE seq <= ?1")?.execute([up_to as i64])?;
    Ok(())
}

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

/// The change that brings the index in line with one entity: its document when the public may
/// see it, a removal otherwise.
pub fn change_for(conn: &Connection, entity: &Entity, key: i64) -> Result<Change> {
    Ok(match entity {
        Entity::Agent => conn
            .prepare_cached(&format!("{AGENT_DOC} AND a.id = ?1"))?
            .query_row([key], agent_doc)
            .optional()?
            .map_or(Change::RemoveAgent(key as u64), Change::UpsertAgent),
        Entity::Call => conn
            .prepare_cached(&format!("{CALL_DOC} AND p.seq = ?1"))?
            .query_row([key], call_doc)
            .optional()?
            .map_or(Change::RemoveCall(key as u64), Change::UpsertCall),
    })
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
