//! The `agents` table: profiles, contact policy, trust state, key id and hash.

use std::collections::HashMap;

use rusqlite::{Connection, OptionalExtension, Row, params};

use super::{from_json, id_list, is_unique_violation, to_json};
use crate::domain::contact_policy::ContactPolicy;
use crate::error::{Error, Result};

#[derive(Debug, Clone)]
pub struct AgentRow {
    pub id: i64,
    pub handle: String,
    pub name: String,
    pub owner: String,
    pub mailbox: String,
    pub tagline: String,
    pub contact_public: bool,
    pub description_en: String,
    pub description_zh: String,
    pub capabilities: Vec<String>,
    pub languages: Vec<String>,
    pub homepage: Option<String>,
    pub model: Option<String>,
    pub policy: ContactPolicy,
    pub mailbox_verified_at: Option<i64>,
    pub owner_email: Option<String>,
    pub owner_claimed_at: Option<i64>,
    pub key_id: String,
    pub key_hash: String,
    pub suspended_at: Option<i64>,
    pub created_at: i64,
    pub updated_at: i64,
    pub last_active_at: i64,
}

impl AgentRow {
    pub fn level(&self) -> u8 {
        crate::domain::trust::level(self.mailbox_verified_at.is_some(), self.owner_claimed_at.is_some())
    }
}

const COLUMNS: &str = "id, handle, name, owner, mailbox, tagline, contact_public, description_en,
    description_zh, capabilities, languages, homepage, model, policy_accepting, policy_min_level,
    policy_require_offering, policy_weekly_cap, policy_note, mailbox_verified_at, owner_email,
    owner_claimed_at, key_id, key_hash, suspended_at, created_at, updated_at, last_active_at";

fn from_row(r: &Row<'_>) -> rusqlite::Result<AgentRow> {
    Ok(AgentRow {
        id: r.get(0)?,
        handle: r.get(1)?,
        name: r.get(2)?,
        owner: r.get(3)?,
        mailbox: r.get(4)?,
        tagline: r.get(5)?,
        contact_public: r.get(6)?,
        description_en: r.get(7)?,
        description_zh: r.get(8)?,
        capabilities: from_json(&r.get::<_, String>(9)?),
        languages: from_json(&r.get::<_, String>(10)?),
        homepage: r.get(11)?,
        model: r.get(12)?,
        policy: ContactPolicy {
            accepting: r.get(13)?,
            min_level: r.get(14)?,
            require_offering: r.get(15)?,
            weekly_cap: r.get(16)?,
            note: r.get(17)?,
        },
        mailbox_verified_at: r.get(18)?,
        owner_email: r.get(19)?,
        owner_claimed_at: r.get(20)?,
        key_id: r.get(21)?,
        key_hash: r.get(22)?,
        suspended_at: r.get(23)?,
        created_at: r.get(24)?,
        updated_at: r.get(25)?,
        last_active_at: r.get(26)?,
    })
}

fn one(conn: &Connection, filter: &str, param: &dyn rusqlite::ToSql) -> Result<Option<AgentRow>> {
    let sql = format!("SELECT {COLUMNS} FROM agents WHERE {filter}");
    Ok(conn.prepare_cached(&sql)?.query_row([param], from_row).optional()?)
}

pub fn by_handle(conn: &Connection, handle: &str) -> Result<Option<AgentRow>> {
    one(conn, "handle = ?1", &handle)
}

pub fn by_id(conn: &Connection, id: i64) -> Result<Option<AgentRow>> {
    one(conn, "id = ?1", &id)
}

pub fn by_key_id(conn: &Connection, key_id: &str) -> Result<Option<AgentRow>> {
    one(conn, "key_id = ?1", &key_id)
}

/// Rows for the given ids, in the order of `ids` (ids that no longer exist are skipped; a
/// repeated id is returned once). One statement for the whole list: a search page hydrates up
/// to 100 agents per request.
pub fn by_ids(conn: &Connection, ids: &[i64]) -> Result<Vec<AgentRow>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM agents WHERE id IN (SELECT value FROM json_each(?1))"
    ))?;
    let mut found: HashMap<i64, AgentRow> = stmt
        .query_map([id_list(ids)], from_row)?
        .map(|r| r.map(|a| (a.id, a)))
        .collect::<rusqlite::Result<_>>()?;
    Ok(ids.iter().filter_map(|id| found.remove(id)).collect())
}

/// Inserts a new agent; the handle must be free.
pub fn insert(conn: &Connection, a: &AgentRow) -> Result<i64> {
    let res = conn.execute(
        "INSERT INTO agents (handle, name, owner, mailbox, tagline, contact_public, description_en,
            description_zh, capabilities, languages, homepage, model, policy_accepting,
            policy_min_level, policy_require_offering, policy_weekly_cap, policy_note, key_id,
            key_hash, created_at, updated_at, last_active_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18,
            ?19, ?20, ?20, ?20)",
        params![
            a.handle,
            a.name,
            a.owner,
            a.mailbox,
            a.tagline,
            a.contact_public,
            a.description_en,
            a.description_zh,
            to_json(&a.capabilities),
            to_json(&a.languages),
            a.homepage,
            a.model,
            a.policy.accepting,
            a.policy.min_level,
            a.policy.require_offering,
            a.policy.weekly_cap,
            a.policy.note,
            a.key_id,
            a.key_hash,
            a.created_at,
        ],
    );
    match res {
        Ok(_) => Ok(conn.last_insert_rowid()),
        Err(e) if is_unique_violation(&e) => Err(Error::HandleTaken),
        Err(e) => Err(e.into()),
    }
}

/// Writes back every field a profile patch may change, with the trust state it implies.
pub fn update_profile(conn: &Connection, a: &AgentRow) -> Result<()> {
    conn.execute(
        "UPDATE agents SET name = ?2, owner = ?3, mailbox = ?4, tagline = ?5, contact_public = ?6,
            description_en = ?7, description_zh = ?8, capabilities = ?9, languages = ?10,
            homepage = ?11, model = ?12, policy_accepting = ?13, policy_min_level = ?14,
            policy_require_offering = ?15, policy_weekly_cap = ?16, policy_note = ?17,
            mailbox_verified_at = ?18, owner_email = ?19, owner_claimed_at = ?20,
            updated_at = ?21, last_active_at = ?21
         WHERE id = ?1",
        params![
            a.id,
            a.name,
            a.owner,
            a.mailbox,
            a.tagline,
            a.contact_public,
            a.description_en,
            a.description_zh,
            to_json(&a.capabilities),
            to_json(&a.languages),
            a.homepage,
            a.model,
            a.policy.accepting,
            a.policy.min_level,
            a.policy.require_offering,
            a.policy.weekly_cap,
            a.policy.note,
            a.mailbox_verified_at,
            a.owner_email,
            a.owner_claimed_at,
            a.updated_at,
        ],
    )?;
    Ok(())
}

pub fn set_key(conn: &Connection, id: i64, key_id: &str, key_hash: &str) -> Result<()> {
    conn.execute(
        "UPDATE agents SET key_id = ?2, key_hash = ?3 WHERE id = ?1",
        params![id, key_id, key_hash],
    )?;
    Ok(())
}

/// Marks the agent active now (and its profile updated, when `updated`).
pub fn touch(conn: &Connection, id: i64, now: i64, updated: bool) -> Result<()> {
    let sql = if updated {
        "UPDATE agents SET last_active_at = ?2, updated_at = ?2 WHERE id = ?1"
    } else {
        "UPDATE agents SET last_active_at = ?2 WHERE id = ?1"
    };
    conn.prepare_cached(sql)?.execute(params![id, now])?;
    Ok(())
}

pub fn set_mailbox_verified(conn: &Connection, id: i64, at: Option<i64>) -> Result<()> {
    conn.execute(
        "UPDATE agents SET mailbox_verified_at = ?2, updated_at = COALESCE(?2, updated_at) WHERE id = ?1",
        params![id, at],
    )?;
    Ok(())
}

pub fn set_owner_claim(conn: &Connection, id: i64, email: Option<&str>, at: Option<i64>) -> Result<()> {
    conn.execute(
        "UPDATE agents SET owner_email = ?2, owner_claimed_at = ?3, updated_at = COALESCE(?3, updated_at) WHERE id = ?1",
        params![id, email, at],
    )?;
    Ok(())
}

pub fn set_suspended(conn: &Connection, id: i64, at: Option<i64>) -> Result<()> {
    conn.execute("UPDATE agents SET suspended_at = ?2 WHERE id = ?1", params![id, at])?;
    Ok(())
}

/// Handles of visible agents that start with `prefix`, in order; for completing a handle.
/// `prefix` holds only handle characters, so the range `[prefix, prefix + "~")` is exactly the
/// handles that start with it ('~' sorts after a-z, 0-9 and '-') and uses the handle index.
pub fn handles_with_prefix(conn: &Connection, prefix: &str, limit: u32) -> Result<Vec<String>> {
    let mut stmt = conn.prepare_cached(
        "SELECT handle FROM agents WHERE handle >= ?1 AND handle < ?1 || '~' AND suspended_at IS NULL
         ORDER BY handle LIMIT ?2",
    )?;
    let rows = stmt.query_map(params![prefix, limit], |r| r.get(0))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}
