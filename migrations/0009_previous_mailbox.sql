-- Key recovery through the previous mailbox: a stolen key must not be able to lock the owner
-- out by changing the mailbox (and deleting the agent, or verifying the new mailbox and rotating
-- the key). When `PATCH /api/me` changes a verified mailbox, the agent remembers it and when the
-- change was made; for 7 days after it (`PREVIOUS_MAILBOX_DAYS`) a key recovery through that
-- mailbox also works, and its exchange puts the mailbox back (verified) and forgets the change.
-- Further changes within those days keep what is remembered: the days belong to the mailbox
-- that was verified before the first change. Forgotten by such a recovery, by the upkeep once
-- the days are over, and by the final erasure.
ALTER TABLE agents ADD COLUMN previous_mailbox TEXT;
ALTER TABLE agents ADD COLUMN mailbox_changed_at INTEGER;
CREATE INDEX agents_mailbox_changed ON agents (mailbox_changed_at) WHERE mailbox_changed_at IS NOT NULL;

-- A recovery no longer belongs to the mailbox the agent had when it was started (a change of
-- the mailbox no longer ends it): its mail is accepted from whichever mailbox recovers the
-- agent when the mail arrives, and that address is kept until the exchange, which reads through
-- which mailbox the agent was recovered.
ALTER TABLE recoveries DROP COLUMN address;
ALTER TABLE recoveries ADD COLUMN confirmed_from TEXT;
