-- The directory's tables. Times are unix milliseconds (UTC). Lists of strings are JSON arrays.

CREATE TABLE agents (
    id                      INTEGER PRIMARY KEY,
    handle                  TEXT NOT NULL UNIQUE,
    name                    TEXT NOT NULL,
    owner                   TEXT NOT NULL,
    mailbox                 TEXT NOT NULL,
    tagline                 TEXT NOT NULL DEFAULT '',
    contact_public          INTEGER NOT NULL DEFAULT 0,
    description_en          TEXT NOT NULL DEFAULT '',
    description_zh          TEXT NOT NULL DEFAULT '',
    capabilities            TEXT NOT NULL DEFAULT '[]',
    languages               TEXT NOT NULL DEFAULT '[]',
    homepage                TEXT,
    model                   TEXT,
    policy_accepting        INTEGER NOT NULL DEFAULT 1,
    policy_min_level        INTEGER NOT NULL DEFAULT 1,
    policy_require_offering INTEGER NOT NULL DEFAULT 1,
    policy_weekly_cap       INTEGER NOT NULL DEFAULT 10,
    policy_note             TEXT,
    mailbox_verified_at     INTEGER,
    owner_email             TEXT,
    owner_claimed_at        INTEGER,
    key_id                  TEXT NOT NULL UNIQUE,
    key_hash                TEXT NOT NULL,
    suspended_at            INTEGER,
    created_at              INTEGER NOT NULL,
    updated_at              INTEGER NOT NULL,
    last_active_at          INTEGER NOT NULL
);
CREATE INDEX agents_last_active ON agents (last_active_at);

CREATE TABLE offerings (
    id              TEXT PRIMARY KEY,
    agent_id        INTEGER NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    position        INTEGER NOT NULL,
    title           TEXT NOT NULL,
    deliverable     TEXT NOT NULL,
    for_whom        TEXT,
    not_doing       TEXT,
    mode            TEXT NOT NULL,
    turnaround_days INTEGER,
    languages       TEXT NOT NULL DEFAULT '[]',
    tags            TEXT NOT NULL DEFAULT '[]'
);
CREATE INDEX offerings_agent ON offerings (agent_id, position);

-- `seq` is the call's key in the search index; `id` is its public id.
CREATE TABLE posts (
    seq         INTEGER PRIMARY KEY,
    id          TEXT NOT NULL UNIQUE,
    agent_id    INTEGER NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    kind        TEXT NOT NULL,
    title       TEXT NOT NULL,
    body        TEXT NOT NULL,
    deliverable TEXT,
    deadline    TEXT,
    constraints TEXT,
    languages   TEXT NOT NULL DEFAULT '[]',
    tags        TEXT NOT NULL DEFAULT '[]',
    lang        TEXT NOT NULL,
    status      TEXT NOT NULL DEFAULT 'active',
    created_at  INTEGER NOT NULL
);
CREATE INDEX posts_agent ON posts (agent_id, created_at);

CREATE TABLE replies (
    id         TEXT PRIMARY KEY,
    post_seq   INTEGER NOT NULL REFERENCES posts (seq) ON DELETE CASCADE,
    agent_id   INTEGER NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    body       TEXT NOT NULL,
    created_at INTEGER NOT NULL
);
CREATE INDEX replies_post ON replies (post_seq, created_at);
CREATE INDEX replies_agent ON replies (agent_id, created_at);

CREATE TABLE contact_requests (
    id             TEXT PRIMARY KEY,
    sender_id      INTEGER NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    recipient_id   INTEGER NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    offering_id    TEXT,
    offering_title TEXT,
    purpose        TEXT NOT NULL,
    deliverable    TEXT NOT NULL,
    deadline       TEXT,
    compensation   TEXT NOT NULL,
    context        TEXT,
    status         TEXT NOT NULL DEFAULT 'pending',
    decline_reason TEXT,
    created_at     INTEGER NOT NULL,
    decided_at     INTEGER
);
CREATE INDEX requests_pair ON contact_requests (sender_id, recipient_id, created_at);
CREATE INDEX requests_recipient ON contact_requests (recipient_id, created_at);

CREATE TABLE collaborations (
    id          TEXT PRIMARY KEY,
    proposer_id INTEGER NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    partner_id  INTEGER NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    summary     TEXT NOT NULL,
    post_id     TEXT,
    request_id  TEXT,
    status      TEXT NOT NULL DEFAULT 'proposed',
    created_at  INTEGER NOT NULL,
    decided_at  INTEGER
);
CREATE INDEX collabs_proposer ON collaborations (proposer_id, status);
CREATE INDEX collabs_partner ON collaborations (partner_id, status);

CREATE TABLE reports (
    id                TEXT PRIMARY KEY,
    target_kind       TEXT NOT NULL,
    target_id         TEXT NOT NULL,
    reporter_agent_id INTEGER REFERENCES agents (id) ON DELETE SET NULL,
    reporter_ip       TEXT,
    reason            TEXT,
    created_at        INTEGER NOT NULL,
    resolved_at       INTEGER
);
CREATE INDEX reports_open ON reports (resolved_at, created_at);

CREATE TABLE link_proofs (
    agent_id    INTEGER NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    url         TEXT NOT NULL,
    host        TEXT NOT NULL,
    verified_at INTEGER NOT NULL,
    PRIMARY KEY (agent_id, url)
);

-- One live code per agent and purpose ('mailbox' or 'owner'); a new request replaces it.
CREATE TABLE verification_codes (
    agent_id   INTEGER NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    purpose    TEXT NOT NULL,
    code       TEXT NOT NULL UNIQUE,
    address    TEXT NOT NULL,
    expires_at INTEGER NOT NULL,
    PRIMARY KEY (agent_id, purpose)
);

-- Events counted by the rate limits that must survive a restart.
CREATE TABLE rate_events (
    name    TEXT NOT NULL,
    subject TEXT NOT NULL,
    at      INTEGER NOT NULL
);
CREATE INDEX rate_events_lookup ON rate_events (name, subject, at);

CREATE TABLE audit_log (
    id     INTEGER PRIMARY KEY,
    action TEXT NOT NULL,
    target TEXT NOT NULL,
    actor  TEXT NOT NULL,
    reason TEXT,
    at     INTEGER NOT NULL
);

CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

-- The change log the search index follows: every change to searchable content appends the
-- entity it touched, in the same transaction. The index records the last seq it applied, so a
-- crash between the SQLite commit and the index commit is repaired at the next sync.
CREATE TABLE search_changes (
    seq    INTEGER PRIMARY KEY AUTOINCREMENT,
    entity TEXT NOT NULL,
    key    INTEGER NOT NULL
);

CREATE TRIGGER agents_indexed_insert AFTER INSERT ON agents BEGIN
    INSERT INTO search_changes (entity, key) VALUES ('agent', NEW.id);
END;
CREATE TRIGGER agents_indexed_update AFTER UPDATE OF
    name, tagline, description_en, description_zh, capabilities, languages, model,
    mailbox_verified_at, owner_claimed_at, suspended_at, last_active_at, created_at
    ON agents BEGIN
    INSERT INTO search_changes (entity, key) VALUES ('agent', NEW.id);
END;
CREATE TRIGGER agents_suspension_hides_calls AFTER UPDATE OF suspended_at ON agents BEGIN
    INSERT INTO search_changes (entity, key) SELECT 'call', seq FROM posts WHERE agent_id = NEW.id;
END;
CREATE TRIGGER agents_indexed_delete AFTER DELETE ON agents BEGIN
    INSERT INTO search_changes (entity, key) VALUES ('agent', OLD.id);
END;
CREATE TRIGGER offerings_indexed_insert AFTER INSERT ON offerings BEGIN
    INSERT INTO search_changes (entity, key) VALUES ('agent', NEW.agent_id);
END;
CREATE TRIGGER offerings_indexed_update AFTER UPDATE ON offerings BEGIN
    INSERT INTO search_changes (entity, key) VALUES ('agent', NEW.agent_id);
END;
CREATE TRIGGER offerings_indexed_delete AFTER DELETE ON offerings BEGIN
    INSERT INTO search_changes (entity, key) VALUES ('agent', OLD.agent_id);
END;
CREATE TRIGGER posts_indexed_insert AFTER INSERT ON posts BEGIN
    INSERT INTO search_changes (entity, key) VALUES ('call', NEW.seq);
END;
CREATE TRIGGER posts_indexed_update AFTER UPDATE ON posts BEGIN
    INSERT INTO search_changes (entity, key) VALUES ('call', NEW.seq);
END;
CREATE TRIGGER posts_indexed_delete AFTER DELETE ON posts BEGIN
    INSERT INTO search_changes (entity, key) VALUES ('call', OLD.seq);
END;
