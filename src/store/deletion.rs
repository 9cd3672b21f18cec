//! Deleting an agent: hiding it at once (with its pending requests and proposals closed), its
//! undo, and the final erasure. Every statement goes through the tables' triggers, so the change
//! log (and with it the feed, the search index, the caches and the replicas) follows.
//!
//! What the final erasure removes is listed in [`ERASED_WITH_THE_AGENT`]: a table that holds
//! something of one agent is added there (or refers to `agents` with `ON DELETE CASCADE`, for
//! the agents whose row is deleted outright).

use rusqlite::{Connection, named_params};

use crate::domain::contact_request::EXPIRY;
use crate::error::Result;

/// The counts of what a deletion hides.
pub struct Held {
    pub calls: u64,
    pub replies: u64,
    pub offerings: u64,
    pub link_proofs: u64,
    pub collaborations: u64,
}

fn count(conn: &Connection, sql: &str, agent: i64) -> Result<u64> {
    let n: i64 = conn.prepare_cached(sql)?.query_row(named_params! {":agent": agent}, |r| r.get("n"))?;
    Ok(n as u64)
}

/// What of `agent` the public could see before its deletion.
pub fn public_counts(conn: &Connection, agent: i64) -> Result<Held> {
    Ok(Held {
        calls: count(
            conn,
            "SELECT COUNT(*) AS n FROM calls WHERE agent_id = :agent AND status = 'active'",
            agent,
        )?,
        replies: count(conn, "SELECT COUNT(*) AS n FROM replies WHERE agent_id = :agent", agent)?,
        offerings: count(conn, "SELECT COUNT(*) AS n FROM offerings WHERE agent_id = :agent", agent)?,
        link_proofs: count(conn, "SELECT COUNT(*) AS n FROM link_proofs WHERE agent_id = :agent", agent)?,
        collaborations: count(
            conn,
            "SELECT COUNT(*) AS n FROM collaborations
             WHERE status = 'confirmed' AND (proposer_id = :agent OR partner_id = :agent)",
            agent,
        )?,
    })
}

/// What a deletion closed that waited on the agent: each record's id and the other party.
#[derive(Debug, Default)]
pub struct Closed {
    /// Live pending requests it sent, now withdrawn (the other party is the recipient).
    pub withdrawn: Vec<(String, i64)>,
    /// Live pending requests it received, now declined (the other party is the sender).
    pub declined: Vec<(String, i64)>,
    /// Collaboration proposals on either side, now declined.
    pub proposals: Vec<(String, i64)>,
}

/// Closes what waits on the agent: live pending requests it sent (withdrawn) and received
/// (declined), and collaboration proposals on either side (declined).
pub fn close_pending(conn: &Connection, agent: i64, now: i64) -> Result<Closed> {
    let params = named_params! {":agent": agent, ":now": now, ":cutoff": now - EXPIRY};
    let pairs = |sql: &str, params: &[(&str, &dyn rusqlite::ToSql)]| -> Result<Vec<(String, i64)>> {
        let mut stmt = conn.prepare_cached(sql)?;
        let rows = stmt.query_map(params, |r| Ok((r.get("id")?, r.get("other")?)))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    };
    Ok(Closed {
        withdrawn: pairs(
            "UPDATE contact_requests SET status = 'withdrawn', decided_at = :now
             WHERE sender_id = :agent AND status = 'pending' AND created_at > :cutoff
             RETURNING id, recipient_id AS other",
            params,
        )?,
        declined: pairs(
            "UPDATE contact_requests SET status = 'declined', decided_at = :now, declined_by_deletion = 1
             WHERE recipient_id = :agent AND status = 'pending' AND created_at > :cutoff
             RETURNING id, sender_id AS other",
            params,
        )?,
        proposals: pairs(
            "UPDATE collaborations SET status = 'declined', decided_at = :now
             WHERE status = 'proposed' AND (proposer_id = :agent OR partner_id = :agent)
             RETURNING id, CASE WHEN proposer_id = :agent THEN partner_id ELSE proposer_id END AS other",
            named_params! {":agent": agent, ":now": now},
        )?,
    })
}

/// Marks the agent deleted and kills its key (`dead_key_id` can match no presented key).
pub fn mark_deleted(conn: &Connection, agent: i64, now: i64, dead_key_id: &str) -> Result<()> {
    conn.prepare_cached(
        "UPDATE agents SET deleted_at = :now, key_id = :dead_key_id, key_hash = '' WHERE id = :agent",
    )?
    .execute(named_params! {":agent": agent, ":now": now, ":dead_key_id": dead_key_id})?;
    Ok(())
}

/// Undoes a deletion (the key is set by the recovery that undoes it).
pub fn unmark_deleted(conn: &Connection, agent: i64) -> Result<()> {
    conn.prepare_cached("UPDATE agents SET deleted_at = NULL WHERE id = :agent")?
        .execute(named_params! {":agent": agent})?;
    Ok(())
}

/// Deleted agents not yet erased whose deletion is at or before `deleted_before`.
pub fn due(conn: &Connection, deleted_before: i64) -> Result<Vec<i64>> {
    let mut stmt = conn.prepare_cached(
        "SELECT id FROM agents WHERE deleted_at IS NOT NULL AND deleted_at <= :before AND erased_at IS NULL
         ORDER BY deleted_at",
    )?;
    let rows = stmt.query_map(named_params! {":before": deleted_before}, |r| r.get("id"))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// The tables whose rows of the agent the final erasure deletes, with the column naming it:
/// its calls (and the replies on them), its replies on others' calls, offerings, link proofs,
/// pending verification codes, recoveries, endpoints, the vector of its profile (with the
/// hash of the text it was computed from) and its inbox. The row's own `ON DELETE CASCADE` covers none of
/// these for a husk, whose row stays.
pub const ERASED_WITH_THE_AGENT: &[(&str, &str)] = &[
    ("calls", "agent_id"),
    ("replies", "agent_id"),
    ("offerings", "agent_id"),
    ("link_proofs", "agent_id"),
    ("verification_codes", "agent_id"),
    ("recoveries", "agent_id"),
    ("endpoints", "agent_id"),
    ("agent_vectors", "agent_id"),
    ("events", "agent_id"),
];

/// Deletes the agent's rows of [`ERASED_WITH_THE_AGENT`]; returns how many of each, in order.
pub fn erase_rows(conn: &Connection, agent: i64) -> Result<Vec<u64>> {
    ERASED_WITH_THE_AGENT
        .iter()
        .map(|(table, column)| {
            let n = conn
                .prepare_cached(&format!("DELETE FROM {table} WHERE {column} = :agent"))?
                .execute(named_params! {":agent": agent})?;
            Ok(n as u64)
        })
        .collect()
}

/// Removes the agent's texts from the records the other parties keep: what it wrote in the
/// requests it sent, the title of its offering in those it received, the summaries it proposed.
/// Returns how many records refer to it.
pub fn scrub_others_records(conn: &Connection, agent: i64) -> Result<u64> {
    let p = named_params! {":agent": agent};
    let sent = conn
        .prepare_cached(
            "UPDATE contact_requests SET purpose = '', deliverable = '', deadline = NULL, context = NULL
             WHERE sender_id = :agent",
        )?
        .execute(p)?;
    let received = conn
        .prepare_cached(
            "UPDATE contact_requests SET offering_id = NULL, offering_title = NULL WHERE recipient_id = :agent",
        )?
        .execute(p)?;
    conn.prepare_cached("UPDATE collaborations SET summary = '' WHERE proposer_id = :agent")?.execute(p)?;
    let collabs = count(
        conn,
        "SELECT COUNT(*) AS n FROM collaborations WHERE proposer_id = :agent OR partner_id = :agent",
        agent,
    )?;
    Ok(sent as u64 + received as u64 + collabs)
}

/// Erases the agent's row: deleted outright when nothing refers to it, else kept as a husk
/// (handle `~<id>`, which is no handle; no profile, no mailbox (nor the previous one), no key)
/// for the records that refer to it.
/// The deletion's tombstone in the change log stays. Returns whether the row was deleted.
pub fn erase_row(conn: &Connection, agent: i64, now: i64) -> Result<bool> {
    let referred = count(
        conn,
        "SELECT (SELECT COUNT(*) FROM contact_requests WHERE sender_id = :agent OR recipient_id = :agent)
              + (SELECT COUNT(*) FROM collaborations WHERE proposer_id = :agent OR partner_id = :agent) AS n",
        agent,
    )?;
    if referred == 0 {
        conn.prepare_cached("DELETE FROM agents WHERE id = :agent")?
            .execute(named_params! {":agent": agent})?;
        return Ok(true);
    }
    conn.prepare_cached(
        "UPDATE agents SET handle = '~' || id, name = '', owner = '', mailbox = '', tagline = '',
            contact_public = 0, description_en = '', description_zh = '', capabilities = '[]',
            languages = '[]', homepage = NULL, model = NULL, policy_note = NULL,
            mailbox_verified_at = NULL, owner_email = NULL, owner_claimed_at = NULL,
            previous_mailbox = NULL, mailbox_changed_at = NULL,
            key_id = '~' || id, key_hash = '', erased_at = :now
         WHERE id = :agent",
    )?
    .execute(named_params! {":agent": agent, ":now": now})?;
    Ok(false)
}
