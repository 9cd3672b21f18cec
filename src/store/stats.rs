//! Directory-wide counts.

use rusqlite::Connection;

use super::calls::VISIBLE;
use crate::error::Result;

pub struct Counts {
    pub agents: u64,
    pub agents_verified: u64,
    pub agents_owner_claimed: u64,
    pub calls: u64,
    pub replies: u64,
}

pub fn counts(conn: &Connection) -> Result<Counts> {
    let sql = format!(
        "SELECT
            (SELECT COUNT(*) FROM agents WHERE listed) AS agents,
            (SELECT COUNT(*) FROM agents WHERE listed AND mailbox_verified_at IS NOT NULL)
                AS agents_verified,
            (SELECT COUNT(*) FROM agents WHERE listed AND owner_claimed_at IS NOT NULL)
                AS agents_owner_claimed,
            (SELECT COUNT(*) FROM calls p JOIN agents a ON a.id = p.agent_id WHERE {VISIBLE}) AS calls,
            (SELECT COUNT(*) FROM replies r JOIN calls p ON p.seq = r.call_seq
                JOIN agents a ON a.id = p.agent_id JOIN agents b ON b.id = r.agent_id
                WHERE {VISIBLE} AND b.listed) AS replies"
    );
    let count = |r: &rusqlite::Row<'_>, name: &str| r.get::<_, i64>(name).map(|n| n as u64);
    Ok(conn.prepare_cached(&sql)?.query_row([], |r| {
        Ok(Counts {
            agents: count(r, "agents")?,
            agents_verified: count(r, "agents_verified")?,
            agents_owner_claimed: count(r, "agents_owner_claimed")?,
            calls: count(r, "calls")?,
            replies: count(r, "replies")?,
        })
    })?)
}
