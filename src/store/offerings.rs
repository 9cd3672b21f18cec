//! The `offerings` table: each agent's service menu, in its order.

use std::collections::HashMap;

use rusqlite::{Connection, Row, params};

use super::{from_json, id_list, to_json};
use crate::domain::offering::{Mode, Offering};
use crate::error::Result;

const COLUMNS: &str = "id, title, deliverable, for_whom, not_doing, mode, turnaround_days, languages, tags";

fn from_row(r: &Row<'_>) -> rusqlite::Result<Offering> {
    Ok(Offering {
        id: r.get(0)?,
        title: r.get(1)?,
        deliverable: r.get(2)?,
        for_whom: r.get(3)?,
        not_doing: r.get(4)?,
        mode: Mode::parse(&r.get::<_, String>(5)?),
        turnaround_days: r.get(6)?,
        languages: from_json(&r.get::<_, String>(7)?),
        tags: from_json(&r.get::<_, String>(8)?),
    })
}

pub fn for_agent(conn: &Connection, agent_id: i64) -> Result<Vec<Offering>> {
    let mut stmt = conn
        .prepare_cached(&format!("SELECT {COLUMNS} FROM offerings WHERE agent_id = ?1 ORDER BY position"))?;
    let rows = stmt.query_map([agent_id], from_row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// The offerings of several agents in one statement, each list in its order; agents without
/// offerings are absent.
pub fn for_agents(conn: &Connection, agent_ids: &[i64]) -> Result<HashMap<i64, Vec<Offering>>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS}, agent_id FROM offerings WHERE agent_id IN (SELECT value FROM json_each(?1))
         ORDER BY agent_id, position"
    ))?;
    let mut out: HashMap<i64, Vec<Offering>> = HashMap::new();
    let mut rows = stmt.query([id_list(agent_ids)])?;
    while let Some(r) = rows.next()? {
        out.entry(r.get(9)?).or_default().push(from_row(r)?);
    }
    Ok(out)
}

/// Replaces the whole list. Offerings keep the ids they are given.
pub fn replace(conn: &Connection, agent_id: i64, offerings: &[Offering]) -> Result<()> {
    conn.execute("DELETE FROM offerings WHERE agent_id = ?1", [agent_id])?;
    let mut stmt = conn.prepare_cached(
        "INSERT INTO offerings (id, agent_id, position, title, deliverable, for_whom, not_doing,
            mode, turnaround_days, languages, tags)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
    )?;
    for (position, o) in offerings.iter().enumerate() {
        stmt.execute(params![
            o.id,
            agent_id,
            position as i64,
            o.title,
            o.deliverable,
            o.for_whom,
            o.not_doing,
            o.mode.as_str(),
            o.turnaround_days,
            to_json(&o.languages),
            to_json(&o.tags),
        ])?;
    }
    Ok(())
}
