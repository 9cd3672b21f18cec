-- Endpoints an agent lists (A2A, MCP, plain HTTP), with what the last liveness check found,
-- and the agents' stable public ids (the `sub` of signed statements).

-- A public id stays with the agent for life, across renames, and is never given to another:
-- `agt_` and a ULID (lower-case Crockford base32, as `ids::new_id` writes them). Agents that
-- exist already get one made of their creation time and 80 random bits, the same shape.
ALTER TABLE agents ADD COLUMN public_id TEXT;
UPDATE agents SET public_id =
    'agt_' ||
    substr('0123456789abcdefghjkmnpqrstvwxyz', ((created_at >> 45) & 31) + 1, 1) ||
    substr('0123456789abcdefghjkmnpqrstvwxyz', ((created_at >> 40) & 31) + 1, 1) ||
    substr('0123456789abcdefghjkmnpqrstvwxyz', ((created_at >> 35) & 31) + 1, 1) ||
    substr('0123456789abcdefghjkmnpqrstvwxyz', ((created_at >> 30) & 31) + 1, 1) ||
    substr('0123456789abcdefghjkmnpqrstvwxyz', ((created_at >> 25) & 31) + 1, 1) ||
    substr('0123456789abcdefghjkmnpqrstvwxyz', ((created_at >> 20) & 31) + 1, 1) ||
    substr('0123456789abcdefghjkmnpqrstvwxyz', ((created_at >> 15) & 31) + 1, 1) ||
    substr('0123456789abcdefghjkmnpqrstvwxyz', ((created_at >> 10) & 31) + 1, 1) ||
    substr('0123456789abcdefghjkmnpqrstvwxyz', ((created_at >> 5) & 31) + 1, 1) ||
    substr('0123456789abcdefghjkmnpqrstvwxyz', ((created_at >> 0) & 31) + 1, 1) ||
    substr('0123456789abcdefghjkmnpqrstvwxyz', (random() & 31) + 1, 1) ||
    substr('0123456789abcdefghjkmnpqrstvwxyz', (random() & 31) + 1, 1) ||
    substr('0123456789abcdefghjkmnpqrstvwxyz', (random() & 31) + 1, 1) ||
    substr('0123456789abcdefghjkmnpqrstvwxyz', (random() & 31) + 1, 1) ||
    substr('0123456789abcdefghjkmnpqrstvwxyz', (random() & 31) + 1, 1) ||
    substr('0123456789abcdefghjkmnpqrstvwxyz', (random() & 31) + 1, 1) ||
    substr('0123456789abcdefghjkmnpqrstvwxyz', (random() & 31) + 1, 1) ||
    substr('0123456789abcdefghjkmnpqrstvwxyz', (random() & 31) + 1, 1) ||
    substr('0123456789abcdefghjkmnpqrstvwxyz', (random() & 31) + 1, 1) ||
    substr('0123456789abcdefghjkmnpqrstvwxyz', (random() & 31) + 1, 1) ||
    substr('0123456789abcdefghjkmnpqrstvwxyz', (random() & 31) + 1, 1) ||
    substr('0123456789abcdefghjkmnpqrstvwxyz', (random() & 31) + 1, 1) ||
    substr('0123456789abcdefghjkmnpqrstvwxyz', (random() & 31) + 1, 1) ||
    substr('0123456789abcdefghjkmnpqrstvwxyz', (random() & 31) + 1, 1) ||
    substr('0123456789abcdefghjkmnpqrstvwxyz', (random() & 31) + 1, 1) ||
    substr('0123456789abcdefghjkmnpqrstvwxyz', (random() & 31) + 1, 1)
WHERE public_id IS NULL;
CREATE UNIQUE INDEX agents_public_id ON agents (public_id);

-- At most three per agent (the limit lives in `domain::endpoint`). What a check learned sits
-- in named columns; a check that finds what is stored writes nothing, so scheduled checks never
-- touch the change log. Check times are not stored here (see `service::endpoint_checks`).
CREATE TABLE endpoints (
    agent_id         INTEGER NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    position         INTEGER NOT NULL,
    kind             TEXT NOT NULL CHECK (kind IN ('a2a', 'mcp', 'http')),
    url              TEXT NOT NULL,
    status           TEXT NOT NULL DEFAULT 'unchecked' CHECK (status IN ('unchecked', 'live', 'down', 'invalid')),
    status_since     INTEGER NOT NULL,
    -- a2a: the card's name; mcp: the server's name.
    learned_name     TEXT,
    -- a2a: the card's protocol version; mcp: the protocol revision.
    protocol_version TEXT,
    -- a2a: skills on the card; mcp: tools listed.
    item_count       INTEGER,
    -- mcp: answered 401 with an OAuth challenge.
    auth_required    INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (agent_id, position),
    UNIQUE (agent_id, kind, url)
);

-- Endpoints are part of the card.
CREATE TRIGGER endpoint_inserted AFTER INSERT ON endpoints BEGIN
    INSERT INTO touched (kind, id, key) SELECT 'agent', handle, id FROM agents WHERE id = NEW.agent_id;
END;
CREATE TRIGGER endpoint_updated AFTER UPDATE ON endpoints BEGIN
    INSERT INTO touched (kind, id, key) SELECT 'agent', handle, id FROM agents WHERE id = NEW.agent_id;
END;
CREATE TRIGGER endpoint_deleted AFTER DELETE ON endpoints BEGIN
    INSERT INTO touched (kind, id, key) SELECT 'agent', handle, id FROM agents WHERE id = OLD.agent_id;
END;
