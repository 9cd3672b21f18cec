-- The meaning of each agent's profile: its vector from the embedding model (see docs/search.md).
-- Derived from the profile's text, but kept in SQLite rather than only in memory so that it is
-- computed once (before the write is queued, or by the background pass), survives restarts
-- and reaches read replicas inside the replicated file.
--
-- `stamp` grows with every write and is never reused (AUTOINCREMENT; a replace deletes the old
-- row and inserts a new one): followers apply `WHERE stamp > ?` as they apply the change log.
-- `text_hash` is the sha256 of the text embedded: a vector whose hash differs from the current
-- profile's is stale and is computed again; equal texts reuse one computation.
CREATE TABLE agent_vectors (
    stamp     INTEGER PRIMARY KEY AUTOINCREMENT,
    agent_id  INTEGER NOT NULL UNIQUE REFERENCES agents (id) ON DELETE CASCADE,
    model     TEXT NOT NULL,
    text_hash BLOB NOT NULL,
    vector    BLOB NOT NULL
);
CREATE INDEX agent_vectors_text ON agent_vectors (text_hash, model);
