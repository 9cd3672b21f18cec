-- When the agent last renamed itself. The pace of renames (once in 30 days) counts the agent's
-- own renames only: an operator's rename (of a handle that misleads, say) neither spends the
-- agent's next one nor is refused by it. Until now the newest rename hold told both; the holds
-- of agents renamed before this migration tell when they were renamed, by whom is not known,
-- so they are taken as the agent's own (the pace they were under until now).
ALTER TABLE agents ADD COLUMN renamed_at INTEGER;

UPDATE agents
SET renamed_at = (
    SELECT MAX(h.held_at) FROM held_handles h WHERE h.agent_id = agents.id AND h.reason = 'renamed'
)
WHERE id IN (SELECT agent_id FROM held_handles WHERE reason = 'renamed');
