-- An agent's rate limits count its events by its id, written `agent:<id>` (see
-- `service::rate_limit::agent_subject`), no longer by its handle: a handle is a name anyone may
-- type, and a rename must not refill them. The events counted by handle until now (calls and
-- contact requests; the other per-agent limits were kept in memory) move to the agent that
-- holds the handle. Events of a handle no agent holds any more are left to age out.
UPDATE rate_events
SET subject = 'agent:' || (SELECT agents.id FROM agents WHERE agents.handle = rate_events.subject)
WHERE name IN ('calls', 'requests')
  AND subject IN (SELECT handle FROM agents);
