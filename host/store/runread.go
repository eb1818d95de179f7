package store

import "context"

// ChatTailRead is a chat session read with the tail of its turns, as
// ChatSessionTail returns them; Err is that read's own error (ErrNotFound:
// no such session).
type ChatTailRead struct {
	Session ChatSession
	Turns   []ChatMessage
	Older   int
	Err     error
}

// AppForRunWithChatTail is AppForRun and ChatSessionTail(sessionID, budget,
// maxTurns) together, in one statement: a run started in a chat costs the
// database one read before it is recorded, not two (each a statement the
// database parses, runs and answers, a read transaction, and on PostgreSQL
// a round trip and a connection of the pool; on SQLite the one statement
// took 7-10% less than the two, BenchmarkAppForRunWithChatTail). The error
// returned is the app's; the tail's is in the ChatTailRead, and the caller
// decides whether the session is the caller's.
func (s *Store) AppForRunWithChatTail(ctx context.Context, appID, tenantID, engine, sessionID string, budget, maxTurns int) (App, Model, string, ChatTailRead, error) {
	var t ChatTailRead
	r := s.planTailRead(sessionID, budget, maxTurns)
	tailQuery, tailArgs := s.tailQuery(r)
	appQuery, args := appForRunQuery(appID, tenantID, engine)
	args = append(args, tailArgs...)
	// One row set of two shapes: each part's columns are NULL (or empty,
	// where the Go side is not nullable) in the other's rows.
	var rows []runReadRow
	err := s.r.SelectContext(ctx, &rows, s.rebind(`WITH a AS (`+appQuery+`), t AS (`+tailQuery+`)
 SELECT 'a' AS part, a.id, a.tenant_id, a.name, a.draft_revision_id, a.selected_agent_id, a.created_at, a.updated_at,
  a.m_id, a.m_tenant_id, a.m_name, a.m_kind, a.m_provider, a.m_provider_model, a.m_base_url, a.m_api_key_env, a.m_active,
  a.m_created_at, a.b_tenant_id, a.b_engine_model_id,
  '' AS "t.id", '' AS "t.tenant_id", '' AS "t.app_id", '' AS "t.user_id", '' AS "t.title", NULL AS "t.restored_checkpoint_id",
  0 AS "t.created_at", 0 AS "t.updated_at", NULL AS "t.m_id", NULL AS "t.m_run_id", NULL AS "t.m_role", NULL AS "t.m_content",
  NULL AS "t.m_created_at", 0 AS "t.total"
 FROM a
 UNION ALL
 SELECT 't', '', '', '', NULL, NULL, 0, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
  t.id, t.tenant_id, t.app_id, t.user_id, t.title, t.restored_checkpoint_id, t.created_at, t.updated_at,
  t.m_id, t.m_run_id, t.m_role, t.m_content, t.m_created_at, t.total
 FROM t
 ORDER BY part, "t.m_created_at", "t.m_id"`), args...)
	if err != nil {
		err = translate(err)
		return App{}, Model{}, "", ChatTailRead{Err: err}, err
	}
	var appRows []appForRunRow
	var tailRows []tailRow
	for _, r := range rows {
		if r.Part == "a" {
			appRows = append(appRows, r.appForRunRow)
		} else {
			tailRows = append(tailRows, r.Tail)
		}
	}
	a, m, engineModelID, err := appForRunResult(appID, tenantID, appRows)
	t.Session, t.Turns, t.Older, t.Err = s.tailResult(ctx, r, tailRows)
	return a, m, engineModelID, t, err
}

// runReadRow is a row of AppForRunWithChatTail's statement: part "a" is a
// row of AppForRun's query, part "t" one of the chat tail's.
type runReadRow struct {
	Part string `db:"part"`
	appForRunRow
	Tail tailRow `db:"t"`
}
