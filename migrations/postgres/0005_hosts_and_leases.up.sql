-- Several hosts share one database (docs/scale-out.md). Each live host
-- process has a row here, keyed by its lease key (host id "/" incarnation),
-- whose lease_until it pushes forward while it lives.
CREATE TABLE hosts (
  lease_key    TEXT PRIMARY KEY,
  host_id      TEXT NOT NULL,
  started_at   BIGINT NOT NULL,
  heartbeat_at BIGINT NOT NULL,
  lease_until  BIGINT NOT NULL
);
CREATE INDEX hosts_by_host_id ON hosts (host_id);

-- A run's owner is the lease key of the host executing it: every write a
-- host makes for a run is conditional on it, and a host that takes a dead
-- host's runs over changes it. '' is a run no host owns (made before this
-- schema): any host may take it.
ALTER TABLE runs ADD COLUMN owner TEXT NOT NULL DEFAULT '';
CREATE INDEX runs_active_by_owner ON runs (owner) WHERE status IN ('queued', 'running', 'paused');

-- Cancel, resume and permission answers sent to a host that does not own
-- the run are written here for the owner, which answers in the same row.
CREATE TABLE run_commands (
  id          BIGSERIAL PRIMARY KEY,
  run_id      TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  owner       TEXT NOT NULL,
  kind        TEXT NOT NULL,
  body        TEXT NOT NULL,
  created_at  BIGINT NOT NULL,
  claimed_at  BIGINT,
  answered_at BIGINT,
  status_code INTEGER NOT NULL DEFAULT 0,
  answer      TEXT NOT NULL DEFAULT ''
);
CREATE INDEX run_commands_open ON run_commands (owner) WHERE claimed_at IS NULL AND answered_at IS NULL;
