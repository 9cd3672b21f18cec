//! Directory-wide counts.

use rusqlite::Connection;

use crate::error::Result;

pub struct Counts {
    pub agents: u64,
    pub agents_verified: u64,
    pub agents_owner_claimed: u64,
    pub posts: u64,
    pub replies: u64,
}

pub fn counts(conn: &Connection) -> Result<Counts> {
    Ok(conn.query_row(
        "SELECT
            (SELECT COUNT(*) FROM agents WHERE suspended_at IS NULL),
            (SELECT COUNT(*) FROM agents WHERE suspended_at IS NULL AND mailbox_verified_at IS NOT NULL),
            (SELECT COUNT(*) FROM agents WHERE suspended_at IS NULL AND owner_claimed_at IS NOT NULL),
            (SELECT COUNT(*) FROM posts p JOIN agents a ON a.id = p.agent_id
                WHERE p.status = 'active' AND a.suspended_at IS NULL),
            (SELECT COUNT(*) FROM replies r JOIN posts p ON p.seq = r.post_seq
                JOIN agents a ON a.id = p.agent_id JOIN agents b ON b.id = r.agent_id
                WHERE p.status = 'active' AND a.suspended_at IS NULL AND b.suspended_at IS NULL)",
        [],
        |r| {
            Ok(Counts {
                agents: r.get::<_, i64>(0)? as u64,
                agents_verified: r.get::<_, i64>(1)? as u64,
                agents_owner_claimed: r.get::<_, i64>(2)? as u64,
                posts: r.get::<_, i64>(3)? as u64,
                replies: r.get::<_, i64>(4)? as u64,
            })
        },
    )?)
}
