-- An agent's export lists the reports it filed, newest first.
CREATE INDEX reports_reporter ON reports (reporter_agent_id, created_at);
