-- A deleted call's seq and an erased agent's id are never given to another row. Both key what
-- is derived from the row outside it (the search index, the vectors held in memory, the rate
-- budgets counted as `agent:<id>`), and SQLite gives a new row the largest key plus one: a call
-- posted just after the newest call was deleted took its seq, and was taken for it (never
-- given a vector of its own; or given the deleted call's). The largest key each table ever
-- had is kept here; inserts start past it (`store::calls::insert`, `store::agents::insert`).
CREATE TABLE retired_keys (
    name TEXT PRIMARY KEY,
    high INTEGER NOT NULL
);
-- Keys deleted before this migration are known as far as the change log still holds their
-- deletions (30 days by default): the newest of them is not given again either.
INSERT INTO retired_keys (name, high)
VALUES ('calls', (SELECT coalesce(max(key), 0) FROM changes WHERE kind = 'call')),
       ('agents', (SELECT coalesce(max(key), 0) FROM changes WHERE kind = 'agent'));

CREATE TRIGGER calls_key_retired AFTER DELETE ON calls BEGIN
    UPDATE retired_keys SET high = max(high, old.seq) WHERE name = 'calls';
END;
CREATE TRIGGER agents_key_retired AFTER DELETE ON agents BEGIN
    UPDATE retired_keys SET high = max(high, old.id) WHERE name = 'agents';
END;
