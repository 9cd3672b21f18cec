-- What a sitemap reads: the public cards in the order they joined, each with its handle and
-- when it last changed. Held in one partial index, so counting the public cards and reading a
-- stretch of them (from a given id) never reads the agents' rows: at a million agents a count
-- took ~0.3 s through the table, ~35 ms through this index.
CREATE INDEX agents_sitemap ON agents(id, handle, updated_at) WHERE listed;
