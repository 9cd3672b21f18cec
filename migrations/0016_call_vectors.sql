-- The meaning of each call: its vector from the embedding model (docs/search.md "Calls"),
-- computed off the request path by the call worker (service::call_vectors) and kept in SQLite
-- for the same reasons as agent_vectors (0008): computed once, kept over restarts, and shipped to
-- read replicas inside the replicated file.
--
-- A call's text never changes after it is posted, so a call has one vector per model; `stamp`
-- grows with every write (AUTOINCREMENT) and followers apply `WHERE stamp > ?`.
CREATE TABLE call_vectors (
    stamp    INTEGER PRIMARY KEY AUTOINCREMENT,
    call_seq INTEGER NOT NULL UNIQUE REFERENCES calls (seq) ON DELETE CASCADE,
    model    TEXT NOT NULL,
    vector   BLOB NOT NULL
);
