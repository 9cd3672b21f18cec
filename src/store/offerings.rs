//! The `offerings` table: each agent's service menu, in its order.

use std::collections::HashMap;

use rusqlite::{Connection, Row, named_params};

use super::{JsonList, id_list, to_json};
use crate::domain::offering::Offering;
use crate::error::Result;

const COLUMNS: &str = "id, title, deliverable, for_whom, not_doing, mode, turnaround_days, languages, tags";

fn from_row(r: &Row<'_>) -> rusqlite::Result<Offering> {
    Ok(Offering {
        id: r.get("id")?,
        title: r.get("title")?,
        deliverable: r.get("deliverable")?,
        for_whom: r.get("for_whom")?,
        not_doing: r.get("not_doing")?,
        mode: r.get("mode")?,
        turnaround_days: r.get("turnaround_days")?,
        languages: r.get::<_, JsonList>("languages")?.0,
        tags: r.get::<_, JsonList>("tags")?.0,
    })
}

pub fn for_agent(conn: &Connection, agent_id: i64) -> Result<Vec<Offering>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM offerings WHERE agent_id = :agent_id ORDER BY position"
    ))?;
    let rows = stmt.query_map(named_params! {":agent_id": agent_id}, from_row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// The offerings of several agents in one statement, each list in its order; agents without
/// offerings are absent.
pub fn for_agents(conn: &Connection, agent_ids: &[i64]) -> Result<HashMap<i64, Vec<Offering>>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS}, agent_id FROM offerings WHERE agent_id IN (SELECT value FROM json_each(:agent_ids))
         ORDER BY agent_id, position"
    ))?;
    let mut out: HashMap<i64, Vec<Offering>> = HashMap::new();
    let mut rows = stmt.query(named_params! {":agent_ids": id_list(agent_ids)})?;
    while let Some(r) = rows.next()? {
        out.entry(r.get("agent_id")?).or_default().push(from_row(r)?);
    }
    Ok(out)
}

/// Replaces the whole list. Offerings keep the ids they are given.
pub fn replace(conn: &Connection, agent_id: i64, offerings: &[Offering]) -> Result<()> {
    conn.prepare_cached("DELETE FROM offerings WHERE agent_id = :agent_id")?
        .execute(named_params! {":agent_id": agent_id})?;
    let mut stmt = conn.prepare_cached(
        "INSERT INTO offerings (id, agent_id, position, title, deliverable, for_whom, not_doing,
            mode, turnaround_days, languages, tags)
         VALUES (:id, :agent_id, :position, :title, :deliverable, :for_whom, :not_doing,
            :mode, :turnaround_days, :languages, :tags)",
    )?;
    for (position, o) in offerings.iter().enumerate() {
        stmt.execute(named_params! {
            ":id": o.id,
            ":agent_id": agent_id,
            ":position": position as i64,
            ":title": o.title,
            ":deliverable": o.deliverable,
            ":for_whom": o.for_whom,
            ":not_doing": o.not_doing,
            ":mode": o.mode,
            ":turnaround_days": o.turnaround_days,
            ":languages": to_json(&o.languages),
            ":tags": to_json(&o.tags),
        })?;
    }
    Ok(())
}
