-- Stream tickets: short-lived credentials for one run's event stream, so a
-- browser's EventSource (which cannot send an Authorization header) can
-- follow a run without a long-lived token in its URL. Only the ticket's
-- hash is stored, as for API tokens.
CREATE TABLE stream_tickets (
  ticket_hash TEXT PRIMARY KEY,
  token_id    TEXT NOT NULL REFERENCES api_tokens(id) ON DELETE CASCADE,
  tenant_id   TEXT NOT NULL,
  app_id      TEXT NOT NULL,
  run_id      TEXT NOT NULL,
  created_at  BIGINT NOT NULL,
  expires_at  BIGINT NOT NULL
);
CREATE INDEX stream_tickets_by_expiry ON stream_tickets (expires_at);
