//! The `agents` table: profiles, contact policy, trust state, key id and hash.

use std::collections::HashMap;

use rusqlite::{Connection, OptionalExtension, Row, ToSql, named_params};

use super::{JsonList, id_list, is_unique_violation, to_json};
use crate::domain::agent::ProfileFields;
use crate::domain::contact_policy::ContactPolicy;
use crate::domain::recovery::PreviousMailbox;
use crate::error::{Error, Result};

#[derive(Debug, Clone)]
pub struct AgentRow {
    pub id: i64,
    /// The stable public id (`agt_…`): the same across renames, never reused.
    pub public_id: String,
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
    /// Set by `DELETE /api/me` (or an operator); cleared by a recovery within the grace period.
    pub deleted_at: Option<i64>,
    pub created_at: i64,
    pub updated_at: i64,
    pub last_active_at: i64,
}

impl AgentRow {
    /// The public may see it: neither suspended nor deleted (the `listed` column).
    pub fn is_listed(&self) -> bool {
        self.suspended_at.is_none() && self.deleted_at.is_none()
    }

    /// The fields a profile patch edits in place (`ProfilePatch::apply`).
    pub fn profile_mut(&mut self) -> ProfileFields<'_> {
        ProfileFields {
            name: &mut self.name,
            tagline: &mut self.tagline,
            contact_public: &mut self.contact_public,
            description_en: &mut self.description_en,
            description_zh: &mut self.description_zh,
            capabilities: &mut self.capabilities,
            languages: &mut self.languages,
            homepage: &mut self.homepage,
            model: &mut self.model,
            contact_policy: &mut self.policy,
        }
    }

    pub fn level(&self) -> u8 {
        crate::domain::trust::level(self.mailbox_verified_at.is_some(), self.owner_claimed_at.is_some())
    }
}

const COLUMNS: &str = "id, public_id, handle, name, owner, mailbox, tagline, contact_public, description_en,
    description_zh, capabilities, languages, homepage, model, policy_accepting, policy_min_level,
    policy_require_offering, policy_weekly_cap, policy_note, mailbox_verified_at, owner_email,
    owner_claimed_at, key_id, key_hash, suspended_at, deleted_at, created_at, updated_at, last_active_at";

fn from_row(r: &Row<'_>) -> rusqlite::Result<AgentRow> {
    Ok(AgentRow {
        id: r.get("id")?,
        public_id: r.get("public_id")?,
        handle: r.get("handle")?,
        name: r.get("name")?,
        owner: r.get("owner")?,
        mailbox: r.get("mailbox")?,
        tagline: r.get("tagline")?,
        contact_public: r.get("contact_public")?,
        description_en: r.get("description_en")?,
        description_zh: r.get("description_zh")?,
        capabilities: r.get::<_, JsonList>("capabilities")?.0,
        languages: r.get::<_, JsonList>("languages")?.0,
        homepage: r.get("homepage")?,
        model: r.get("model")?,
        policy: ContactPolicy {
            accepting: r.get("policy_accepting")?,
            min_level: r.get("policy_min_level")?,
            require_offering: r.get("policy_require_offering")?,
            weekly_cap: r.get("policy_weekly_cap")?,
            note: r.get("policy_note")?,
        },
        mailbox_verified_at: r.get("mailbox_verified_at")?,
        owner_email: r.get("owner_email")?,
        owner_claimed_at: r.get("owner_claimed_at")?,
        key_id: r.get("key_id")?,
        key_hash: r.get("key_hash")?,
        suspended_at: r.get("suspended_at")?,
        deleted_at: r.get("deleted_at")?,
        created_at: r.get("created_at")?,
        updated_at: r.get("updated_at")?,
        last_active_at: r.get("last_active_at")?,
    })
}

fn one(conn: &Connection, filter: &str, value: &dyn rusqlite::ToSql) -> Result<Option<AgentRow>> {
    let sql = format!("SELECT {COLUMNS} FROM agents WHERE {filter}");
    Ok(conn.prepare_cached(&sql)?.query_row(&[(":value", value)], from_row).optional()?)
}

pub fn by_handle(conn: &Connection, handle: &str) -> Result<Option<AgentRow>> {
    one(conn, "handle = :value", &handle)
}

pub fn by_id(conn: &Connection, id: i64) -> Result<Option<AgentRow>> {
    one(conn, "id = :value", &id)
}

pub fn by_key_id(conn: &Connection, key_id: &str) -> Result<Option<AgentRow>> {
    one(conn, "key_id = :value", &key_id)
}

/// Rows for the given ids, in the order of `ids` (ids that no longer exist are skipped; a
/// repeated id is returned once). One statement for the whole list: a search page hydrates up
/// to 100 agents per request.
pub fn by_ids(conn: &Connection, ids: &[i64]) -> Result<Vec<AgentRow>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM agents WHERE id IN (SELECT value FROM json_each(:ids))"
    ))?;
    let mut found: HashMap<i64, AgentRow> = stmt
        .query_map(named_params! {":ids": id_list(ids)}, from_row)?
        .map(|r| r.map(|a| (a.id, a)))
        .collect::<rusqlite::Result<_>>()?;
    Ok(ids.iter().filter_map(|id| found.remove(id)).collect())
}

/// The parameters of the profile columns, shared by the insert and the profile update.
fn profile_params<'a>(
    a: &'a AgentRow,
    capabilities: &'a dyn ToSql,
    languages: &'a dyn ToSql,
) -> [(&'static str, &'a dyn ToSql); 18] {
    [
        (":name", &a.name),
        (":owner", &a.owner),
        (":mailbox", &a.mailbox),
        (":tagline", &a.tagline),
        (":contact_public", &a.contact_public),
        (":description_en", &a.description_en),
        (":description_zh", &a.description_zh),
        (":capabilities", capabilities),
        (":languages", languages),
        (":homepage", &a.homepage),
        (":model", &a.model),
        (":policy_accepting", &a.policy.accepting),
        (":policy_min_level", &a.policy.min_level),
        (":policy_require_offering", &a.policy.require_offering),
        (":policy_weekly_cap", &a.policy.weekly_cap),
        (":policy_note", &a.policy.note),
        (":updated_at", &a.updated_at),
        (":last_active_at", &a.last_active_at),
    ]
}

/// Inserts a new agent; the handle must be free.
pub fn insert(conn: &Connection, a: &AgentRow) -> Result<i64> {
    let (capabilities, languages) = (to_json(&a.capabilities), to_json(&a.languages));
    let res = conn
        .prepare_cached(
            &format!(
                "INSERT INTO agents (id, public_id, handle, name, owner, mailbox, tagline, contact_public, description_en,
                    description_zh, capabilities, languages, homepage, model, policy_accepting,
                    policy_min_level, policy_require_offering, policy_weekly_cap, policy_note, key_id,
                    key_hash, created_at, updated_at, last_active_at)
                 VALUES ({}, :public_id, :handle, :name, :owner, :mailbox, :tagline, :contact_public, :description_en,
                    :description_zh, :capabilities, :languages, :homepage, :model, :policy_accepting,
                    :policy_min_level, :policy_require_offering, :policy_weekly_cap, :policy_note, :key_id,
                    :key_hash, :created_at, :updated_at, :last_active_at)",
                super::next_key("agents", "id")
            ),
        )?
        .execute(
            &[
                profile_params(a, &capabilities, &languages).as_slice(),
                named_params! {
                    ":public_id": a.public_id,
                    ":handle": a.handle,
                    ":key_id": a.key_id,
                    ":key_hash": a.key_hash,
                    ":created_at": a.created_at,
                },
            ]
            .concat()[..],
        );
    match res {
        Ok(_) => Ok(conn.last_insert_rowid()),
        Err(e) if is_unique_violation(&e) => Err(Error::HandleTaken),
        Err(e) => Err(e.into()),
    }
}

/// Writes back every field a profile patch may change, with the trust state it implies.
pub fn update_profile(conn: &Connection, a: &AgentRow) -> Result<()> {
    let (capabilities, languages) = (to_json(&a.capabilities), to_json(&a.languages));
    conn.prepare_cached(
        "UPDATE agents SET name = :name, owner = :owner, mailbox = :mailbox, tagline = :tagline,
            contact_public = :contact_public, description_en = :description_en,
            description_zh = :description_zh, capabilities = :capabilities, languages = :languages,
            homepage = :homepage, model = :model, policy_accepting = :policy_accepting,
            policy_min_level = :policy_min_level, policy_require_offering = :policy_require_offering,
            policy_weekly_cap = :policy_weekly_cap, policy_note = :policy_note,
            mailbox_verified_at = :mailbox_verified_at, owner_email = :owner_email,
            owner_claimed_at = :owner_claimed_at, updated_at = :updated_at, last_active_at = :last_active_at
         WHERE id = :id",
    )?
    .execute(
        &[
            profile_params(a, &capabilities, &languages).as_slice(),
            named_params! {
                ":id": a.id,
                ":mailbox_verified_at": a.mailbox_verified_at,
                ":owner_email": a.owner_email,
                ":owner_claimed_at": a.owner_claimed_at,
            },
        ]
        .concat()[..],
    )?;
    Ok(())
}

pub fn set_key(conn: &Connection, id: i64, key_id: &str, key_hash: &str) -> Result<()> {
    conn.prepare_cached("UPDATE agents SET key_id = :key_id, key_hash = :key_hash WHERE id = :id")?
        .execute(named_params! {":id": id, ":key_id": key_id, ":key_hash": key_hash})?;
    Ok(())
}

/// Marks the agent recovered at `now`: a key recovery through its mailbox gave it a new key.
pub fn set_recovered(conn: &Connection, id: i64, now: i64) -> Result<()> {
    conn.prepare_cached("UPDATE agents SET recovered_at = :now WHERE id = :id")?
        .execute(named_params! {":id": id, ":now": now})?;
    Ok(())
}

/// When a key recovery last gave the agent a new key, if ever.
pub fn recovered_at(conn: &Connection, id: i64) -> Result<Option<i64>> {
    Ok(conn
        .prepare_cached("SELECT recovered_at FROM agents WHERE id = :id")?
        .query_row(named_params! {":id": id}, |r| r.get("recovered_at"))
        .optional()?
        .flatten())
}

/// Marks the agent active now (and its profile updated, when `updated`).
pub fn touch(conn: &Connection, id: i64, now: i64, updated: bool) -> Result<()> {
    let sql = if updated {
        "UPDATE agents SET last_active_at = :now, updated_at = :now WHERE id = :id"
    } else {
        "UPDATE agents SET last_active_at = :now WHERE id = :id"
    };
    conn.prepare_cached(sql)?.execute(named_params! {":id": id, ":now": now})?;
    Ok(())
}

pub fn set_mailbox_verified(conn: &Connection, id: i64, at: Option<i64>) -> Result<()> {
    conn.prepare_cached(
        "UPDATE agents SET mailbox_verified_at = :at, updated_at = COALESCE(:at, updated_at) WHERE id = :id",
    )?
    .execute(named_params! {":id": id, ":at": at})?;
    Ok(())
}

/// The mailbox the agent had verified before its mailbox changed, while remembered (see
/// `migrations/0009_previous_mailbox.sql`); whether it still recovers is the caller's question.
pub fn previous_mailbox(conn: &Connection, id: i64) -> Result<Option<PreviousMailbox>> {
    let row: Option<(Option<String>, Option<i64>)> = conn
        .prepare_cached("SELECT previous_mailbox, mailbox_changed_at FROM agents WHERE id = :id")?
        .query_row(named_params! {":id": id}, |r| {
            Ok((r.get("previous_mailbox")?, r.get("mailbox_changed_at")?))
        })
        .optional()?;
    Ok(match row {
        Some((Some(mailbox), Some(changed_at))) => Some(PreviousMailbox { mailbox, changed_at }),
        _ => None,
    })
}

/// The previous mailbox of the agent while it still recovers it at `now`.
pub fn recovering_previous_mailbox(conn: &Connection, id: i64, now: i64) -> Result<Option<PreviousMailbox>> {
    Ok(previous_mailbox(conn, id)?.filter(|p| p.recovers_at(now)))
}

/// Remembers (or, with `None`, forgets) the mailbox verified before a change.
pub fn set_previous_mailbox(conn: &Connection, id: i64, previous: Option<&PreviousMailbox>) -> Result<()> {
    conn.prepare_cached(
        "UPDATE agents SET previous_mailbox = :mailbox, mailbox_changed_at = :changed_at WHERE id = :id",
    )?
    .execute(named_params! {
        ":id": id,
        ":mailbox": previous.map(|p| &p.mailbox),
        ":changed_at": previous.map(|p| p.changed_at),
    })?;
    Ok(())
}

/// Puts `mailbox` back as the agent's mailbox, verified at `now`, and forgets the change that
/// replaced it: a recovery through the previous mailbox undoes the change.
pub fn restore_mailbox(conn: &Connection, id: i64, mailbox: &str, now: i64) -> Result<()> {
    conn.prepare_cached(
        "UPDATE agents SET mailbox = :mailbox, mailbox_verified_at = :now, updated_at = :now,
            previous_mailbox = NULL, mailbox_changed_at = NULL
         WHERE id = :id",
    )?
    .execute(named_params! {":id": id, ":mailbox": mailbox, ":now": now})?;
    Ok(())
}

/// Forgets the previous mailboxes of changes made at or before `changed_before` (they no longer
/// recover anything); returns how many.
pub fn forget_previous_mailboxes(conn: &Connection, changed_before: i64) -> Result<usize> {
    Ok(conn
        .prepare_cached(
            "UPDATE agents SET previous_mailbox = NULL, mailbox_changed_at = NULL
             WHERE mailbox_changed_at IS NOT NULL AND mailbox_changed_at <= :before",
        )?
        .execute(named_params! {":before": changed_before})?)
}

pub fn set_owner_claim(conn: &Connection, id: i64, email: Option<&str>, at: Option<i64>) -> Result<()> {
    conn.prepare_cached(
        "UPDATE agents SET owner_email = :email, owner_claimed_at = :at, updated_at = COALESCE(:at, updated_at)
         WHERE id = :id",
    )?
    .execute(named_params! {":id": id, ":email": email, ":at": at})?;
    Ok(())
}

/// When the agent last renamed itself (`migrations/0023_own_renames.sql`).
pub fn renamed_at(conn: &Connection, id: i64) -> Result<Option<i64>> {
    Ok(conn
        .prepare_cached("SELECT renamed_at FROM agents WHERE id = :id")?
        .query_row(named_params! {":id": id}, |r| r.get("renamed_at"))
        .optional()?
        .flatten())
}

/// Records that the agent renamed itself at `at`.
pub fn set_renamed_at(conn: &Connection, id: i64, at: i64) -> Result<()> {
    conn.prepare_cached("UPDATE agents SET renamed_at = :at WHERE id = :id")?
        .execute(named_params! {":id": id, ":at": at})?;
    Ok(())
}

/// Gives the agent another handle; `HandleTaken` when another agent has it.
pub fn set_handle(conn: &Connection, id: i64, handle: &str) -> Result<()> {
    match conn
        .prepare_cached("UPDATE agents SET handle = :handle WHERE id = :id")?
        .execute(named_params! {":id": id, ":handle": handle})
    {
        Ok(_) => Ok(()),
        Err(e) if is_unique_violation(&e) => Err(Error::HandleTaken),
        Err(e) => Err(e.into()),
    }
}

pub fn set_suspended(conn: &Connection, id: i64, at: Option<i64>) -> Result<()> {
    conn.prepare_cached("UPDATE agents SET suspended_at = :at WHERE id = :id")?
        .execute(named_params! {":id": id, ":at": at})?;
    Ok(())
}

/// Handles of visible agents that start with `prefix`, in order; for completing a handle.
/// `prefix` holds only handle characters, so the range `[prefix, prefix + "~")` is exactly the
/// handles that start with it ('~' sorts after a-z, 0-9 and '-') and uses the handle index.
pub fn handles_with_prefix(conn: &Connection, prefix: &str, limit: u32) -> Result<Vec<String>> {
    let mut stmt = conn.prepare_cached(
        "SELECT handle FROM agents WHERE handle >= :prefix AND handle < :prefix || '~' AND listed
         ORDER BY handle LIMIT :limit",
    )?;
    let rows = stmt.query_map(named_params! {":prefix": prefix, ":limit": limit}, |r| r.get("handle"))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// How many agents the public may see, and the id of every `per`-th of them in the order they
/// joined (where each sitemap starts): one pass over the sitemap index, no agent's row read.
pub fn listed_stretches(conn: &Connection, per: u32) -> Result<(u64, Vec<i64>)> {
    let mut stmt = conn.prepare_cached("SELECT id FROM agents WHERE listed ORDER BY id")?;
    let mut rows = stmt.query([])?;
    let (mut total, mut starts) = (0u64, Vec::new());
    while let Some(row) = rows.next()? {
        if total.is_multiple_of(u64::from(per)) {
            starts.push(row.get("id")?);
        }
        total += 1;
    }
    Ok((total, starts))
}

/// Handles of visible agents with when each last changed, in the order they joined, from the
/// agent `from` up to (not including) `until`, at most `limit`: one sitemap's worth of cards,
/// read from the sitemap index.
pub fn listed_handles(conn: &Connection, from: i64, until: i64, limit: u32) -> Result<Vec<(String, i64)>> {
    let mut stmt = conn.prepare_cached(
        "SELECT handle, updated_at FROM agents WHERE listed AND id >= :from AND id < :until \
         ORDER BY id LIMIT :limit",
    )?;
    let rows = stmt.query_map(named_params! {":from": from, ":until": until, ":limit": limit}, |r| {
        Ok((r.get("handle")?, r.get("updated_at")?))
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}
