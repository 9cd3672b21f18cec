//! The `endpoints` table: where agents can be reached and what the last check found there.

use std::collections::HashMap;
use std::sync::LazyLock;

use rusqlite::{Connection, OptionalExtension, Row, named_params};

use super::id_list;
use crate::domain::endpoint::{EndpointKind, EndpointStatus, Finding, Observed};
use crate::error::Result;
use strum::VariantArray;

#[derive(Debug, Clone, PartialEq)]
pub struct EndpointRow {
    pub kind: EndpointKind,
    pub url: String,
    pub status_since: i64,
    pub finding: Finding,
}

/// Which endpoint of which agent a check is about.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Target {
    pub agent_id: i64,
    pub kind: EndpointKind,
    pub url: String,
}

const COLUMNS: &str = "kind, url, status, reason, status_since, learned_name, protocol_version, \
    item_count, auth_required, proof, observed";

/// The stored form of what an endpoint exposes.
fn observed_json(list: &[Observed]) -> String {
    serde_json::to_string(list).unwrap_or_else(|_| "[]".into())
}

fn observed_from(text: String) -> rusqlite::Result<Vec<Observed>> {
    serde_json::from_str(&text)
        .map_err(|e| rusqlite::Error::FromSqlConversionFailure(0, rusqlite::types::Type::Text, e.into()))
}

fn from_row(r: &Row<'_>) -> rusqlite::Result<EndpointRow> {
    Ok(EndpointRow {
        kind: r.get("kind")?,
        url: r.get("url")?,
        status_since: r.get("status_since")?,
        finding: Finding {
            status: Some(r.get("status")?),
            reason: r.get("reason")?,
            name: r.get("learned_name")?,
            protocol_version: r.get("protocol_version")?,
            count: r.get("item_count")?,
            auth_required: r.get("auth_required")?,
            proof: r.get("proof")?,
            observed: observed_from(r.get("observed")?)?,
        },
    })
}

pub fn for_agent(conn: &Connection, agent_id: i64) -> Result<Vec<EndpointRow>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM endpoints WHERE agent_id = :agent_id ORDER BY position"
    ))?;
    let rows = stmt.query_map(named_params! {":agent_id": agent_id}, from_row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// The endpoints of several agents in one statement; agents without endpoints are absent.
pub fn for_agents(conn: &Connection, agent_ids: &[i64]) -> Result<HashMap<i64, Vec<EndpointRow>>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT agent_id, {COLUMNS} FROM endpoints
         WHERE agent_id IN (SELECT value FROM json_each(:agent_ids)) ORDER BY agent_id, position"
    ))?;
    let mut out: HashMap<i64, Vec<EndpointRow>> = HashMap::new();
    let mut rows = stmt.query(named_params! {":agent_ids": id_list(agent_ids)})?;
    while let Some(r) = rows.next()? {
        out.entry(r.get("agent_id")?).or_default().push(from_row(r)?);
    }
    Ok(out)
}

/// Replaces the agent's list. Rows keep their place by position; an endpoint whose kind and
/// URL were listed before keeps its status and findings (the caller passes them in `rows`).
pub fn replace(conn: &Connection, agent_id: i64, rows: &[EndpointRow]) -> Result<()> {
    conn.prepare_cached("DELETE FROM endpoints WHERE agent_id = :agent_id")?
        .execute(named_params! {":agent_id": agent_id})?;
    let mut insert = conn.prepare_cached(
        "INSERT INTO endpoints (agent_id, position, kind, url, status, reason, status_since,
            learned_name, protocol_version, item_count, auth_required, proof, observed)
         VALUES (:agent_id, :position, :kind, :url, :status, :reason, :status_since,
            :learned_name, :protocol_version, :item_count, :auth_required, :proof, :observed)",
    )?;
    for (position, e) in rows.iter().enumerate() {
        let f = &e.finding;
        insert.execute(named_params! {
            ":agent_id": agent_id,
            ":position": position as i64,
            ":kind": e.kind,
            ":url": e.url,
            ":status": f.status(),
            ":reason": f.reason,
            ":status_since": e.status_since,
            ":learned_name": f.name,
            ":protocol_version": f.protocol_version,
            ":item_count": f.count,
            ":auth_required": f.auth_required,
            ":proof": f.proof,
            ":observed": observed_json(&f.observed),
        })?;
    }
    Ok(())
}

/// Records what a check found, only if it differs from what is stored (an unchanged finding
/// writes nothing, so it never reaches the change log). `status_since` moves only with the
/// status. True when something changed.
pub fn record(conn: &Connection, target: &Target, found: &Finding, now: i64) -> Result<bool> {
    Ok(conn
        .prepare_cached(
            "UPDATE endpoints SET
                status_since = CASE WHEN status = :status THEN status_since ELSE :now END,
                status = :status, reason = :reason, learned_name = :learned_name,
                protocol_version = :protocol_version, item_count = :item_count,
                auth_required = :auth_required, proof = :proof, observed = :observed
             WHERE agent_id = :agent_id AND kind = :kind AND url = :url
               AND (status IS NOT :status OR reason IS NOT :reason OR learned_name IS NOT :learned_name
                    OR protocol_version IS NOT :protocol_version OR item_count IS NOT :item_count
                    OR auth_required IS NOT :auth_required OR proof IS NOT :proof
                    OR observed IS NOT :observed)",
        )?
        .execute(named_params! {
            ":agent_id": target.agent_id,
            ":kind": target.kind,
            ":url": target.url,
            ":status": found.status(),
            ":reason": found.reason,
            ":learned_name": found.name,
            ":protocol_version": found.protocol_version,
            ":item_count": found.count,
            ":auth_required": found.auth_required,
            ":proof": found.proof,
            ":observed": observed_json(&found.observed),
            ":now": now,
        })?
        > 0)
}

/// What the card shows for one endpoint now; None when it is no longer listed.
pub fn finding(conn: &Connection, target: &Target) -> Result<Option<Finding>> {
    Ok(conn
        .prepare_cached(&format!(
            "SELECT {COLUMNS} FROM endpoints WHERE agent_id = :agent_id AND kind = :kind AND url = :url"
        ))?
        .query_row(
            named_params! {":agent_id": target.agent_id, ":kind": target.kind, ":url": target.url},
            from_row,
        )
        .optional()?
        .map(|r| r.finding))
}

/// Whether an endpoint is to be checked (see `listing`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Listing {
    /// On the card of an agent the public sees, with the agent's handle (whose proof text the
    /// endpoint may hold).
    Shown(String),
    /// Its agent is deleted (not yet erased) or suspended: nothing is fetched for it. It stays
    /// on the schedule, since a deletion can be undone and a suspension lifted (by recovery, by
    /// the operator command) without the schedule hearing of it.
    Hidden,
    /// No longer listed: a check of it leaves the schedule.
    Gone,
}

pub fn listing(conn: &Connection, target: &Target) -> Result<Listing> {
    let listed: Option<(bool, String)> = conn
        .prepare_cached(
            "SELECT a.listed AS listed, a.handle AS handle FROM endpoints e JOIN agents a ON a.id = e.agent_id
             WHERE e.agent_id = :agent_id AND e.kind = :kind AND e.url = :url",
        )?
        .query_row(
            named_params! {":agent_id": target.agent_id, ":kind": target.kind, ":url": target.url},
            |r| Ok((r.get("listed")?, r.get("handle")?)),
        )
        .optional()?;
    Ok(match listed {
        Some((true, handle)) => Listing::Shown(handle),
        Some((false, _)) => Listing::Hidden,
        None => Listing::Gone,
    })
}

/// Whether another agent's endpoint of this URL, of any kind, proved it is its own first (one
/// endpoint URL counts for one agent; URLs are kept in one spelling).
pub fn proven_by_another(conn: &Connection, target: &Target) -> Result<bool> {
    // Every kind named, so the partial index on (kind, url) answers it.
    static SQL: LazyLock<String> = LazyLock::new(|| {
        let kinds: Vec<String> = EndpointKind::VARIANTS.iter().map(|k| format!("'{}'", k.as_str())).collect();
        format!(
            "SELECT 1 FROM endpoints WHERE kind IN ({}) AND url = :url
                AND proof IS NOT NULL AND agent_id <> :agent_id",
            kinds.join(", ")
        )
    });
    Ok(conn
        .prepare_cached(&SQL)?
        .query_row(named_params! {":agent_id": target.agent_id, ":url": target.url}, |_| Ok(()))
        .optional()?
        .is_some())
}

/// Every listed endpoint, with whether it was ever checked (for the schedule a starting server
/// builds).
pub fn all_targets(conn: &Connection) -> Result<Vec<(Target, bool)>> {
    let mut stmt = conn.prepare("SELECT agent_id, kind, url, status FROM endpoints")?;
    let rows = stmt.query_map([], |r| {
        let status: EndpointStatus = r.get("status")?;
        Ok((
            Target { agent_id: r.get("agent_id")?, kind: r.get("kind")?, url: r.get("url")? },
            status != EndpointStatus::Unchecked,
        ))
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}
