-- What a stolen key did must not outlast the owner's recovery (CONTRACT.md, "Leaving and
-- renaming": a stolen key cannot erase an agent for good, nor lock its owner out).

-- When a key recovery through the mailbox last gave the agent a new key. A rename before it
-- (a thief's, as far as anyone can tell) does not count against the pace of renames, so the
-- owner may take the agent's handle back at once.
ALTER TABLE agents ADD COLUMN recovered_at INTEGER;

-- A request declined because its recipient was deleted, not by the recipient: it holds its
-- sender off nothing (the cooldown after a decline counts only the recipient's own), so the
-- senders of an agent whose deletion a recovery undid may ask again.
ALTER TABLE contact_requests ADD COLUMN declined_by_deletion INTEGER NOT NULL DEFAULT 0
    CHECK (declined_by_deletion IN (0, 1));
