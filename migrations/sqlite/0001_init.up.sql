-- agenthost schema v1 (sqlite). Times are unix milliseconds; JSON is TEXT.
-- Tenancy and access.
CREATE TABLE tenants (
  id          TEXT PRIMARY KEY,
  name        TEXT NOT NULL,
  created_at  BIGINT NOT NULL
);

CREATE TABLE users (
  id          TEXT PRIMARY KEY,
  tenant_id   TEXT NOT NULL REFERENCES tenants(id),
  email       TEXT NOT NULL,
  name        TEXT NOT NULL DEFAULT '',
  created_at  BIGINT NOT NULL,
  UNIQUE (tenant_id, email)
);

-- Tokens are stored as a sha256 of the secret, never the secret.
CREATE TABLE api_tokens (
  id            TEXT PRIMARY KEY,
  tenant_id     TEXT NOT NULL REFERENCES tenants(id),
  user_id       TEXT NOT NULL REFERENCES users(id),
  token_hash    TEXT NOT NULL UNIQUE,
  scopes        TEXT NOT NULL,
  name          TEXT NOT NULL DEFAULT '',
  created_at    BIGINT NOT NULL,
  expires_at    BIGINT,
  revoked_at    BIGINT,
  last_used_at  BIGINT
);

-- Apps and their content: blobs addressed by sha256, revisions as manifests.
CREATE TABLE apps (
  id                 TEXT PRIMARY KEY,
  tenant_id          TEXT NOT NULL REFERENCES tenants(id),
  name               TEXT NOT NULL,
  draft_revision_id  TEXT,
  selected_agent_id  TEXT,
  created_at         BIGINT NOT NULL,
  updated_at         BIGINT NOT NULL
);
CREATE INDEX apps_by_tenant ON apps (tenant_id, created_at);

CREATE TABLE blobs (
  sha256      TEXT PRIMARY KEY,
  size        BIGINT NOT NULL,
  data        BLOB NOT NULL,
  created_at  BIGINT NOT NULL
);

CREATE TABLE revisions (
  id               TEXT PRIMARY KEY,
  app_id           TEXT NOT NULL REFERENCES apps(id),
  parent_id        TEXT REFERENCES revisions(id),
  merge_parent_id  TEXT REFERENCES revisions(id),
  source           TEXT NOT NULL,
  author_id        TEXT,
  run_id           TEXT,
  message          TEXT NOT NULL DEFAULT '',
  file_count       INTEGER NOT NULL,
  total_size       BIGINT NOT NULL,
  applied          BOOLEAN NOT NULL DEFAULT TRUE,
  created_at       BIGINT NOT NULL
);
CREATE INDEX revisions_by_app ON revisions (app_id, created_at);

CREATE TABLE revision_files (
  revision_id  TEXT NOT NULL REFERENCES revisions(id),
  path         TEXT NOT NULL,
  blob_sha256  TEXT NOT NULL REFERENCES blobs(sha256),
  mode         INTEGER NOT NULL,
  PRIMARY KEY (revision_id, path)
);

-- Chat sessions: the server-side source of truth for a run's history.
CREATE TABLE chat_sessions (
  id                      TEXT PRIMARY KEY,
  tenant_id               TEXT NOT NULL REFERENCES tenants(id),
  app_id                  TEXT NOT NULL REFERENCES apps(id),
  user_id                 TEXT NOT NULL REFERENCES users(id),
  title                   TEXT NOT NULL DEFAULT '',
  restored_checkpoint_id  TEXT,
  created_at              BIGINT NOT NULL,
  updated_at              BIGINT NOT NULL
);
CREATE INDEX chat_sessions_by_app_user ON chat_sessions (app_id, user_id, updated_at);

CREATE TABLE chat_messages (
  id               TEXT PRIMARY KEY,
  chat_session_id  TEXT NOT NULL REFERENCES chat_sessions(id),
  run_id           TEXT,
  role             TEXT NOT NULL,
  content          TEXT NOT NULL,
  created_at       BIGINT NOT NULL
);
CREATE INDEX chat_messages_by_session ON chat_messages (chat_session_id, created_at);

CREATE TABLE checkpoints (
  id               TEXT PRIMARY KEY,
  app_id           TEXT NOT NULL REFERENCES apps(id),
  revision_id      TEXT NOT NULL REFERENCES revisions(id),
  run_id           TEXT,
  chat_session_id  TEXT,
  kind             TEXT NOT NULL,
  label            TEXT NOT NULL DEFAULT '',
  created_at       BIGINT NOT NULL
);
CREATE INDEX checkpoints_by_app ON checkpoints (app_id, created_at);

-- Models. tenant_id NULL means global.
CREATE TABLE models (
  id              TEXT PRIMARY KEY,
  tenant_id       TEXT REFERENCES tenants(id),
  name            TEXT NOT NULL,
  kind            TEXT NOT NULL DEFAULT 'chat',
  provider        TEXT NOT NULL,
  provider_model  TEXT NOT NULL,
  base_url        TEXT NOT NULL DEFAULT '',
  api_key_env     TEXT NOT NULL DEFAULT '',
  active          BOOLEAN NOT NULL DEFAULT TRUE,
  created_at      BIGINT NOT NULL
);

-- Engine-specific model ids; tenant_id '' is the global binding.
CREATE TABLE model_bindings (
  model_id         TEXT NOT NULL REFERENCES models(id),
  tenant_id        TEXT NOT NULL DEFAULT '',
  engine           TEXT NOT NULL,
  engine_model_id  TEXT NOT NULL,
  PRIMARY KEY (model_id, tenant_id, engine)
);

-- Default model per tenant; tenant_id '' holds the global default.
CREATE TABLE model_defaults (
  tenant_id  TEXT PRIMARY KEY,
  model_id   TEXT NOT NULL REFERENCES models(id)
);

-- Runtime agents and their tool contracts.
CREATE TABLE runtime_agents (
  id           TEXT PRIMARY KEY,
  tenant_id    TEXT NOT NULL REFERENCES tenants(id),
  name         TEXT NOT NULL,
  description  TEXT NOT NULL DEFAULT '',
  created_at   BIGINT NOT NULL,
  updated_at   BIGINT NOT NULL
);

CREATE TABLE agent_tools (
  agent_id       TEXT NOT NULL REFERENCES runtime_agents(id),
  name           TEXT NOT NULL,
  description    TEXT NOT NULL DEFAULT '',
  input_schema   TEXT NOT NULL DEFAULT '{}',
  output_schema  TEXT NOT NULL DEFAULT '{}',
  ui_hints       TEXT NOT NULL DEFAULT '{}',
  PRIMARY KEY (agent_id, name)
);

-- Runs. context is JSON (timing_metrics_ms, selected-agent contract, ...).
CREATE TABLE runs (
  id                  TEXT PRIMARY KEY,
  tenant_id           TEXT NOT NULL DEFAULT '',
  app_id              TEXT NOT NULL,
  user_id             TEXT NOT NULL DEFAULT '',
  chat_session_id     TEXT NOT NULL DEFAULT '',
  base_revision_id    TEXT NOT NULL DEFAULT '',
  result_revision_id  TEXT NOT NULL DEFAULT '',
  prompt              TEXT NOT NULL,
  status              TEXT NOT NULL,
  execution_engine    TEXT NOT NULL,
  engine_run_ref      TEXT NOT NULL DEFAULT '',
  requested_model_id  TEXT NOT NULL DEFAULT '',
  resolved_model_id   TEXT NOT NULL DEFAULT '',
  sandbox_backend     TEXT NOT NULL DEFAULT '',
  sandbox_id          TEXT NOT NULL DEFAULT '',
  sandbox_status      TEXT NOT NULL DEFAULT '',
  sandbox_started_at  BIGINT,
  pause_reason        TEXT NOT NULL DEFAULT '',
  error_code          TEXT NOT NULL DEFAULT '',
  error_message       TEXT NOT NULL DEFAULT '',
  output_text         TEXT NOT NULL DEFAULT '',
  input_tokens        BIGINT NOT NULL DEFAULT 0,
  output_tokens       BIGINT NOT NULL DEFAULT 0,
  context             TEXT NOT NULL DEFAULT '{}',
  idempotency_key     TEXT,
  idempotency_hash    TEXT NOT NULL DEFAULT '',
  owner_host          TEXT NOT NULL DEFAULT '',
  lease_expires_at    BIGINT,
  created_at          BIGINT NOT NULL,
  updated_at          BIGINT NOT NULL,
  finished_at         BIGINT
);
CREATE INDEX runs_by_app ON runs (app_id, created_at);
CREATE INDEX runs_by_status ON runs (status);
CREATE UNIQUE INDEX runs_idempotency ON runs (tenant_id, idempotency_key) WHERE idempotency_key IS NOT NULL;

-- The durable per-run event log: gap-free seq per run.
CREATE TABLE run_events (
  run_id       TEXT NOT NULL,
  seq          BIGINT NOT NULL,
  type         TEXT NOT NULL,
  payload      TEXT NOT NULL,
  diagnostics  TEXT,
  ts           BIGINT NOT NULL,
  PRIMARY KEY (run_id, seq)
);

CREATE TABLE engine_states (
  run_id      TEXT PRIMARY KEY,
  state       BLOB NOT NULL,
  updated_at  BIGINT NOT NULL
);

CREATE TABLE sandboxes (
  id           TEXT PRIMARY KEY,
  tenant_id    TEXT NOT NULL DEFAULT '',
  app_id       TEXT NOT NULL DEFAULT '',
  backend      TEXT NOT NULL,
  scope_key    TEXT NOT NULL DEFAULT '',
  status       TEXT NOT NULL,
  run_id       TEXT NOT NULL DEFAULT '',
  revision_id  TEXT NOT NULL DEFAULT '',
  expires_at   BIGINT,
  created_at   BIGINT NOT NULL,
  updated_at   BIGINT NOT NULL
);
CREATE INDEX sandboxes_by_scope ON sandboxes (scope_key, status);
