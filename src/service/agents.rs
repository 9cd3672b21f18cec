//! Agents: registration, authentication, completing a handle, the own profile and its changes,
//! offerings and key rotation.

use std::collections::HashSet;

use agentdir_search_index::AgentDoc;

use super::events::tell;
use super::vectors::{self, VectorPlan};
use super::{App, Caller, endpoints};
use crate::app::keys::{self, NewKey};
use crate::app::limits::Persistent;
use crate::app::runtime::Bound;
use crate::derived::views::{self, own_profile};
use crate::domain::agent::{self, OwnProfile, ProfilePatch, Registered, Registration, RotatedKey};
use crate::domain::contact_policy::ContactPolicy;
use crate::domain::events::{ChangedBy, EventDetail, EventKind, SubjectKind};
use crate::domain::offering::{Offering, OfferingList, OfferingsReplacement};
use crate::domain::trust::CodePurpose;
use crate::error::{Error, Result, Rule};
use crate::ids;
use crate::store::agents::{self as agents_store, AgentRow};
use crate::store::{codes, offerings};
use crate::time::now_ms;

impl App {
    /// Registers a new agent. Every check that can refuse it runs first, on a read connection:
    /// the client's budgets (registrations, refused registrations), the endpoints, and whether
    /// the handle is free (not taken, reserved or held); only then the argon2 hash and the
    /// profile's embedding. The write checks the handle and the budget again. A refusal of the
    /// handle spends one unit of the client's budget of refused registrations (in memory), so
    /// a flood of them meets 429 and costs no write. The agent's own budgets start when it
    /// exists: endpoints it registers with spend the new agent's links budget, never one of
    /// whoever had or wanted its handle.
    pub async fn register(&self, input: Registration, client_ip: String) -> Result<Registered> {
        let now = now_ms();
        self.limits.registration_allowed(&client_ip)?;
        let endpoints = input.endpoints.unwrap_or_default();
        endpoints::validate(&endpoints)?;
        self.blocking({
            let (client_ip, handle) = (client_ip.clone(), input.handle.clone());
            move |app| {
                let conn = app.read()?;
                app.limits.check(&conn, Persistent::Registration, &client_ip, now)?;
                if app.settings.reserved_handles.contains(&handle) {
                    return Err(Error::HandleReserved);
                }
                super::handles::ensure_free(&conn, &handle, None, now)
            }
        })
        .await
        .map_err(|e| self.limits.registration_refused(&client_ip, e))?;
        let key = self.new_key().await?;
        let row = AgentRow {
            id: 0,
            public_id: ids::new_id(ids::AGENT),
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
            deleted_at: None,
            created_at: now,
            updated_at: now,
            last_active_at: now,
        };
        let embedded = self.embed_profile(profile_doc(&row)).await?;
        let app = self.clone();
        let ip = client_ip.clone();
        let (agent, to_check) = self
            .write(move |tx| {
                super::handles::ensure_free(tx, &row.handle, None, now)?;
                app.limits.check(tx, Persistent::Registration, &ip, now)?;
                let id = agents_store::insert(tx, &row)?;
                vectors::store_vector(tx, id, embedded)?;
                app.limits.record(tx, Persistent::Registration, &ip, now)?;
                if !endpoints.is_empty() {
                    app.limits.spend_agent(tx, Persistent::Links, id, now)?;
                }
                let to_check = endpoints::replace(tx, id, endpoints, now)?;
                let saved = agents_store::by_id(tx, id)?.ok_or(Error::Internal)?;
                Ok((views::agent(tx, &saved, now)?, to_check))
            })
            .await
            .map_err(|e| self.limits.registration_refused(&client_ip, e))?;
        self.checks.request(to_check);
        self.keys.remember_issued(&key);
        Ok(Registered { api_key: key.key, agent, how_en: agent::KEY_HOW_EN, how_zh: agent::KEY_HOW_ZH })
    }

    /// Resolves a presented API key to its agent. A key this process issued or verified before
    /// is answered from memory. A malformed key, or one whose key id does not exist, is refused
    /// without hashing and costs nothing. Only a wrong secret for an existing key id (an argon2
    /// run that failed) costs the client one unit of the key-check budget; once that is used
    /// up, the client's key checks meet 429 before any hashing. A check waits for one of the
    /// hashing permits new keys use (one per core), so however many wrong keys arrive at once,
    /// argon2's memory stays bounded.
    pub async fn authenticate(&self, presented: String, client_ip: String) -> Result<Caller> {
        let (key_id, secret) = keys::parse(&presented)?;
        let (key_id, secret) = (key_id.to_owned(), secret.to_owned());
        let row = {
            let key_id = key_id.clone();
            self.blocking(move |app| agents_store::by_key_id(&*app.read()?, &key_id))
                .await?
                .ok_or(Error::Unauthorized)?
        };
        if !self.keys.is_known(&key_id, &secret) {
            self.limits.key_check_allowed(&client_ip)?;
            let hash = row.key_hash.clone();
            let verified =
                self.bounded(Bound::Hash, move |app| Ok(app.keys.verify(&key_id, &secret, &hash))).await?;
            if !verified {
                self.limits.key_check_failed(&client_ip)?;
                return Err(Error::Unauthorized);
            }
        }
        if row.suspended_at.is_some() {
            return Err(Error::Suspended);
        }
        Ok(Caller { id: row.id, handle: row.handle, key_id: row.key_id })
    }

    /// Up to `limit` handles of public agents starting with `prefix` (case-insensitive), for
    /// completing a handle as it is typed. A prefix no handle can start with finds nothing.
    pub async fn complete_handles(&self, prefix: String, limit: u32) -> Result<Vec<String>> {
        self.blocking(move |app| {
            let prefix = prefix.trim().trim_start_matches('@').to_ascii_lowercase();
            if !agent::could_begin_handle(&prefix) || limit == 0 {
                return Ok(Vec::new());
            }
            agents_store::handles_with_prefix(&*app.read()?, &prefix, limit)
        })
        .await
    }

    pub async fn own_profile(&self, caller: Caller) -> Result<OwnProfile> {
        self.blocking(move |app| {
            let conn = app.read()?;
            own_profile(&conn, &caller.row(&conn)?, now_ms())
        })
        .await
    }

    /// `PATCH /api/me`. Setting endpoints spends the agent's links budget; a change of what the
    /// profile means (its embedded text) spends one of its profile edits and, unless that text
    /// is the one already embedded, an embedding. Both budgets are checked before the
    /// embedding, and again in the write. The agent's profile writes take turns
    /// ([`App::profile_turn`]).
    pub async fn update_profile(&self, caller: Caller, patch: ProfilePatch) -> Result<OwnProfile> {
        let sets_endpoints = patch.endpoints.is_some();
        if let Some(list) = &patch.endpoints {
            endpoints::validate(list)?;
        }
        let _turn = self.profile_turn(caller.id).await;
        let now = now_ms();
        if sets_endpoints {
            self.blocking(move |app| {
                app.limits.check_agent(&*app.read()?, Persistent::Links, caller.id, now)
            })
            .await?;
        }
        let vector = if patch.changes_profile_text() {
            let patch = patch.clone();
            self.plan_vector(caller.id, move |doc| patch.apply_to_doc(doc), now).await?
        } else {
            VectorPlan { changes_text: false, embedded: None }
        };
        let app = self.clone();
        let written = self.write(move |tx| {
            let mut patch = patch;
            let mut a = caller.row(tx)?;
            let before = a.clone();
            if sets_endpoints {
                app.limits.spend_agent(tx, Persistent::Links, a.id, now)?;
            }
            if vector.changes_text {
                app.limits.spend_agent(tx, Persistent::ProfileEdits, a.id, now)?;
            }
            if let Some(mailbox) = patch.mailbox.take()
                && !mailbox.eq_ignore_ascii_case(&a.mailbox)
            {
                // The mailbox verified before the change still recovers the agent for a while
                // (a stolen key cannot lock the owner out), so recoveries go on.
                super::recovery::mailbox_changing(tx, &a, now)?;
                a.mailbox = mailbox;
                a.mailbox_verified_at = None;
                // A verification code was for the old address.
                codes::remove(tx, a.id, CodePurpose::Mailbox)?;
                // Whoever else holds the key (its owner, if a thief changed it) hears at once.
                let detail = EventDetail { by: Some(ChangedBy::Agent), ..EventDetail::default() };
                tell(tx, a.id, EventKind::MailboxChanged, SubjectKind::Agent, &a.public_id, detail, now)?;
            }
            if let Some(owner) = patch.owner.take()
                && owner != a.owner
            {
                a.owner = owner;
                a.owner_email = None;
                a.owner_claimed_at = None;
                codes::remove(tx, a.id, CodePurpose::Owner)?;
            }
            let to_check = match patch.endpoints.take() {
                Some(list) => endpoints::replace(tx, a.id, list, now)?,
                None => Vec::new(),
            };
            // The field to name when the patch would leave no description: the one it cleared.
            let cleared = match (&patch.description_en, &patch.description_zh) {
                (Some(None), _) | (None, None) => "description_en",
                _ => "description_zh",
            };
            patch.apply(a.profile_mut());
            if a.description_en.is_empty() && a.description_zh.is_empty() {
                return Err(Error::validation(cleared, Rule::DescriptionNeeded));
            }
            a.updated_at = now;
            a.last_active_at = now;
            agents_store::update_profile(tx, &a)?;
            super::events::tell_trust(tx, &before, super::events::by(ChangedBy::Agent), now)?;
            vectors::store_vector(tx, a.id, vector.embedded)?;
            Ok((own_profile(tx, &a, now)?, to_check))
        });
        let (profile, to_check) = written.await?;
        self.checks.request(to_check);
        Ok(profile)
    }

    /// `PUT /api/me/offerings`. The ids it names are checked before anything is embedded; a
    /// change of what the profile means costs as in [`App::update_profile`].
    pub async fn replace_offerings(
        &self,
        caller: Caller,
        input: OfferingsReplacement,
    ) -> Result<OfferingList> {
        let _turn = self.profile_turn(caller.id).await;
        let now = now_ms();
        let named: Vec<Option<String>> = input.offerings.iter().map(|o| o.id.clone()).collect();
        self.blocking(move |app| offering_ids(&*app.read()?, caller.id, &named).map(|_| ())).await?;
        let vector = {
            let titles: Vec<String> = input.offerings.iter().map(|o| o.title.clone()).collect();
            let deliverables: Vec<String> = input.offerings.iter().map(|o| o.deliverable.clone()).collect();
            let tags: Vec<String> =
                input.offerings.iter().flat_map(|o| o.tags.iter().flatten().cloned()).collect();
            let edit = move |doc: &mut AgentDoc| {
                doc.offering_titles = titles;
                doc.offering_deliverables = deliverables;
                doc.offering_tags = tags;
            };
            self.plan_vector(caller.id, edit, now).await?
        };
        let app = self.clone();
        let saved = self
            .write(move |tx| {
                let named: Vec<Option<String>> = input.offerings.iter().map(|o| o.id.clone()).collect();
                let ids = offering_ids(tx, caller.id, &named)?;
                let list: Vec<Offering> = input
                    .offerings
                    .into_iter()
                    .zip(ids)
                    .map(|(o, id)| Offering {
                        id,
                        title: o.title,
                        deliverable: o.deliverable,
                        for_whom: o.for_whom,
                        not_doing: o.not_doing,
                        mode: o.mode,
                        turnaround_days: o.turnaround_days,
                        languages: o.languages.unwrap_or_default(),
                        tags: o.tags.unwrap_or_default(),
                    })
                    .collect();
                if vector.changes_text {
                    app.limits.spend_agent(tx, Persistent::ProfileEdits, caller.id, now)?;
                }
                offerings::replace(tx, caller.id, &list)?;
                agents_store::touch(tx, caller.id, now, true)?;
                vectors::store_vector(tx, caller.id, vector.embedded)?;
                Ok(list)
            })
            .await?;
        Ok(OfferingList { offerings: saved })
    }

    /// A new key, hashed once one of the hashing permits (see `app::runtime`) is free.
    pub(crate) async fn new_key(&self) -> Result<NewKey> {
        self.bounded(Bound::Hash, |_| keys::generate()).await
    }

    pub async fn rotate_key(&self, caller: Caller) -> Result<RotatedKey> {
        let key = self.new_key().await?;
        let (key_id, hash) = (key.key_id.clone(), key.hash.clone());
        let old_key_id = caller.key_id.clone();
        self.write(move |tx| {
            // Of several rotations with one key, the first wins; the others find their key
            // already rotated away.
            let a = caller.current(tx)?;
            let now = now_ms();
            agents_store::set_key(tx, a.id, &key_id, &hash)?;
            codes::remove_started_by_key(tx, a.id)?;
            let detail = EventDetail { by: Some(ChangedBy::Agent), ..EventDetail::default() };
            tell(tx, a.id, EventKind::KeyRotated, SubjectKind::Agent, &a.public_id, detail, now)?;
            agents_store::touch(tx, a.id, now, false)
        })
        .await?;
        self.keys.forget(&old_key_id);
        self.keys.remember_issued(&key);
        Ok(RotatedKey { api_key: key.key })
    }
}

/// The ids of a replacement list of the agent's offerings: each one named must be one of its
/// offerings, named once; one not named is new.
fn offering_ids(conn: &rusqlite::Connection, agent_id: i64, named: &[Option<String>]) -> Result<Vec<String>> {
    let existing: HashSet<String> = offerings::for_agent(conn, agent_id)?.into_iter().map(|o| o.id).collect();
    let mut seen = HashSet::new();
    let mut resolved = Vec::with_capacity(named.len());
    for (i, id) in named.iter().enumerate() {
        let id = match id {
            Some(id) if !existing.contains(id) => {
                return Err(Error::UnknownOffering { field: format!("offerings.{i}.id") });
            }
            Some(id) => id.clone(),
            None => ids::new_id(ids::OFFERING),
        };
        if !seen.insert(id.clone()) {
            return Err(Error::validation(format!("offerings.{i}.id"), Rule::DuplicateId));
        }
        resolved.push(id);
    }
    Ok(resolved)
}

/// A new agent's document as its vector is computed from it (it has no offerings yet).
fn profile_doc(row: &AgentRow) -> AgentDoc {
    AgentDoc {
        handle: row.handle.clone(),
        name: row.name.clone(),
        tagline: row.tagline.clone(),
        description_en: row.description_en.clone(),
        description_zh: row.description_zh.clone(),
        capabilities: row.capabilities.clone(),
        languages: row.languages.clone(),
        ..AgentDoc::default()
    }
}
