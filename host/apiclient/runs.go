package apiclient

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// RunRequest is what POST …/runs takes; empty fields are left to the
// host's policy (its default engine, the tenant's default model, a new
// chat).
type RunRequest struct {
	Prompt        string  `json:"prompt"`
	Engine        string  `json:"engine,omitempty"`
	ModelID       *string `json:"model_id,omitempty"`
	ChatSessionID string  `json:"chat_session_id,omitempty"`
	TokenBudget   *int64  `json:"token_budget,omitempty"`
}

// Run statuses: queued → running ⇄ paused → completed | failed | cancelled.
const (
	StatusQueued    = "queued"
	StatusRunning   = "running"
	StatusPaused    = "paused"
	StatusCompleted = "completed"
	StatusFailed    = "failed"
	StatusCancelled = "cancelled"
)

// Run is a run as the API shows it.
type Run struct {
	ID               string          `json:"id"`
	AppID            string          `json:"app_id"`
	Status           string          `json:"status"`
	ExecutionEngine  string          `json:"execution_engine"`
	ChatSessionID    string          `json:"chat_session_id,omitempty"`
	BaseRevisionID   string          `json:"base_revision_id"`
	ResultRevisionID string          `json:"result_revision_id,omitempty"`
	ResolvedModelID  string          `json:"resolved_model_id,omitempty"`
	PauseReason      string          `json:"pause_reason,omitempty"`
	ErrorCode        string          `json:"error_code,omitempty"`
	ErrorMessage     string          `json:"error_message,omitempty"`
	OutputText       string          `json:"output_text,omitempty"`
	InputTokens      int64           `json:"input_tokens"`
	OutputTokens     int64           `json:"output_tokens"`
	CreatedAt        time.Time       `json:"created_at"`
	FinishedAt       *time.Time      `json:"finished_at,omitempty"`
	Raw              json.RawMessage `json:"-"`
}

// CreateRun starts a run on an app's draft.
func (c *Client) CreateRun(ctx context.Context, app string, req RunRequest) (Run, error) {
	var r Run
	raw, err := c.do(ctx, request{method: http.MethodPost, path: agentPath(app, "/runs"), json: req}, &r)
	r.Raw = raw
	return r, err
}

// ListRuns pages an app's runs newest first; status "" is every status.
func (c *Client) ListRuns(ctx context.Context, app, status string, o ListOptions) (Page[Run], error) {
	q := o.query()
	if status != "" {
		q.Set("status", status)
	}
	return getPage[Run](ctx, c, agentPath(app, "/runs"), q)
}

// GetRun reads a run.
func (c *Client) GetRun(ctx context.Context, app, run string) (Run, error) {
	var r Run
	raw, err := c.get(ctx, agentPath(app, "/runs/"+seg(run)), nil, &r)
	r.Raw = raw
	return r, err
}

// CancelRun asks the host to cancel a run; the run ends with
// run.cancelled (or run.failed when its engine cannot confirm).
func (c *Client) CancelRun(ctx context.Context, app, run string) error {
	_, err := c.do(ctx, request{method: http.MethodPost, path: agentPath(app, "/runs/"+seg(run)+"/cancel")}, nil)
	return err
}

// Decisions a paused run's permission question takes.
const (
	DecisionAllow = "allow"
	DecisionDeny  = "deny"
)

// ResumeRun resumes a paused run: decision answers its pending
// permission (DecisionAllow or DecisionDeny); "" resumes a run paused for
// another reason (its token budget, a host restart).
func (c *Client) ResumeRun(ctx context.Context, app, run, decision, reason string) error {
	body := map[string]string{}
	if decision != "" {
		body["decision"] = decision
	}
	if reason != "" {
		body["reason"] = reason
	}
	_, err := c.do(ctx, request{method: http.MethodPost, path: agentPath(app, "/runs/"+seg(run)+"/resume"), json: body}, nil)
	return err
}

// EventPage is a page of a run's events (the polling form of the stream).
type EventPage struct {
	Items        []Event `json:"items"`
	NextAfterSeq int64   `json:"next_after_seq"`
	// Done is true when the page reaches the run's terminal event.
	Done bool `json:"done"`
}

// Events reads up to limit (1–1000) of a run's events after seq after.
func (c *Client) Events(ctx context.Context, app, run string, after int64, limit int) (EventPage, error) {
	q := url.Values{"after_seq": {fmt.Sprint(after)}, "limit": {fmt.Sprint(limit)}}
	var p EventPage
	_, err := c.get(ctx, agentPath(app, "/runs/"+seg(run)+"/events"), q, &p)
	return p, err
}

// LastSeq is the seq of a run's newest event (0 for none yet), read by
// paging the polling endpoint: where a client that has seen everything so
// far would follow from.
func (c *Client) LastSeq(ctx context.Context, app, run string) (int64, error) {
	// The largest page the host serves: a long run's log in a few reads.
	const pageSize = 1000
	var after int64
	for {
		p, err := c.Events(ctx, app, run, after, pageSize)
		if err != nil {
			return 0, err
		}
		if len(p.Items) == 0 {
			return after, nil
		}
		after = p.Items[len(p.Items)-1].Seq
		if len(p.Items) < pageSize {
			return after, nil
		}
	}
}
