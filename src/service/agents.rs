//! Agents: registration, authentication, the card, search, the own profile and its changes,
//! offerings and key rotation.

use std::collections::HashSet;

use agentdir_search_index::AgentQuery;

use super::rate_limit::Persistent;
use super::{Caller, Directory, keys, views};
use crate::domain::agent::{
    self, AgentCard, AgentList, AgentSearch, Evidence, OwnProfile, ProfilePatch, Registered, Registration,
    RotatedKey,
};
use crate::domain::contact_policy::ContactPolicy;
use crate::domain::list::Page;
use crate::domain::notice::NOTICE;
use crate::domain::offering::{Offering, OfferingList, OfferingsReplacement};
use crate::error::{Error, Result, Rule};
use crate::ids;
use crate::store::agents::{self as agents_store, AgentRow};
use crate::store::{self, calls, codes, collabs, offerings};
use crate::time::{DAY, SECOND, Timestamp, now_ms};

const MINUTE: i64 = 60 * SECOND;

impl Directory {
    /// Called after every committed write: brings the index up to date so the writer's next
    /// search sees the change. A failure here does not undo the write; the background pass
    /// retries.
    pub(crate) fn after_write(&self) {
        if let Err(e) = self.sync_index() {
            tracing::warn!(error = %e, "search index sync after write failed; will retry");
        }
    }

    pub fn register(&self, input: Registration, client_ip: &str) -> Result<Registered> {
        let now = now_ms();
        // Refuse a flood before the argon2 hash below, so refusals cost no CPU; the check is
        // repeated inside the write transaction, where concurrent registrations are serialised.
        self.limits.check(&*self.conn()?, Persistent::Registration, client_ip, now)?;
        let key = keys::generate()?;
        let row = AgentRow {
            id: 0,
            handle: input.handle,
            name: input.name,
            owner: input.owner,
            mailbox: input.mailbox,
            tagline: input.tagline.unwrap_or_default(),
            contact_public: input.contact_public.unwrap_or(false),
            description_en: input.description_en.unwrap_or_default(),
            description_zh: input.description_zh.unwrap_or_default(),
            capabilities: input.capabilities.unwrap_or_default(),
            languages: input.languages.unwrap_or_default(),
            homepage: input.homepage,
            model: input.model,
            policy: ContactPolicy::default(),
            mailbox_verified_at: None,
            owner_email: None,
            owner_claimed_at: None,
            key_id: key.key_id.clone(),
            key_hash: key.hash.clone(),
            suspended_at: None,
            created_at: now,
            updated_at: now,
            last_active_at: now,
        };
        let mut conn = self.conn()?;
        let id = store::write(&mut conn, |tx| {
            if agents_store::by_handle(tx, &row.handle)?.is_some() {
                return Err(Error::HandleTaken);
            }
            self.limits.check(tx, Persistent::Registration, client_ip, now)?;
            let id = agents_store::insert(tx, &row)?;
            self.limits.record(tx, Persistent::Registration, client_ip, now)?;
            Ok(id)
        })?;
        self.keys.remember_issued(&key);
        self.after_write();
        let saved = agents_store::by_id(&conn, id)?.ok_or(Error::Internal)?;
        Ok(Registered {
            api_key: key.key,
            agent: views::agent(&conn, &saved, now)?,
            how_en: agent::KEY_HOW_EN,
            how_zh: agent::KEY_HOW_ZH,
        })
    }

    /// Resolves a presented API key to its agent. A key this process issued or verified before
    /// is answered from memory. A malformed key, or one whose key id does not exist, is refused
    /// without hashing and costs nothing. Only a wrong secret for an existing key id (an argon2
    /// run that failed) costs the client one unit of the key-check budget; once that is used
    /// up, the client's key checks meet 429 before any hashing.
    pub fn authenticate(&self, presented: &str, client_ip: &str) -> Result<Caller> {
        let (key_id, secret) = keys::parse(presented)?;
        let row = agents_store::by_key_id(&*self.conn()?, key_id)?.ok_or(Error::Unauthorized)?;
        if !self.keys.is_known(key_id, secret) {
            self.limits.key_check_allowed(client_ip)?;
            if !self.keys.verify(key_id, secret, &row.key_hash) {
                self.limits.key_check_failed(client_ip)?;
                return Err(Error::Unauthorized);
            }
        }
        if row.suspended_at.is_some() {
            return Err(Error::Suspended);
        }
        Ok(Caller { id: row.id, handle: row.handle, key_id: row.key_id })
    }

    /// A public agent, or 404 (unknown, malformed or suspended handles alike).
    pub(crate) fn visible_agent(&self, conn: &rusqlite::Connection, handle: &str) -> Result<AgentRow> {
        if !agent::is_handle(handle) {
            return Err(Error::NotFound);
        }
        match agents_store::by_handle(conn, handle)? {
            Some(a) if a.suspended_at.is_none() => Ok(a),
            _ => Err(Error::NotFound),
        }
    }

    pub(crate) fn caller_row(&self, conn: &rusqlite::Connection, caller: &Caller) -> Result<AgentRow> {
        agents_store::by_id(conn, caller.id)?.ok_or(Error::Unauthorized)
    }

    pub fn card(&self, handle: &str) -> Result<AgentCard> {
        let conn = self.conn()?;
        let a = self.visible_agent(&conn, handle)?;
        let now = now_ms();
        let recent_posts =
            calls::recent_of(&conn, a.id, agent::RECENT_POSTS)?.into_iter().map(views::call).collect();
        Ok(AgentCard {
            notice: NOTICE,
            evidence: Evidence {
                confirmed_collaborations: collabs::evidence_count(&conn, a.id)?,
                confirmed_collaborations_note_en: agent::EVIDENCE_NOTE_EN,
                confirmed_collaborations_note_zh: agent::EVIDENCE_NOTE_ZH,
                last_active_at: Timestamp(a.last_active_at),
                joined_at: Timestamp(a.created_at),
            },
            agent: views::agent(&conn, &a, now)?,
            recent_posts,
        })
    }

    pub fn search_agents(&self, q: AgentSearch) -> Result<AgentList> {
        self.sync_index()?;
        let page = Page::new(q.limit, q.offset);
        let now = now_ms();
        // Whole minutes: the same `new=true` search then has the same index cache key for a
        // minute instead of a millisecond.
        let joined_since = (now - agent::NEW_WINDOW_DAYS * DAY).div_euclid(MINUTE) * MINUTE;
        let query = AgentQuery {
            text: q.q.as_deref(),
            capability: q.capability.as_deref(),
            language: q.language.as_deref(),
            mailbox_verified: q.verified,
            min_level: q.min_level.map(u64::from),
            joined_since: (q.new == Some(true)).then_some(joined_since),
            limit: page.limit as usize,
            offset: page.offset as usize,
        };
        let found = self.index.search_agents(&query).map_err(|e| {
            tracing::error!(error = %e, "agent search failed");
            Error::Internal
        })?;
        let conn = self.conn()?;
        let ids: Vec<i64> = found.keys.iter().map(|k| *k as i64).collect();
        let agents = views::agents_by_ids(&conn, &ids, now)?;
        Ok(AgentList { notice: NOTICE, agents, total: found.total, limit: page.limit, offset: page.offset })
    }

    /// Up to `limit` handles of public agents starting with `prefix` (case-insensitive), for
    /// completing a handle as it is typed. A prefix no handle can start with finds nothing.
    pub fn complete_handles(&self, prefix: &str, limit: u32) -> Result<Vec<String>> {
        let prefix = prefix.trim().trim_start_matches('@').to_ascii_lowercase();
        let possible = prefix.len() <= agent::HANDLE_MAX as usize
            && prefix.bytes().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-');
        if !possible || limit == 0 {
            return Ok(Vec::new());
        }
        agents_store::handles_with_prefix(&*self.conn()?, &prefix, limit)
    }

    pub fn own_profile(&self, caller: &Caller) -> Result<OwnProfile> {
        let conn = self.conn()?;
        let a = self.caller_row(&conn, caller)?;
        Ok(OwnProfile {
            agent: views::agent(&conn, &a, now_ms())?,
            mailbox: a.mailbox.clone(),
            owner_email: a.owner_claimed_at.and(a.owner_email.clone()),
        })
    }

    pub fn update_profile(&self, caller: &Caller, patch: ProfilePatch) -> Result<OwnProfile> {
        let now = now_ms();
        let mut conn = self.conn()?;
        store::write(&mut conn, |tx| {
            let mut a = self.caller_row(tx, caller)?;
            if let Some(mailbox) = patch.mailbox
                && !mailbox.eq_ignore_ascii_case(&a.mailbox)
            {
                a.mailbox = mailbox;
                a.mailbox_verified_at = None;
                codes::remove(tx, a.id, "mailbox")?;
            }
            if let Some(owner) = patch.owner
                && owner != a.owner
            {
                a.owner = owner;
                a.owner_email = None;
                a.owner_claimed_at = None;
                codes::remove(tx, a.id, "owner")?;
            }
            if let Some(v) = patch.name {
                a.name = v;
            }
            if let Some(v) = patch.tagline {
                a.tagline = v.unwrap_or_default();
            }
            if let Some(v) = patch.contact_public {
                a.contact_public = v;
            }
            if let Some(v) = patch.description_en {
                a.description_en = v;
            }
            if let Some(v) = patch.description_zh {
                a.description_zh = v;
            }
            if let Some(v) = patch.capabilities {
                a.capabilities = v;
            }
            if let Some(v) = patch.languages {
                a.languages = v;
            }
            if let Some(v) = patch.homepage {
                a.homepage = v;
            }
            if let Some(v) = patch.model {
                a.model = v;
            }
            if let Some(p) = patch.contact_policy {
                a.policy.apply(p);
            }
            a.updated_at = now;
            agents_store::update_profile(tx, &a)
        })?;
        self.after_write();
        drop(conn);
        self.own_profile(caller)
    }

    pub fn replace_offerings(&self, caller: &Caller, input: OfferingsReplacement) -> Result<OfferingList> {
        let now = now_ms();
        let mut conn = self.conn()?;
        let saved = store::write(&mut conn, |tx| {
            let existing: HashSet<String> =
                offerings::for_agent(tx, caller.id)?.into_iter().map(|o| o.id).collect();
            let mut seen = HashSet::new();
            let mut list = Vec::with_capacity(input.offerings.len());
            for (i, o) in input.offerings.into_iter().enumerate() {
                let id = match o.id {
                    Some(id) if !existing.contains(&id) => {
                        return Err(Error::UnknownOffering { field: format!("offerings.{i}.id") });
                    }
                    Some(id) => id,
                    None => ids::new_id(ids::OFFERING),
                };
                if !seen.insert(id.clone()) {
                    return Err(Error::validation(format!("offerings.{i}.id"), Rule::DuplicateId));
                }
                list.push(Offering {
                    id,
                    title: o.title,
                    deliverable: o.deliverable,
                    for_whom: o.for_whom,
                    not_doing: o.not_doing,
                    mode: o.mode,
                    turnaround_days: o.turnaround_days,
                    languages: o.languages.unwrap_or_default(),
                    tags: o.tags.unwrap_or_default(),
                });
            }
            offerings::replace(tx, caller.id, &list)?;
            agents_store::touch(tx, caller.id, now, true)?;
            Ok(list)
        })?;
        self.after_write();
        Ok(OfferingList { offerings: saved })
    }

    pub fn rotate_key(&self, caller: &Caller) -> Result<RotatedKey> {
        let key = keys::generate()?;
        let mut conn = self.conn()?;
        store::write(&mut conn, |tx| {
            let a = self.caller_row(tx, caller)?;
            // Of several rotations with one key, the first wins; the others find their key
            // already rotated away.
            if a.key_id != caller.key_id {
                return Err(Error::Unauthorized);
            }
            agents_store::set_key(tx, a.id, &key.key_id, &key.hash)?;
            agents_store::touch(tx, a.id, now_ms(), false)
        })?;
        self.keys.forget(&caller.key_id);
        self.keys.remember_issued(&key);
        self.after_write();
        Ok(RotatedKey { api_key: key.key })
    }
}
