CREATE INDEX runs_by_status ON runs (status);
CREATE INDEX runs_active_by_owner ON runs (owner) WHERE status IN ('queued', 'running', 'paused');
DROP INDEX runs_active;
