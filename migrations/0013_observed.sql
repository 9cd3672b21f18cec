-- What an endpoint exposes (an A2A card's skills, an MCP server's tools), kept for an endpoint
-- that proves it is the agent's own: `proof` says how (`answer`: its own answer holds the
-- agent's proof text; `well_known`: its origin's /.well-known/agentdir-proof does), `observed`
-- holds the entries as JSON (bounded by `domain::endpoint`). One endpoint URL counts for one
-- agent, the first that proved it: the partial unique index refuses a second.
ALTER TABLE endpoints ADD COLUMN proof TEXT CHECK (proof IN ('answer', 'well_known'));
ALTER TABLE endpoints ADD COLUMN observed TEXT NOT NULL DEFAULT '[]';
CREATE UNIQUE INDEX endpoints_proven ON endpoints (kind, url) WHERE proof IS NOT NULL;
