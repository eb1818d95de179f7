package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/agenthost/agenthost/core"
	"github.com/agenthost/agenthost/host/endpoints"
	"github.com/agenthost/agenthost/host/store"
	"github.com/agenthost/agenthost/sdk/engine"
	"github.com/gin-gonic/gin"
)

type modelJSON struct {
	ID            string `json:"id"`
	Name          string `json:"name"`
	Kind          string `json:"kind"`
	Provider      string `json:"provider"`
	ProviderModel string `json:"provider_model"`
	// Scope is "tenant" or "global".
	Scope     string `json:"scope"`
	Active    bool   `json:"active"`
	IsDefault bool   `json:"is_default"`
	// EndpointHost is where the model's requests (and so the tenant's
	// prompts) go: host[:port] of its base URL or its provider's default.
	EndpointHost string `json:"endpoint_host"`
}

func modelOut(m store.Model, defaultID string) modelJSON {
	scope := "global"
	if m.TenantID != "" {
		scope = "tenant"
	}
	return modelJSON{ID: m.ID, Name: m.Name, Kind: m.Kind, Provider: m.Provider, ProviderModel: m.ProviderModel, Scope: scope,
		Active: m.Active, IsDefault: m.ID == defaultID, EndpointHost: endpoints.Host(m.Provider, m.BaseURL)}
}

// CodeModelEndpointNotAllowed refuses a model whose key would be sent, or
// whose requests would go, where the operator did not allow.
const CodeModelEndpointNotAllowed = "MODEL_ENDPOINT_NOT_ALLOWED"

// checkEndpoint applies the operator's key-to-endpoint policy to a model.
func (s *Server) checkEndpoint(provider, baseURL, keyEnv string, platform bool) error {
	err := s.deps.Endpoints.Check(provider, baseURL, keyEnv, platform)
	var r *endpoints.Refusal
	if errors.As(err, &r) {
		return core.Errf(CodeModelEndpointNotAllowed, r.Field, "%s", r.Message)
	}
	return err
}

// listModels answers GET /models: the active chat models the tenant can see.
func (s *Server) listModels(c *gin.Context) {
	ctx := c.Request.Context()
	tenant := principal(c).TenantID
	models, err := s.deps.Store.VisibleModels(ctx, tenant)
	if err != nil {
		_ = c.Error(err)
		return
	}
	def, err := s.resolveDefault(ctx, tenant)
	if err != nil {
		_ = c.Error(err)
		return
	}
	out := make([]modelJSON, len(models))
	for i, m := range models {
		out[i] = modelOut(m, def.ID)
	}
	c.JSON(http.StatusOK, gin.H{"items": out})
}

type createModelRequest struct {
	Name          string `json:"name"`
	Provider      string `json:"provider"`
	ProviderModel string `json:"provider_model"`
	BaseURL       string `json:"base_url"`
	// APIKeyEnv names the environment variable holding the key; keys are
	// never stored.
	APIKeyEnv string `json:"api_key_env"`
	// Scope is "tenant" (default) or "global".
	Scope    string `json:"scope"`
	Inactive bool   `json:"inactive"`
	Bindings []struct {
		Engine        string `json:"engine"`
		EngineModelID string `json:"engine_model_id"`
	} `json:"bindings"`
}

// createModel answers POST /admin/models (admin scope).
func (s *Server) createModel(c *gin.Context) {
	var req createModelRequest
	if err := bindJSON(c, maxJSONBody, &req); err != nil {
		_ = c.Error(err)
		return
	}
	for field, v := range map[string]string{"name": req.Name, "provider": req.Provider, "provider_model": req.ProviderModel} {
		if strings.TrimSpace(v) == "" {
			_ = c.Error(core.Errf(core.CodeInvalidRequest, field, "%s is required", field))
			return
		}
	}
	if req.APIKeyEnv != "" && strings.ContainsAny(req.APIKeyEnv, "= \t") {
		_ = c.Error(core.Errf(core.CodeInvalidRequest, "api_key_env", "api_key_env is the name of an environment variable, not its value"))
		return
	}
	p := principal(c)
	tenant := p.TenantID
	switch req.Scope {
	case "", "tenant":
	case "global":
		if !p.Has(ScopePlatformAdmin) {
			_ = c.Error(core.Errf(CodeForbidden, "scope", "global models are the operator's: this needs the %s scope", ScopePlatformAdmin))
			return
		}
		tenant = ""
	default:
		_ = c.Error(core.Errf(core.CodeInvalidRequest, "scope", `scope must be "tenant" or "global"`))
		return
	}
	if err := s.checkEndpoint(req.Provider, req.BaseURL, req.APIKeyEnv, p.Has(ScopePlatformAdmin)); err != nil {
		_ = c.Error(err)
		return
	}
	m := store.Model{ID: core.NewID("mdl"), TenantID: tenant, Name: req.Name, Kind: "chat", Provider: req.Provider,
		ProviderModel: req.ProviderModel, BaseURL: req.BaseURL, APIKeyEnv: req.APIKeyEnv, Active: !req.Inactive}
	var bindings []store.Binding
	for _, b := range req.Bindings {
		if b.Engine == "" || b.EngineModelID == "" {
			_ = c.Error(core.Errf(core.CodeInvalidRequest, "bindings", "each binding needs engine and engine_model_id"))
			return
		}
		// Without a base_url OpenCode sends the key to the built-in
		// provider its model id names: that must be the model's own
		// provider, whose endpoint the policy checked.
		if b.Engine == "opencode" && req.BaseURL == "" && req.APIKeyEnv != "" &&
			!strings.EqualFold(strings.SplitN(b.EngineModelID, "/", 2)[0], req.Provider) {
			_ = c.Error(core.Errf(CodeModelEndpointNotAllowed, "bindings", "an opencode binding without base_url must name the model's provider (%s/…), or the key in %s would go to another provider", req.Provider, req.APIKeyEnv))
			return
		}
		bindings = append(bindings, store.Binding{TenantID: tenant, Engine: b.Engine, EngineModelID: b.EngineModelID})
	}
	ctx := c.Request.Context()
	if err := s.deps.Store.CreateModel(ctx, m, bindings); err != nil {
		_ = c.Error(err)
		return
	}
	if err := s.defaultIfNone(ctx, m); err != nil {
		_ = c.Error(err)
		return
	}
	// The same is_default a GET right after would show: with no default
	// set, the first model a tenant sees is its default.
	def, err := s.resolveDefault(ctx, p.TenantID)
	if err != nil {
		_ = c.Error(err)
		return
	}
	c.JSON(http.StatusCreated, modelOut(m, def.ID))
}

type setDefaultRequest struct {
	ModelID string `json:"model_id"`
	// Scope is "tenant" (default) or "global".
	Scope string `json:"scope"`
}

// setDefaultModel answers PUT /admin/models/default (admin scope).
func (s *Server) setDefaultModel(c *gin.Context) {
	var req setDefaultRequest
	if err := bindJSON(c, maxJSONBody, &req); err != nil {
		_ = c.Error(err)
		return
	}
	ctx := c.Request.Context()
	tenant := principal(c).TenantID
	m, err := s.deps.Store.VisibleModel(ctx, tenant, req.ModelID)
	if err != nil {
		_ = c.Error(err)
		return
	}
	target := tenant
	switch req.Scope {
	case "", "tenant":
	case "global":
		if !principal(c).Has(ScopePlatformAdmin) {
			_ = c.Error(core.Errf(CodeForbidden, "scope", "the global default is the operator's: this needs the %s scope", ScopePlatformAdmin))
			return
		}
		if m.TenantID != "" {
			_ = c.Error(core.Errf(core.CodeInvalidRequest, "model_id", "a tenant's model cannot be the global default"))
			return
		}
		target = ""
	default:
		_ = c.Error(core.Errf(core.CodeInvalidRequest, "scope", `scope must be "tenant" or "global"`))
		return
	}
	if err := s.deps.Store.SetDefaultModel(ctx, target, m.ID); err != nil {
		_ = c.Error(err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"model_id": m.ID, "scope": map[bool]string{true: "global", false: "tenant"}[target == ""]})
}

// defaultIfNone makes a new active model the default of its scope when
// runs would otherwise fall back to "the first model they can see": a
// global model when there is no global default, a tenant's when neither
// its tenant nor the platform has one. Creation order then decides, not
// which of two models made in the same millisecond has the smaller id.
func (s *Server) defaultIfNone(ctx context.Context, m store.Model) error {
	if !m.Active {
		return nil
	}
	scopes := []string{""}
	if m.TenantID != "" {
		scopes = []string{m.TenantID, ""}
	}
	for _, scope := range scopes {
		id, err := s.deps.Store.DefaultModelID(ctx, scope)
		if err != nil || id != "" {
			return err
		}
	}
	return s.deps.Store.SetDefaultModel(ctx, m.TenantID, m.ID)
}

// resolveDefault picks the model a run gets when it names none: the
// tenant's default, else the global default, else the first active chat
// model the tenant can see. A zero Model means there is none.
func (s *Server) resolveDefault(ctx context.Context, tenant string) (store.Model, error) {
	return s.deps.Store.DefaultModel(ctx, tenant)
}

// pinModel resolves the run's model and the engine's own id for it.
func (s *Server) pinModel(ctx context.Context, tenant, requested, engineName string) (engine.Model, error) {
	var m store.Model
	var err error
	if requested != "" {
		m, err = s.deps.Store.VisibleModel(ctx, tenant, requested)
	} else {
		m, err = s.resolveDefault(ctx, tenant)
	}
	if err != nil || m.ID == "" {
		return engine.Model{}, err
	}
	engineID, err := s.deps.Store.EngineModelID(ctx, m.ID, tenant, engineName)
	if err != nil {
		return engine.Model{}, err
	}
	return s.pinResolved(m, engineID)
}

// pinResolved is pinModel for a model already read with the engine's own id
// for it (store.AppForRun); a zero model is no model.
func (s *Server) pinResolved(m store.Model, engineID string) (engine.Model, error) {
	if m.ID == "" {
		return engine.Model{}, nil
	}
	// Checked again at every run: a binding the operator removed stops
	// working at once, and models stored before this policy existed are
	// held to it too. A global model may be keyless anywhere (the
	// operator made it); a tenant's only where the operator allows.
	if err := s.checkEndpoint(m.Provider, m.BaseURL, m.APIKeyEnv, m.TenantID == ""); err != nil {
		return engine.Model{}, fmt.Errorf("model %s: %w", m.ID, err)
	}
	return engine.Model{ID: m.ID, Provider: m.Provider, ProviderModel: m.ProviderModel, BaseURL: m.BaseURL, APIKeyEnv: m.APIKeyEnv, EngineModelID: engineID}, nil
}
