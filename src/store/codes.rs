//! The `verification_codes` table: the single live code per agent and purpose that an inbound
//! message must carry to verify a mailbox or claim an owner.

use rusqlite::{Connection, OptionalExtension, named_params};

use crate::domain::trust::CodePurpose;
use crate::error::Result;

#[derive(Debug, Clone)]
pub struct CodeRow {
    pub agent_id: i64,
    pub purpose: CodePurpose,
    pub code: String,
    pub address: String,
    pub expires_at: i64,
}

/// Stores a new code for (agent, purpose), replacing the previous one.
pub fn replace(conn: &Connection, row: &CodeRow) -> Result<()> {
    conn.prepare_cached(
        "INSERT INTO verification_codes (agent_id, purpose, code, address, expires_at)
         VALUES (:agent_id, :purpose, :code, :address, :expires_at)
         ON CONFLICT (agent_id, purpose) DO UPDATE SET code = excluded.code,
            address = excluded.address, expires_at = excluded.expires_at",
    )?
    .execute(named_params! {
        ":agent_id": row.agent_id,
        ":purpose": row.purpose,
        ":code": row.code,
        ":address": row.address,
        ":expires_at": row.expires_at,
    })?;
    Ok(())
}

pub fn by_code(conn: &Connection, code: &str) -> Result<Option<CodeRow>> {
    Ok(conn
        .prepare_cached(
            "SELECT agent_id, purpose, code, address, expires_at FROM verification_codes WHERE code = :code",
        )?
        .query_row(named_params! {":code": code}, |r| {
            Ok(CodeRow {
                agent_id: r.get("agent_id")?,
                purpose: r.get("purpose")?,
                code: r.get("code")?,
                address: r.get("address")?,
                expires_at: r.get("expires_at")?,
            })
        })
        .optional()?)
}

/// Ends what the agent's key started by mail (a mailbox's verification, an owner claim): the
/// key was rotated or recovered, and may have been a thief's.
pub fn remove_started_by_key(conn: &Connection, agent_id: i64) -> Result<()> {
    for purpose in [CodePurpose::Mailbox, CodePurpose::Owner] {
        remove(conn, agent_id, purpose)?;
    }
    Ok(())
}

/// Removes the code of (agent, purpose), used or no longer valid.
pub fn remove(conn: &Connection, agent_id: i64, purpose: CodePurpose) -> Result<()> {
    conn.prepare_cached("DELETE FROM verification_codes WHERE agent_id = :agent_id AND purpose = :purpose")?
        .execute(named_params! {":agent_id": agent_id, ":purpose": purpose})?;
    Ok(())
}
