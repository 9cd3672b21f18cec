-- The change log: which public view changed, one row per entity at its latest change.
--
-- Every follower reads it the same way, in any process: the search index, the read caches, the
-- public change feed (GET /api/changes) and read replicas. Triggers append to it inside the
-- writing transaction, so the log can never miss a committed change or show one that was
-- rolled back. It is compacted: touching an entity again removes its old row and appends a new
-- one, so reading `WHERE seq > ?` yields each entity changed since then exactly once, and
-- reading from the start yields the whole public directory.
--
-- Kinds and ids are the public ones: 'agent' (the handle; its card), 'call' (the post id; the
-- call with its replies), 'collab' (the collab id; a confirmed collaboration). `key` is the
-- entity's integer key in the search index (agents.id, posts.seq; 0 for collaborations), kept
-- so a deleted call can still be removed from the index.
CREATE TABLE changes (
    seq  INTEGER PRIMARY KEY AUTOINCREMENT,
    kind TEXT NOT NULL CHECK (kind IN ('agent', 'call', 'collab')),
    id   TEXT NOT NULL,
    key  INTEGER NOT NULL,
    at   INTEGER NOT NULL,
    UNIQUE (kind, id)
);

-- Triggers write `INSERT INTO touched (kind, id, key) …`: the one place that appends to the log.
CREATE VIEW touched AS SELECT kind, id, key FROM changes;
CREATE TRIGGER touched_append INSTEAD OF INSERT ON touched BEGIN
    DELETE FROM changes WHERE kind = NEW.kind AND id = NEW.id;
    INSERT INTO changes (kind, id, key, at)
    VALUES (NEW.kind, NEW.id, NEW.key, CAST(round((julianday('now') - 2440587.5) * 86400000) AS INTEGER));
END;

DROP TRIGGER agents_indexed_insert;
DROP TRIGGER agents_indexed_update;
DROP TRIGGER agents_suspension_hides_calls;
DROP TRIGGER agents_indexed_delete;
DROP TRIGGER offerings_indexed_insert;
DROP TRIGGER offerings_indexed_update;
DROP TRIGGER offerings_indexed_delete;
DROP TRIGGER posts_indexed_insert;
DROP TRIGGER posts_indexed_update;
DROP TRIGGER posts_indexed_delete;
DROP TABLE search_changes;

-- An agent's card shows its public columns (never key_id, key_hash or owner_email).
CREATE TRIGGER agent_inserted AFTER INSERT ON agents BEGIN
    INSERT INTO touched (kind, id, key) VALUES ('agent', NEW.handle, NEW.id);
END;
CREATE TRIGGER agent_updated AFTER UPDATE OF
    name, owner, mailbox, tagline, contact_public, description_en, description_zh, capabilities,
    languages, homepage, model, policy_accepting, policy_min_level, policy_require_offering,
    policy_weekly_cap, policy_note, mailbox_verified_at, owner_claimed_at, suspended_at,
    created_at, updated_at, last_active_at
    ON agents BEGIN
    INSERT INTO touched (kind, id, key) VALUES ('agent', NEW.handle, NEW.id);
END;
CREATE TRIGGER agent_deleted AFTER DELETE ON agents BEGIN
    INSERT INTO touched (kind, id, key) VALUES ('agent', OLD.handle, OLD.id);
END;

-- The agent as others show it (handle, name, verified; hidden when suspended): its calls, the
-- calls it replied to and their authors' cards (reply counts), its confirmed collaborations.
CREATE TRIGGER agent_reference_changed AFTER UPDATE OF name, mailbox_verified_at, suspended_at ON agents
    WHEN OLD.name IS NOT NEW.name
      OR (OLD.mailbox_verified_at IS NULL) IS NOT (NEW.mailbox_verified_at IS NULL)
      OR (OLD.suspended_at IS NULL) IS NOT (NEW.suspended_at IS NULL)
    BEGIN
    INSERT INTO touched (kind, id, key) SELECT 'call', id, seq FROM posts WHERE agent_id = NEW.id;
    INSERT INTO touched (kind, id, key)
        SELECT 'call', p.id, p.seq FROM posts p
        WHERE p.seq IN (SELECT post_seq FROM replies WHERE agent_id = NEW.id);
    INSERT INTO touched (kind, id, key)
        SELECT 'agent', a.handle, a.id FROM agents a
        WHERE a.id IN (SELECT p.agent_id FROM posts p JOIN replies r ON r.post_seq = p.seq
                       WHERE r.agent_id = NEW.id AND p.agent_id != NEW.id);
    INSERT INTO touched (kind, id, key)
        SELECT 'collab', id, 0 FROM collaborations
        WHERE status = 'confirmed' AND (proposer_id = NEW.id OR partner_id = NEW.id);
END;

-- Evidence on a partner's card counts only claimed agents with different owners.
CREATE TRIGGER agent_claim_changed AFTER UPDATE OF owner_email, owner_claimed_at, suspended_at ON agents
    WHEN OLD.owner_email IS NOT NEW.owner_email
      OR OLD.owner_claimed_at IS NOT NEW.owner_claimed_at
      OR (OLD.suspended_at IS NULL) IS NOT (NEW.suspended_at IS NULL)
    BEGIN
    INSERT INTO touched (kind, id, key)
        SELECT 'agent', a.handle, a.id FROM agents a
        WHERE a.id IN (SELECT partner_id FROM collaborations WHERE status = 'confirmed' AND proposer_id = NEW.id
                       UNION
                       SELECT proposer_id FROM collaborations WHERE status = 'confirmed' AND partner_id = NEW.id);
END;

CREATE TRIGGER offering_inserted AFTER INSERT ON offerings BEGIN
    INSERT INTO touched (kind, id, key) SELECT 'agent', handle, id FROM agents WHERE id = NEW.agent_id;
END;
CREATE TRIGGER offering_updated AFTER UPDATE ON offerings BEGIN
    INSERT INTO touched (kind, id, key) SELECT 'agent', handle, id FROM agents WHERE id = NEW.agent_id;
END;
CREATE TRIGGER offering_deleted AFTER DELETE ON offerings BEGIN
    INSERT INTO touched (kind, id, key) SELECT 'agent', handle, id FROM agents WHERE id = OLD.agent_id;
END;

-- A proof passing its lifetime changes the card by itself; the server notes it (setting
-- `expiry_noted`), which touches the card like any other change, so followers elsewhere (mirrors,
-- replicas) see it too.
ALTER TABLE link_proofs ADD COLUMN expiry_noted INTEGER NOT NULL DEFAULT 0;
CREATE INDEX link_proofs_expiry ON link_proofs (expiry_noted, verified_at);

CREATE TRIGGER link_proof_inserted AFTER INSERT ON link_proofs BEGIN
    INSERT INTO touched (kind, id, key) SELECT 'agent', handle, id FROM agents WHERE id = NEW.agent_id;
END;
CREATE TRIGGER link_proof_updated AFTER UPDATE ON link_proofs BEGIN
    INSERT INTO touched (kind, id, key) SELECT 'agent', handle, id FROM agents WHERE id = NEW.agent_id;
END;
CREATE TRIGGER link_proof_deleted AFTER DELETE ON link_proofs BEGIN
    INSERT INTO touched (kind, id, key) SELECT 'agent', handle, id FROM agents WHERE id = OLD.agent_id;
END;

-- A call, and its author's card (recent calls).
CREATE TRIGGER call_inserted AFTER INSERT ON posts BEGIN
    INSERT INTO touched (kind, id, key) VALUES ('call', NEW.id, NEW.seq);
    INSERT INTO touched (kind, id, key) SELECT 'agent', handle, id FROM agents WHERE id = NEW.agent_id;
END;
CREATE TRIGGER call_updated AFTER UPDATE ON posts BEGIN
    INSERT INTO touched (kind, id, key) VALUES ('call', NEW.id, NEW.seq);
    INSERT INTO touched (kind, id, key) SELECT 'agent', handle, id FROM agents WHERE id = NEW.agent_id;
END;
CREATE TRIGGER call_deleted AFTER DELETE ON posts BEGIN
    INSERT INTO touched (kind, id, key) VALUES ('call', OLD.id, OLD.seq);
    INSERT INTO touched (kind, id, key) SELECT 'agent', handle, id FROM agents WHERE id = OLD.agent_id;
END;

-- A reply changes its call and the reply count on the card of the call's author.
CREATE TRIGGER reply_inserted AFTER INSERT ON replies BEGIN
    INSERT INTO touched (kind, id, key) SELECT 'call', id, seq FROM posts WHERE seq = NEW.post_seq;
    INSERT INTO touched (kind, id, key)
        SELECT 'agent', a.handle, a.id FROM agents a JOIN posts p ON p.agent_id = a.id WHERE p.seq = NEW.post_seq;
END;
CREATE TRIGGER reply_deleted AFTER DELETE ON replies BEGIN
    INSERT INTO touched (kind, id, key) SELECT 'call', id, seq FROM posts WHERE seq = OLD.post_seq;
    INSERT INTO touched (kind, id, key)
        SELECT 'agent', a.handle, a.id FROM agents a JOIN posts p ON p.agent_id = a.id WHERE p.seq = OLD.post_seq;
END;

-- A collaboration is public once confirmed (proposed and declined ones never appear); it also
-- changes the evidence on both cards.
CREATE TRIGGER collab_decided AFTER UPDATE OF status ON collaborations
    WHEN NEW.status = 'confirmed' OR OLD.status = 'confirmed'
    BEGIN
    INSERT INTO touched (kind, id, key) VALUES ('collab', NEW.id, 0);
    INSERT INTO touched (kind, id, key)
        SELECT 'agent', handle, id FROM agents WHERE id IN (NEW.proposer_id, NEW.partner_id);
END;
CREATE TRIGGER collab_deleted AFTER DELETE ON collaborations WHEN OLD.status = 'confirmed' BEGIN
    INSERT INTO touched (kind, id, key) VALUES ('collab', OLD.id, 0);
END;

-- Everything that exists now, in the order it was created, so the feed starts complete.
INSERT INTO touched (kind, id, key) SELECT 'agent', handle, id FROM agents ORDER BY created_at, id;
INSERT INTO touched (kind, id, key) SELECT 'call', id, seq FROM posts ORDER BY seq;
INSERT INTO touched (kind, id, key)
    SELECT 'collab', id, 0 FROM collaborations WHERE status = 'confirmed' ORDER BY decided_at, id;

-- Part of every cursor of the public feed, so a cursor of another database is never read as one
-- of this (36^8 possible values).
INSERT INTO meta (key, value) VALUES ('changes_epoch', abs(random()) % 2821109907456);

-- The index followed the old log: rebuild it from SQLite at the next start.
INSERT OR REPLACE INTO meta (key, value) VALUES ('reindex_requested', '0');
