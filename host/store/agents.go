package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"time"

	"github.com/agenthost/agenthost/core"
	"github.com/jmoiron/sqlx"
)

// Agent is a tenant's runtime agent: what an app built here can call.
type Agent struct {
	ID          string    `json:"id" db:"id"`
	TenantID    string    `json:"-" db:"tenant_id"`
	Name        string    `json:"name" db:"name"`
	Description string    `json:"description" db:"description"`
	CreatedAt   time.Time `json:"created_at" db:"-"`
}

// AgentTool is one tool of an agent, its schemas and UI hints as JSON.
type AgentTool struct {
	Name         string          `json:"name" db:"name"`
	Description  string          `json:"description" db:"description"`
	InputSchema  json.RawMessage `json:"input_schema" db:"input_schema"`
	OutputSchema json.RawMessage `json:"output_schema" db:"output_schema"`
	// UIHints is the normalised x-ui of the output schema ({} when none).
	UIHints json.RawMessage `json:"ui_hints" db:"ui_hints"`
}

// CreateAgent stores an agent and its tools in one transaction.
func (s *Store) CreateAgent(ctx context.Context, a *Agent, tools []AgentTool) error {
	if a.ID == "" || a.TenantID == "" || a.Name == "" {
		return core.Errf(core.CodeInvalidRequest, "", "agent id, tenant and name are required")
	}
	if a.CreatedAt.IsZero() {
		a.CreatedAt = time.Now().UTC().Truncate(time.Millisecond)
	}
	return s.tx(ctx, func(tx *sqlx.Tx) error {
		now := a.CreatedAt.UnixMilli()
		if _, err := tx.ExecContext(ctx, tx.Rebind(`INSERT INTO runtime_agents (id, tenant_id, name, description, created_at, updated_at)
 VALUES (?, ?, ?, ?, ?, ?)`), a.ID, a.TenantID, a.Name, a.Description, now, now); err != nil {
			return translate(err)
		}
		for _, t := range tools {
			if _, err := tx.ExecContext(ctx, tx.Rebind(`INSERT INTO agent_tools (agent_id, name, description, input_schema, output_schema, ui_hints)
 VALUES (?, ?, ?, ?, ?, ?)`), a.ID, t.Name, t.Description, orEmpty(t.InputSchema), orEmpty(t.OutputSchema), orEmpty(t.UIHints)); err != nil {
				return translate(err)
			}
		}
		return nil
	})
}

func orEmpty(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "{}"
	}
	return string(raw)
}

type agentRow struct {
	ID          string `db:"id"`
	TenantID    string `db:"tenant_id"`
	Name        string `db:"name"`
	Description string `db:"description"`
	CreatedAt   int64  `db:"created_at"`
}

func (r agentRow) agent() Agent {
	return Agent{ID: r.ID, TenantID: r.TenantID, Name: r.Name, Description: r.Description, CreatedAt: fromMS(r.CreatedAt)}
}

// GetAgent reads an agent and its tools (in name order).
func (s *Store) GetAgent(ctx context.Context, id string) (Agent, []AgentTool, error) {
	var row agentRow
	err := s.r.GetContext(ctx, &row, s.rebind(`SELECT id, tenant_id, name, description, created_at FROM runtime_agents WHERE id = ?`), id)
	if errors.Is(err, sql.ErrNoRows) {
		return Agent{}, nil, notFound("agent", id)
	}
	if err != nil {
		return Agent{}, nil, translate(err)
	}
	var rows []struct {
		Name         string `db:"name"`
		Description  string `db:"description"`
		InputSchema  string `db:"input_schema"`
		OutputSchema string `db:"output_schema"`
		UIHints      string `db:"ui_hints"`
	}
	if err := s.r.SelectContext(ctx, &rows, s.rebind(`SELECT name, description, input_schema, output_schema, ui_hints FROM agent_tools
 WHERE agent_id = ? ORDER BY name`), id); err != nil {
		return Agent{}, nil, translate(err)
	}
	tools := make([]AgentTool, len(rows))
	for i, r := range rows {
		tools[i] = AgentTool{Name: r.Name, Description: r.Description, InputSchema: json.RawMessage(r.InputSchema),
			OutputSchema: json.RawMessage(r.OutputSchema), UIHints: json.RawMessage(r.UIHints)}
	}
	return row.agent(), tools, nil
}

// ListAgents returns a tenant's agents newest first, older than the cursor
// agent (empty: from the newest).
func (s *Store) ListAgents(ctx context.Context, tenantID, before string, limit int) ([]Agent, error) {
	var rows []agentRow
	q := `SELECT id, tenant_id, name, description, created_at FROM runtime_agents WHERE tenant_id = ?`
	args := []any{tenantID}
	if before != "" {
		q += ` AND (created_at, id) < (SELECT created_at, id FROM runtime_agents WHERE id = ?)`
		args = append(args, before)
	}
	q += ` ORDER BY created_at DESC, id DESC LIMIT ?`
	args = append(args, limit)
	if err := s.r.SelectContext(ctx, &rows, s.rebind(q), args...); err != nil {
		return nil, translate(err)
	}
	out := make([]Agent, len(rows))
	for i, r := range rows {
		out[i] = r.agent()
	}
	return out, nil
}

// SelectAgent sets (or, with "", clears) the runtime agent an app uses.
func (s *Store) SelectAgent(ctx context.Context, appID, agentID string) error {
	res, err := s.w.ExecContext(ctx, s.rebind(`UPDATE apps SET selected_agent_id = ?, updated_at = ? WHERE id = ?`),
		nullStr(agentID), time.Now().UnixMilli(), appID)
	if err != nil {
		return translate(err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return notFound("app", appID)
	}
	return nil
}
