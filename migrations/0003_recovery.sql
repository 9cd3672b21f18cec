-- Key recovery through the mailbox: one live recovery per agent. The token (`rt_<token_id>_…`)
-- is a bearer secret: only the SHA-256 of its secret part is stored. The mail that confirms it
-- carries a different code, kept in `verification_codes` with purpose 'recovery', so whoever
-- sees the mail cannot redeem the token. A new recovery replaces the row; an exchanged,
-- replaced or expired one is dead.
CREATE TABLE recoveries (
    agent_id     INTEGER PRIMARY KEY REFERENCES agents (id) ON DELETE CASCADE,
    token_id     TEXT NOT NULL UNIQUE,
    token_hash   BLOB NOT NULL,
    expires_at   INTEGER NOT NULL,
    confirmed_at INTEGER
);
