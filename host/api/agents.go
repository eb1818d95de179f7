package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/agenthost/agenthost/core"
	"github.com/agenthost/agenthost/host/store"
	"github.com/agenthost/agenthost/sdk/agentcontract"
	"github.com/agenthost/agenthost/sdk/engine"
	"github.com/gin-gonic/gin"
)

// Bounds of a runtime agent definition.
const (
	maxAgentTools  = 100
	maxSchemaBytes = 256 << 10
	// maxContractNote bounds the contract summary put in a run's history.
	maxContractNote = 8 << 10
)

type agentToolRequest struct {
	Name         string          `json:"name"`
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"input_schema"`
	OutputSchema json.RawMessage `json:"output_schema"`
}

type createAgentRequest struct {
	Name        string             `json:"name"`
	Description string             `json:"description"`
	Tools       []agentToolRequest `json:"tools"`
}

// createAgent defines a runtime agent of the caller's tenant.
func (s *Server) createAgent(c *gin.Context) {
	var req createAgentRequest
	if err := bindJSON(c, 8<<20, &req); err != nil {
		_ = c.Error(err)
		return
	}
	if err := validName(req.Name); err != nil {
		_ = c.Error(err)
		return
	}
	if len(req.Tools) > maxAgentTools {
		_ = c.Error(core.Errf(core.CodeInvalidRequest, "tools", "an agent may have at most %d tools", maxAgentTools))
		return
	}
	seen := map[string]bool{}
	tools := make([]store.AgentTool, 0, len(req.Tools))
	for i, t := range req.Tools {
		field := fmt.Sprintf("tools[%d]", i)
		if t.Name == "" || len(t.Name) > 100 || strings.ContainsAny(t.Name, " /\\\x00") {
			_ = c.Error(core.Errf(core.CodeInvalidRequest, field+".name", "a tool needs a name of at most 100 characters without spaces or slashes"))
			return
		}
		if seen[t.Name] {
			_ = c.Error(core.Errf(core.CodeInvalidRequest, field+".name", "tool %s is listed twice", t.Name))
			return
		}
		seen[t.Name] = true
		for name, schema := range map[string]json.RawMessage{"input_schema": t.InputSchema, "output_schema": t.OutputSchema} {
			if len(schema) > maxSchemaBytes {
				_ = c.Error(core.Errf(core.CodeInvalidRequest, field+"."+name, "the schema is over %d bytes", maxSchemaBytes))
				return
			}
			if len(schema) > 0 && !isSchemaValue(schema) {
				_ = c.Error(core.Errf(core.CodeInvalidRequest, field+"."+name, "a JSON Schema is an object or a boolean"))
				return
			}
		}
		hints, err := agentcontract.NormaliseUIHints(t.OutputSchema)
		if err != nil {
			_ = c.Error(core.Errf(core.CodeInvalidRequest, field+".output_schema", "%v", err))
			return
		}
		var hintsJSON json.RawMessage
		if hints != nil {
			hintsJSON, _ = json.Marshal(hints)
		}
		tools = append(tools, store.AgentTool{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema, OutputSchema: t.OutputSchema, UIHints: hintsJSON})
	}
	a := store.Agent{ID: core.NewID("agent"), TenantID: principal(c).TenantID, Name: req.Name, Description: req.Description}
	if err := s.deps.Store.CreateAgent(c.Request.Context(), &a, tools); err != nil {
		_ = c.Error(err)
		return
	}
	c.JSON(http.StatusCreated, gin.H{"agent": a, "tools": tools})
}

func isSchemaValue(raw json.RawMessage) bool {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return false
	}
	switch v.(type) {
	case map[string]any, bool:
		return true
	}
	return false
}

// agent loads the path's agent when it belongs to the caller's tenant.
func (s *Server) agent(c *gin.Context, id string) (store.Agent, []store.AgentTool, bool) {
	if !validID(id) {
		_ = c.Error(core.Errf(core.CodeInvalidRequest, "agent_id", "malformed agent id"))
		return store.Agent{}, nil, false
	}
	a, tools, err := s.deps.Store.GetAgent(c.Request.Context(), id)
	if err == nil && a.TenantID != principal(c).TenantID {
		err = core.Errf(core.CodeNotFound, "", "agent %s not found", id)
	}
	if err != nil {
		_ = c.Error(err)
		return store.Agent{}, nil, false
	}
	return a, tools, true
}

func (s *Server) getAgent(c *gin.Context) {
	a, tools, ok := s.agent(c, c.Param("agent_id"))
	if !ok {
		return
	}
	c.JSON(http.StatusOK, gin.H{"agent": a, "tools": tools})
}

func (s *Server) listAgents(c *gin.Context) {
	pg, ok := pageOf(c)
	if !ok {
		return
	}
	agents, err := s.deps.Store.ListAgents(c.Request.Context(), principal(c).TenantID, pg.cursor, pg.limit+1)
	if err != nil {
		_ = c.Error(err)
		return
	}
	agents, next := trimPage(pg, agents, func(a store.Agent) string { return a.ID })
	c.JSON(http.StatusOK, gin.H{"items": agents, "next_cursor": next})
}

type selectAgentRequest struct {
	// AgentID is the agent to use; null clears the selection.
	AgentID *string `json:"agent_id"`
}

// selectAgent sets the runtime agent an app uses.
func (s *Server) selectAgent(c *gin.Context) {
	app, ok := s.app(c)
	if !ok {
		return
	}
	var req selectAgentRequest
	if err := bindJSON(c, 1<<10, &req); err != nil {
		_ = c.Error(err)
		return
	}
	id := ""
	if req.AgentID != nil {
		if _, _, ok := s.agent(c, *req.AgentID); !ok {
			return
		}
		id = *req.AgentID
	}
	if err := s.deps.Store.SelectAgent(c.Request.Context(), app.ID, id); err != nil {
		_ = c.Error(err)
		return
	}
	app.SelectedAgentID = id
	contract := s.agentContract(c.Request.Context(), app)
	c.JSON(http.StatusOK, contract)
}

// getAgentContract answers the app's selected-agent integration contract.
func (s *Server) getAgentContract(c *gin.Context) {
	app, ok := s.app(c)
	if !ok {
		return
	}
	c.PureJSON(http.StatusOK, s.agentContract(c.Request.Context(), app))
}

// agentContract builds the contract of the app's selected agent. It never
// fails: an agent that cannot be read is an agent-less contract with the
// reason, so a run can still start and be told why.
func (s *Server) agentContract(ctx context.Context, app store.App) agentcontract.Contract {
	c := agentcontract.Contract{SchemaVersion: agentcontract.SchemaVersion, AppID: app.ID,
		Tools: []agentcontract.Tool{}, Unresolved: []agentcontract.Unresolved{}, GeneratedAt: time.Now().UTC().Truncate(time.Millisecond)}
	// The selection comes with the app (store.GetApp): no read of its own.
	id := app.SelectedAgentID
	if id == "" {
		c.Reason = "the app has no selected runtime agent"
		return c
	}
	a, tools, err := s.deps.Store.GetAgent(ctx, id)
	if err != nil || a.TenantID != app.TenantID {
		c.Reason = "the app's selected runtime agent no longer exists"
		return c
	}
	c.Agent = &agentcontract.Agent{ID: a.ID, Name: a.Name, Description: a.Description}
	for _, t := range tools {
		tool := agentcontract.Tool{Name: t.Name, Description: t.Description, InputSchema: nilIfEmpty(t.InputSchema),
			OutputSchema: nilIfEmpty(t.OutputSchema), Status: agentcontract.StatusResolved}
		if len(t.UIHints) > 2 {
			var h agentcontract.UIHints
			if json.Unmarshal(t.UIHints, &h) == nil && h.Kind != "" {
				tool.UIHints = &h
			}
		}
		if !isSchemaValue(orObject(t.InputSchema)) || !isSchemaValue(orObject(t.OutputSchema)) {
			c.Unresolved = append(c.Unresolved, agentcontract.Unresolved{Reference: t.Name, Reason: "its stored schema does not parse"})
			continue
		}
		c.Tools = append(c.Tools, tool)
	}
	return c
}

func nilIfEmpty(raw json.RawMessage) json.RawMessage {
	if s := strings.TrimSpace(string(raw)); s == "" || s == "{}" {
		return nil
	}
	return raw
}

func orObject(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return json.RawMessage("{}")
	}
	return raw
}

// contractNote is the system message that gives a run the selected agent's
// contract up front; the contract tools give the rest on demand.
func contractNote(c agentcontract.Contract) (engine.Message, bool) {
	if c.Agent == nil {
		return engine.Message{}, false
	}
	var b strings.Builder
	fmt.Fprintf(&b, "This app uses the runtime agent %q (%s).", c.Agent.Name, c.Agent.ID)
	if c.Agent.Description != "" {
		fmt.Fprintf(&b, " %s", c.Agent.Description)
	}
	b.WriteString(" Its tools, which the app's code can call:")
	for _, t := range c.Tools {
		line := fmt.Sprintf("\n- %s", t.Name)
		if t.Description != "" {
			line += ": " + t.Description
		}
		if t.UIHints != nil {
			line += fmt.Sprintf(" (show as %s)", t.UIHints.Kind)
		}
		if b.Len()+len(line) > maxContractNote {
			b.WriteString("\n- …")
			break
		}
		b.WriteString(line)
	}
	fmt.Fprintf(&b, "\nThe full contract, with every schema, is in %s and from the tool coding_agent_get_agent_integration_contract.", agentcontract.Path)
	return engine.Message{Role: "system", Content: b.String()}, true
}
