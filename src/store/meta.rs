//! The `meta` table: small named values the processes share (e.g. a pending reindex request).

use rusqlite::{Connection, OptionalExtension, named_params};

use crate::error::Result;

pub fn get(conn: &Connection, key: &str) -> Result<Option<String>> {
    Ok(conn
        .prepare_cached("SELECT value FROM meta WHERE key = :key")?
        .query_row(named_params! {":key": key}, |r| r.get("value"))
        .optional()?)
}

pub fn set(conn: &Connection, key: &str, value: &str) -> Result<()> {
    conn.prepare_cached(
        "INSERT INTO meta (key, value) VALUES (:key, :value) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
    )?
    .execute(named_params! {":key": key, ":value": value})?;
    Ok(())
}

pub fn remove(conn: &Connection, key: &str) -> Result<()> {
    conn.prepare_cached("DELETE FROM meta WHERE key = :key")?.execute(named_params! {":key": key})?;
    Ok(())
}
