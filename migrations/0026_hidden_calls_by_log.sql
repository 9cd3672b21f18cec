-- The ranking counts the calls an operator hid from the moderation log, less those it restored
-- (store::vectors, HIDDEN_CALLS): deleting a hidden call no longer takes the count back.
CREATE INDEX moderation_call ON moderation_log (call_id, action, seq);
