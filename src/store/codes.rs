//! The `verification_codes` table: the single live code per agent and purpose that an inbound
//! message must carry to verify a mailbox or claim an owner.

use rusqlite::{Connection, OptionalExtension, params};

use crate::error::Result;

#[derive(Debug, Clone)]
pub struct CodeRow {
    pub agent_id: i64,
    pub purpose: String,
    pub code: String,
    pub address: String,
    pub expires_at: i64,
}

/// Stores a new code for (agent, purpose), replacing the previous one.
pub fn replace(conn: &Connection, row: &CodeRow) -> Result<()> {
    conn.execute(
        "INSERT INTO verification_codes (agent_id, purpose, code, address, expires_at)
         VALUES (?1, ?2, ?3, ?4, ?5)
         ON CONFLICT (agent_id, purpose) DO UPDATE SET code = excluded.code,
            address = excluded.address, expires_at = excluded.expires_at",
        params![row.agent_id, row.purpose, row.code, row.address, row.expires_at],
    )?;
    Ok(())
}

pub fn by_code(conn: &Connection, code: &str) -> Result<Option<CodeRow>> {
    Ok(conn
        .query_row(
            "SELECT agent_id, purpose, code, address, expires_at FROM verification_codes WHERE code = ?1",
            [code],
            |r| {
                Ok(CodeRow {
                    agent_id: r.get(0)?,
                    purpose: r.get(1)?,
                    code: r.get(2)?,
                    address: r.get(3)?,
                    expires_at: r.get(4)?,
                })
            },
        )
        .optional()?)
}

/// Removes the code of (agent, purpose), used or no longer valid.
pub fn remove(conn: &Connection, agent_id: i64, purpose: &str) -> Result<()> {
    conn.execute(
        "DELETE FROM verification_codes WHERE agent_id = ?1 AND purpose = ?2",
        params![agent_id, purpose],
    )?;
    Ok(())
}
