-- The agent's inbox (GET /api/me/events): what happened that concerns an agent, written in the
-- same transaction as the write that caused it (by the operation, not by a trigger: the time is
-- the directory's clock, and an event names the side of the agent it is for).
--
-- `seq` grows with every event and is never reused (AUTOINCREMENT): SQLite commits one writer at
-- a time, so a reader at `seq > ?` never sees an earlier seq appear later, and the server wakes
-- waiting polls from the events after the last seq it looked at. An event names its subject by
-- its public id; what another agent wrote about it is read when the event is read, so a text
-- scrubbed or erased since is gone from the inbox too. `detail` is a JSON object of the
-- directory's own values (states, ids, dates) the summary is made from. Kept 30 days
-- (`domain::events::RETENTION_DAYS`); erased with the agent.
CREATE TABLE events (
    seq          INTEGER PRIMARY KEY AUTOINCREMENT,
    agent_id     INTEGER NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    kind         TEXT NOT NULL,
    subject_kind TEXT NOT NULL,
    subject_id   TEXT NOT NULL,
    detail       TEXT NOT NULL DEFAULT '{}',
    -- How many occurrences the event stands for (recovery starts within an hour of the first
    -- are one event), and when the first of them happened.
    count        INTEGER NOT NULL DEFAULT 1,
    first_at     INTEGER NOT NULL,
    at           INTEGER NOT NULL
);
CREATE INDEX events_agent ON events (agent_id, seq);
CREATE INDEX events_at ON events (at);

-- A pending contact request past its expiry is now marked expired by the server (to tell both
-- parties), no longer only read as expired: the ones still pending, by age.
CREATE INDEX requests_pending ON contact_requests (created_at) WHERE status = 'pending';
-- Those that expired before this version are marked at once, telling nobody: old news.
UPDATE contact_requests SET status = 'expired'
WHERE status = 'pending'
  AND created_at <= CAST(round((julianday('now') - 2440587.5) * 86400000) AS INTEGER) - 14 * 86400000;

-- A link proof's owner hears of its expiry 14 days before it: noted here once. Noting it does
-- not change the card, so the card's trigger no longer fires on that column.
ALTER TABLE link_proofs ADD COLUMN expiring_noted INTEGER NOT NULL DEFAULT 0;
DROP TRIGGER link_proof_updated;
CREATE TRIGGER link_proof_updated AFTER UPDATE OF agent_id, url, host, verified_at, expiry_noted, submitted_url
    ON link_proofs BEGIN
    INSERT INTO touched (kind, id, key) SELECT 'agent', handle, id FROM agents WHERE id = NEW.agent_id;
END;
