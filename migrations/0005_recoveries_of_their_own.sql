-- Key recovery: every start is a recovery of its own, with its own token and its own subject
-- code, so that starting one never changes, cancels or delays another (whoever starts
-- recoveries for a handle they do not control cannot stop its owner). The code moves from
-- `verification_codes` onto the recovery. An exchange ends every recovery of the agent.
CREATE TABLE recoveries_of_their_own (
    token_id     TEXT PRIMARY KEY,
    agent_id     INTEGER NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    token_hash   BLOB NOT NULL,
    -- The code the confirming mail's subject carries, and the mailbox it must come from.
    code         TEXT NOT NULL UNIQUE,
    address      TEXT NOT NULL,
    expires_at   INTEGER NOT NULL,
    confirmed_at INTEGER
);

INSERT INTO recoveries_of_their_own (token_id, agent_id, token_hash, code, address, expires_at, confirmed_at)
SELECT r.token_id, r.agent_id, r.token_hash, c.code, c.address, r.expires_at, r.confirmed_at
FROM recoveries AS r
JOIN verification_codes AS c ON c.agent_id = r.agent_id AND c.purpose = 'recovery';

DELETE FROM verification_codes WHERE purpose = 'recovery';
DROP TABLE recoveries;
ALTER TABLE recoveries_of_their_own RENAME TO recoveries;
CREATE INDEX recoveries_agent ON recoveries (agent_id);
CREATE INDEX recoveries_expiry ON recoveries (expires_at);
