-- The same schema as PostgreSQL's 0005 (one schema, two dialects). SQLite
-- serves one host (a second one on the same file refuses to start), so
-- these tables hold that host alone; runs still record their owner.
CREATE TABLE hosts (
  lease_key    TEXT PRIMARY KEY,
  host_id      TEXT NOT NULL,
  started_at   INTEGER NOT NULL,
  heartbeat_at INTEGER NOT NULL,
  lease_until  INTEGER NOT NULL
);
CREATE INDEX hosts_by_host_id ON hosts (host_id);

ALTER TABLE runs ADD COLUMN owner TEXT NOT NULL DEFAULT '';
CREATE INDEX runs_active_by_owner ON runs (owner) WHERE status IN ('queued', 'running', 'paused');

CREATE TABLE run_commands (
  id          INTEGER PRIMARY KEY AUTOINCREMENT,
  run_id      TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  owner       TEXT NOT NULL,
  kind        TEXT NOT NULL,
  body        TEXT NOT NULL,
  created_at  INTEGER NOT NULL,
  claimed_at  INTEGER,
  answered_at INTEGER,
  status_code INTEGER NOT NULL DEFAULT 0,
  answer      TEXT NOT NULL DEFAULT ''
);
CREATE INDEX run_commands_open ON run_commands (owner) WHERE claimed_at IS NULL AND answered_at IS NULL;
