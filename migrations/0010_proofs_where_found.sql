-- A link proof is recorded under the URL where its text was found (after redirects), which is
-- the origin it proves; the URL the agent submitted is kept beside it, so that either removes
-- it. NULL in proofs recorded before: their `url` is the one submitted.
ALTER TABLE link_proofs ADD COLUMN submitted_url TEXT;
CREATE INDEX link_proofs_submitted ON link_proofs (agent_id, submitted_url);
