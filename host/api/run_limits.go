package api

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"strconv"

	"github.com/agenthost/agenthost/core"
	"github.com/agenthost/agenthost/host/orchestrator"
	"github.com/agenthost/agenthost/sdk/agentcontract"
	"github.com/agenthost/agenthost/sdk/engine"
	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/agenthost/agenthost/sdk/sandbox"
	"github.com/gin-gonic/gin"
)

// Run limits and their environment overrides.
const (
	// defaultMaxToolIterations caps an engine's tool rounds per run
	// (APPS_CODING_AGENT_MAX_TOOL_ITERATIONS).
	defaultMaxToolIterations = 8
	// maxTokenBudget bounds a request's token_budget.
	maxTokenBudget = 100_000_000
)

// runLimits are a run's limits as recorded in its context ("limits"), so a
// run resumed by another host process keeps them.
type runLimits struct {
	MaxToolIterations int   `json:"max_tool_iterations"`
	TokenBudget       int64 `json:"token_budget,omitempty"`
}

// limitsFor resolves a new run's limits: the request's token budget, else
// APPS_CODING_AGENT_TOKEN_BUDGET (0: none); tool rounds from
// APPS_CODING_AGENT_MAX_TOOL_ITERATIONS (default 8).
func limitsFor(requested *int64) (runLimits, error) {
	l := runLimits{MaxToolIterations: defaultMaxToolIterations}
	if v := os.Getenv("APPS_CODING_AGENT_MAX_TOOL_ITERATIONS"); v != "" {
		if n, err := strconv.Atoi(v); err == nil && n > 0 && n <= 1000 {
			l.MaxToolIterations = n
		}
	}
	if v := os.Getenv("APPS_CODING_AGENT_TOKEN_BUDGET"); v != "" {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && n > 0 {
			l.TokenBudget = n
		}
	}
	if requested != nil {
		if *requested <= 0 || *requested > maxTokenBudget {
			return l, core.Errf(core.CodeInvalidRequest, "token_budget", "token_budget must be between 1 and %d", maxTokenBudget)
		}
		l.TokenBudget = *requested
	}
	return l, nil
}

func (l runLimits) engine() engine.Limits {
	return engine.Limits{MaxToolIterations: l.MaxToolIterations, TokenBudget: l.TokenBudget}
}

// withLimits adds the limits to a run context object.
func withLimits(runContext json.RawMessage, l runLimits) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(runContext, &m) != nil || m == nil {
		m = map[string]json.RawMessage{}
	}
	m["limits"], _ = json.Marshal(l)
	out, _ := json.Marshal(m)
	return out
}

// engineNeedsModel reports whether an engine declared it cannot run
// without a pinned model.
func (s *Server) engineNeedsModel(name string) bool {
	if s.deps.Plugins == nil {
		return false
	}
	for _, st := range s.deps.Plugins.Statuses() {
		if st.Name == name && st.Kind == plugin.KindEngine {
			return st.Capabilities[plugin.CapabilityNeedsModel] == "true"
		}
	}
	return false
}

// reattach continues a paused run that no live execution holds (its host
// stopped): the same run, model and limits, in a new sandbox holding the
// files saved with the engine's last state, the engine resuming from that
// state.
func (s *Server) reattach(c *gin.Context, r *core.Run) {
	ctx := c.Request.Context()
	req, err := s.resumeRequest(ctx, r)
	if err != nil {
		_ = c.Error(err)
		return
	}
	run, err := s.deps.Runs.Reattach(ctx, req)
	if err != nil {
		_ = c.Error(err)
		return
	}
	c.JSON(http.StatusAccepted, gin.H{"id": run.ID, "status": "resuming", "from_saved_state": true})
}

// Reattach continues a paused run no live execution holds, from its saved
// engine state, on this host (a run taken over from a lost host).
func (s *Server) Reattach(ctx context.Context, r *core.Run) error {
	req, err := s.resumeRequest(ctx, r)
	if err != nil {
		return err
	}
	_, err = s.deps.Runs.Reattach(ctx, req)
	return err
}

// resumeRequest rebuilds what Start got for a stored run.
func (s *Server) resumeRequest(ctx context.Context, r *core.Run) (orchestrator.StartRequest, error) {
	st := s.deps.Store
	model, err := s.pinModel(ctx, r.TenantID, r.ResolvedModelID, r.Engine)
	if err != nil {
		return orchestrator.StartRequest{}, err
	}
	files, saved, err := st.LoadWorkFiles(ctx, r.ID)
	if err != nil {
		return orchestrator.StartRequest{}, err
	}
	if !saved {
		if files, err = st.RevisionFiles(ctx, r.BaseRevisionID); err != nil {
			return orchestrator.StartRequest{}, err
		}
	}
	var rc struct {
		Contract json.RawMessage `json:"selected_agent_contract"`
		Limits   *runLimits      `json:"limits"`
	}
	_ = json.Unmarshal(r.Context, &rc)
	if len(rc.Contract) > 0 {
		// Generated folders are not saved with the state; the contract
		// document the contract tools read lives in one.
		files = append(files, sandbox.File{Path: agentcontract.Path, Data: rc.Contract, Mode: 0o644})
	}
	limits := runLimits{MaxToolIterations: defaultMaxToolIterations}
	if rc.Limits != nil {
		limits = *rc.Limits
	}
	var hist []engine.Message
	if r.ChatSessionID != "" {
		// The turns before this run's own (later runs of the chat are
		// not its history), read as run creation reads them: only the
		// tail the history budget holds.
		budget := messageBudget()
		turns, older, err := st.ChatTailBefore(ctx, r.ChatSessionID, r.ID, budget, historyMaxMessages())
		if err != nil {
			return orchestrator.StartRequest{}, err
		}
		hist = historyTail(turns, older, budget)
	}
	return orchestrator.StartRequest{
		RunID: r.ID, TenantID: r.TenantID, AppID: r.AppID, UserID: r.UserID, ChatSessionID: r.ChatSessionID,
		BaseRevisionID: r.BaseRevisionID, Prompt: r.Prompt, History: hist, Engine: r.Engine, Sandbox: r.SandboxBackend,
		Files: files, Model: model, Context: r.Context, Limits: limits.engine(), RequestedModelID: r.RequestedModelID,
	}, nil
}
