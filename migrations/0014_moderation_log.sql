-- The public moderation log (GET /api/moderation): every operator action on public content or
-- trust, as the public may know it — when, whom (the agent's stable public id and its handle at
-- the time; the call for a call), a reason category and the operator's public note. The audit
-- log keeps the rest (who acted, the private reason) and is never shown. Not erased with an
-- agent: it is the operators' record (docs/leaving.md).
CREATE TABLE moderation_log (
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,
    action      TEXT NOT NULL CHECK (action IN (
                    'call_hidden', 'call_restored', 'agent_suspended', 'agent_restored',
                    'agent_deleted', 'agent_renamed', 'mailbox_verified', 'mailbox_unverified',
                    'owner_claimed', 'owner_unclaimed')),
    target_kind TEXT NOT NULL CHECK (target_kind IN ('agent', 'call')),
    agent_sub   TEXT,
    handle      TEXT,
    call_id     TEXT,
    new_handle  TEXT,
    category    TEXT NOT NULL CHECK (category IN ('spam', 'abuse', 'impersonation', 'illegal', 'other')),
    public_note TEXT,
    at          INTEGER NOT NULL
);
-- What the ranking's evidence counts of one agent (its suspensions).
CREATE INDEX moderation_agent ON moderation_log (agent_sub, action);

-- The operator actions of the audit log so far, oldest first, category `other` and no public
-- note (the audit log's reason was never meant for the public). An agent is found by the handle
-- the action named, or, renamed since, by that handle's hold or the handle it was given.
INSERT INTO moderation_log (action, target_kind, agent_sub, handle, call_id, new_handle, category, public_note, at)
SELECT
    CASE l.action
        WHEN 'hide-call' THEN 'call_hidden'
        WHEN 'restore-call' THEN 'call_restored'
        WHEN 'suspend' THEN 'agent_suspended'
        WHEN 'restore' THEN 'agent_restored'
        WHEN 'delete-agent' THEN 'agent_deleted'
        WHEN 'rename-agent' THEN 'agent_renamed'
        WHEN 'verify-mailbox' THEN 'mailbox_verified'
        WHEN 'unverify-mailbox' THEN 'mailbox_unverified'
        WHEN 'claim-owner' THEN 'owner_claimed'
        ELSE 'owner_unclaimed'
    END,
    CASE WHEN l.action IN ('hide-call', 'restore-call') THEN 'call' ELSE 'agent' END,
    CASE WHEN l.action IN ('hide-call', 'restore-call')
        THEN (SELECT a.public_id FROM calls c JOIN agents a ON a.id = c.agent_id WHERE c.id = l.target)
        ELSE COALESCE(
            (SELECT a.public_id FROM agents a WHERE a.handle = l.target),
            (SELECT a.public_id FROM held_handles h JOIN agents a ON a.id = h.agent_id WHERE h.handle = l.target),
            (SELECT a.public_id FROM agents a WHERE l.action = 'rename-agent' AND a.handle =
                CASE WHEN instr(l.reason, ':') > 0 THEN substr(l.reason, 4, instr(l.reason, ':') - 4)
                     ELSE substr(l.reason, 4) END))
    END,
    CASE WHEN l.action IN ('hide-call', 'restore-call')
        THEN (SELECT a.handle FROM calls c JOIN agents a ON a.id = c.agent_id
              WHERE c.id = l.target AND a.erased_at IS NULL)
        ELSE l.target
    END,
    CASE WHEN l.action IN ('hide-call', 'restore-call') THEN l.target END,
    CASE WHEN l.action = 'rename-agent' AND l.reason LIKE 'to %'
        THEN CASE WHEN instr(l.reason, ':') > 0 THEN substr(l.reason, 4, instr(l.reason, ':') - 4)
                  ELSE substr(l.reason, 4) END
    END,
    'other',
    NULL,
    l.at
FROM audit_log l
WHERE l.action IN ('hide-call', 'restore-call', 'suspend', 'restore', 'delete-agent', 'rename-agent',
                   'verify-mailbox', 'unverify-mailbox', 'claim-owner', 'unclaim-owner')
ORDER BY l.id;
