//! What the search index is built from: the documents of agents and calls as the public may
//! see them.

use agentdir_search_index::{AgentDoc, CallDoc, Change};
use rusqlite::{Connection, OptionalExtension, Row, named_params};

use strum::VariantArray;

use super::JsonList;
use super::calls::VISIBLE;
use crate::domain::endpoint::{EndpointProof, EndpointStatus, Finding, Observed, counted_observed};
use crate::error::Result;

/// A public agent `a` as the index sees it.
const AGENT_DOC: &str = "SELECT a.id, a.handle, a.name, a.tagline, a.description_en,
    a.description_zh, a.capabilities, a.languages, COALESCE(a.model, '') AS model,
    a.mailbox_verified_at IS NOT NULL AS verified, a.owner_claimed_at IS NOT NULL AS claimed,
    a.created_at, a.last_active_at,
    (SELECT json_group_array(json_array(e.url, e.status)) FROM endpoints e WHERE e.agent_id = a.id)
        AS endpoints,
    (SELECT json_group_array(json_array(p.url, p.verified_at)) FROM link_proofs p WHERE p.agent_id = a.id)
        AS proofs,
    (SELECT json_group_array(o.title) FROM offerings o WHERE o.agent_id = a.id) AS offering_titles,
    (SELECT json_group_array(o.deliverable) FROM offerings o WHERE o.agent_id = a.id)
        AS offering_deliverables,
    (SELECT json_group_array(t.value) FROM offerings o, json_each(o.tags) t WHERE o.agent_id = a.id)
        AS offering_tags,
    (SELECT json_group_array(json_array(e.status, e.proof, json(e.observed)))
        FROM (SELECT status, proof, observed FROM endpoints WHERE agent_id = a.id ORDER BY position) e)
        AS observed
    FROM agents a WHERE a.listed";

fn agent_doc(r: &Row<'_>) -> rusqlite::Result<AgentDoc> {
    let verified: bool = r.get("verified")?;
    let claimed: bool = r.get("claimed")?;
    Ok(AgentDoc {
        key: r.get::<_, i64>("id")? as u64,
        handle: r.get("handle")?,
        name: r.get("name")?,
        tagline: r.get("tagline")?,
        description_en: r.get("description_en")?,
        description_zh: r.get("description_zh")?,
        capabilities: r.get::<_, JsonList>("capabilities")?.0,
        languages: r.get::<_, JsonList>("languages")?.0,
        model: r.get("model")?,
        level: crate::domain::trust::level(verified, claimed) as u64,
        mailbox_verified: verified,
        live: live_and_owned(r)?,
        joined_at: r.get("created_at")?,
        last_active_at: r.get("last_active_at")?,
        offering_titles: r.get::<_, JsonList>("offering_titles")?.0,
        offering_deliverables: r.get::<_, JsonList>("offering_deliverables")?.0,
        offering_tags: r.get::<_, JsonList>("offering_tags")?.0,
        observed: observed(r)?,
    })
}

/// What the agent's endpoints expose that counts as the agent's (see
/// `domain::endpoint::counted_observed`), one text per skill or tool.
fn observed(r: &Row<'_>) -> rusqlite::Result<Vec<String>> {
    let text: String = r.get("observed")?;
    let bad = |e: Box<dyn std::error::Error + Send + Sync>| {
        rusqlite::Error::FromSqlConversionFailure(0, rusqlite::types::Type::Text, e)
    };
    let rows: Vec<(String, Option<String>, Vec<Observed>)> =
        serde_json::from_str(&text).map_err(|e| bad(e.into()))?;
    let findings = rows
        .into_iter()
        .map(|(status, proof, observed)| {
            Ok(Finding {
                status: EndpointStatus::VARIANTS.iter().copied().find(|v| v.as_str() == status),
                proof: proof.and_then(|p| EndpointProof::VARIANTS.iter().copied().find(|v| v.as_str() == p)),
                observed,
                ..Finding::default()
            })
        })
        .collect::<rusqlite::Result<Vec<Finding>>>()?;
    Ok(counted_observed(findings.iter())
        .into_iter()
        .flatten()
        .map(|o| o.texts().collect::<Vec<_>>().join(" "))
        .collect())
}

/// Whether one of the agent's endpoints is live and owned (see `domain::endpoint::is_owned`),
/// judged as the card judges it: by the link proofs that have not expired.
fn live_and_owned(r: &Row<'_>) -> rusqlite::Result<bool> {
    let json = |column: &str| -> rusqlite::Result<Vec<(String, serde_json::Value)>> {
        let text: String = r.get(column)?;
        serde_json::from_str(&text).map_err(|e| {
            rusqlite::Error::FromSqlConversionFailure(0, rusqlite::types::Type::Text, Box::new(e))
        })
    };
    let now = crate::time::now_ms();
    let proofs = json("proofs")?;
    let live_proofs: Vec<&str> = proofs
        .iter()
        .filter(|(_, at)| at.as_i64().is_some_and(|at| now < crate::domain::trust::proof_expires_at(at)))
        .map(|(url, _)| url.as_str())
        .collect();
    Ok(json("endpoints")?.iter().any(|(url, status)| {
        status.as_str() == Some(crate::domain::endpoint::EndpointStatus::Live.as_str())
            && crate::domain::endpoint::is_owned(url, live_proofs.iter().copied())
    }))
}

/// A visible call `p` with its author `a` as the index sees it.
fn call_doc_sql() -> String {
    format!(
        "SELECT p.seq, p.title, p.body, COALESCE(p.deliverable, '') AS deliverable,
            COALESCE(p.constraints, '') AS constraints, p.tags, p.kind, p.lang,
            a.handle AS author_handle, p.created_at
         FROM calls p JOIN agents a ON a.id = p.agent_id WHERE {VISIBLE}"
    )
}

fn call_doc(r: &Row<'_>) -> rusqlite::Result<CallDoc> {
    Ok(CallDoc {
        key: r.get::<_, i64>("seq")? as u64,
        title: r.get("title")?,
        body: r.get("body")?,
        deliverable: r.get("deliverable")?,
        constraints: r.get("constraints")?,
        tags: r.get::<_, JsonList>("tags")?.0,
        kind: r.get("kind")?,
        lang: r.get("lang")?,
        author_handle: r.get("author_handle")?,
        created_at: r.get("created_at")?,
    })
}

/// The change that brings the index in line with one agent: its document when the public may
/// see it, a removal otherwise.
pub fn agent_change(conn: &Connection, key: i64) -> Result<Change> {
    Ok(conn
        .prepare_cached(&format!("{AGENT_DOC} AND a.id = :key"))?
        .query_row(named_params! {":key": key}, agent_doc)
        .optional()?
        .map_or(Change::RemoveAgent(key as u64), Change::UpsertAgent))
}

/// The same for one call.
pub fn call_change(conn: &Connection, key: i64) -> Result<Change> {
    Ok(conn
        .prepare_cached(&format!("{} AND p.seq = :key", call_doc_sql()))?
        .query_row(named_params! {":key": key}, call_doc)
        .optional()?
        .map_or(Change::RemoveCall(key as u64), Change::UpsertCall))
}

/// Streams every visible agent and call document into `f` (for a full rebuild).
/// How many documents `with_all_docs` yields now (for progress reports).
pub fn count_all_docs(conn: &Connection) -> Result<u64> {
    let sql =
        format!("SELECT (SELECT count(*) FROM ({AGENT_DOC})) + (SELECT count(*) FROM ({}))", call_doc_sql());
    let count: i64 = conn.query_row(&sql, [], |r| r.get(0))?;
    Ok(u64::try_from(count).unwrap_or(0))
}

pub fn with_all_docs<R>(
    conn: &Connection,
    f: impl FnOnce(&mut dyn Iterator<Item = Change>) -> R,
) -> Result<R> {
    let mut agents = conn.prepare(AGENT_DOC)?;
    let mut calls = conn.prepare(&call_doc_sql())?;
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

/// The author of a call (hidden or not).
pub fn call_author(conn: &Connection, seq: i64) -> Result<Option<i64>> {
    Ok(conn
        .prepare_cached("SELECT agent_id FROM calls WHERE seq = :seq")?
        .query_row(named_params! {":seq": seq}, |r| r.get("agent_id"))
        .optional()?)
}

/// The documents of the public agents whose keys are from `first` to `last`.
pub fn agent_docs_between(conn: &Connection, first: i64, last: i64) -> Result<Vec<AgentDoc>> {
    let mut stmt = conn.prepare_cached(&format!("{AGENT_DOC} AND a.id BETWEEN :first AND :last"))?;
    let docs = stmt
        .query_map(named_params! {":first": first, ":last": last}, agent_doc)?
        .collect::<rusqlite::Result<_>>()?;
    Ok(docs)
}

/// The lowest and highest key of any agent (public or not; two reads of the table's ends),
/// none when there is none.
pub fn agent_key_span(conn: &Connection) -> Result<Option<(i64, i64)>> {
    let span = conn.query_row("SELECT min(id) AS first, max(id) AS last FROM agents", [], |r| {
        Ok((r.get::<_, Option<i64>>("first")?, r.get::<_, Option<i64>>("last")?))
    })?;
    Ok(span.0.zip(span.1))
}
