-- Leaving and renaming: an agent deleted with `DELETE /api/me` stays for 7 days, hidden from
-- every public read, so a key recovery through its mailbox can undo the deletion; then it is
-- erased. A renamed agent's old handle, and a deleted agent's handle, are held.

-- When the agent deleted itself (or an operator deleted it); NULL while it is live.
ALTER TABLE agents ADD COLUMN deleted_at INTEGER;
-- When its erasure was final: the row is then a husk (no profile, no key, handle `~<id>`) kept
-- only while others' records (contact requests, collaborations) refer to it.
ALTER TABLE agents ADD COLUMN erased_at INTEGER;
-- The one rule of an agent the public may see: neither suspended nor deleted. Every public read
-- (cards, lists, search, counts, the change feed) filters on it.
ALTER TABLE agents ADD COLUMN listed INTEGER GENERATED ALWAYS AS (suspended_at IS NULL AND deleted_at IS NULL) VIRTUAL;
CREATE INDEX agents_deleted ON agents (deleted_at) WHERE deleted_at IS NOT NULL AND erased_at IS NULL;

-- Handles nobody may register: a renamed agent's previous handle (which redirects to the agent;
-- only its most recent one is held) and a deleted agent's handle. `until` NULL holds it for good
-- (a suspended agent's handle stays out of reach after its deletion).
CREATE TABLE held_handles (
    handle   TEXT PRIMARY KEY,
    agent_id INTEGER REFERENCES agents (id) ON DELETE SET NULL,
    reason   TEXT NOT NULL CHECK (reason IN ('renamed', 'deleted')),
    held_at  INTEGER NOT NULL,
    until    INTEGER
);
CREATE INDEX held_handles_agent ON held_handles (agent_id, reason);

-- The card follows its handle: a rename also writes the old handle to the log (where it reads
-- as a deletion). A deletion or its undo touches the card; the husk's later changes do not.
DROP TRIGGER agent_updated;
CREATE TRIGGER agent_updated AFTER UPDATE OF
    handle, name, owner, mailbox, tagline, contact_public, description_en, description_zh,
    capabilities, languages, homepage, model, policy_accepting, policy_min_level,
    policy_require_offering, policy_weekly_cap, policy_note, mailbox_verified_at, owner_claimed_at,
    suspended_at, deleted_at, created_at, updated_at, last_active_at
    ON agents WHEN OLD.deleted_at IS NULL OR NEW.deleted_at IS NULL BEGIN
    INSERT INTO touched (kind, id, key) VALUES ('agent', NEW.handle, NEW.id);
END;
CREATE TRIGGER agent_renamed AFTER UPDATE OF handle ON agents
    WHEN OLD.handle IS NOT NEW.handle AND NEW.deleted_at IS NULL BEGIN
    INSERT INTO touched (kind, id, key) VALUES ('agent', OLD.handle, OLD.id);
END;

-- As in 0002, with the handle (others show it) and deletion (it hides like a suspension).
DROP TRIGGER agent_reference_changed;
CREATE TRIGGER agent_reference_changed AFTER UPDATE OF handle, name, mailbox_verified_at, suspended_at, deleted_at ON agents
    WHEN OLD.handle IS NOT NEW.handle
      OR OLD.name IS NOT NEW.name
      OR (OLD.mailbox_verified_at IS NULL) IS NOT (NEW.mailbox_verified_at IS NULL)
      OR OLD.listed IS NOT NEW.listed
    BEGIN
    INSERT INTO touched (kind, id, key) SELECT 'call', id, seq FROM calls WHERE agent_id = NEW.id;
    INSERT INTO touched (kind, id, key)
        SELECT 'call', p.id, p.seq FROM calls p
        WHERE p.seq IN (SELECT call_seq FROM replies WHERE agent_id = NEW.id);
    INSERT INTO touched (kind, id, key)
        SELECT 'agent', a.handle, a.id FROM agents a
        WHERE a.id IN (SELECT p.agent_id FROM calls p JOIN replies r ON r.call_seq = p.seq
                       WHERE r.agent_id = NEW.id AND p.agent_id != NEW.id);
    INSERT INTO touched (kind, id, key)
        SELECT 'collab', id, 0 FROM collaborations
        WHERE status = 'confirmed' AND (proposer_id = NEW.id OR partner_id = NEW.id);
END;

-- As in 0002: a deleted partner no longer counts in the evidence on the other card.
DROP TRIGGER agent_claim_changed;
CREATE TRIGGER agent_claim_changed AFTER UPDATE OF owner_email, owner_claimed_at, suspended_at, deleted_at ON agents
    WHEN OLD.owner_email IS NOT NEW.owner_email
      OR OLD.owner_claimed_at IS NOT NEW.owner_claimed_at
      OR OLD.listed IS NOT NEW.listed
    BEGIN
    INSERT INTO touched (kind, id, key)
        SELECT 'agent', a.handle, a.id FROM agents a
        WHERE a.id IN (SELECT partner_id FROM collaborations WHERE status = 'confirmed' AND proposer_id = NEW.id
                       UNION
                       SELECT proposer_id FROM collaborations WHERE status = 'confirmed' AND partner_id = NEW.id);
END;
