-- Applied after the change log: renaming a table or column rewrites the triggers that name it.
-- One word per concept: the directory calls them calls (the wire keeps the spec's `/api/posts`,
-- `post_id` and the `post_` id prefix).
ALTER TABLE posts RENAME TO calls;
DROP INDEX posts_agent;
CREATE INDEX calls_agent ON calls (agent_id, created_at);
ALTER TABLE replies RENAME COLUMN post_seq TO call_seq;
DROP INDEX replies_post;
CREATE INDEX replies_call ON replies (call_seq, created_at);
ALTER TABLE collaborations RENAME COLUMN post_id TO call_id;
