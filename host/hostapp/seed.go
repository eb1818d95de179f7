package hostapp

import (
	"context"
	"os"
	"strings"

	"github.com/agenthost/agenthost/host/endpoints"
	"github.com/agenthost/agenthost/host/store"
	"github.com/hashicorp/go-hclog"
)

// Model defaults when the environment names a provider but no model.
const (
	DefaultOpenAIModel    = "gpt-4o-mini"
	DefaultAnthropicModel = "claude-sonnet-4-5"
)

// SeedModelsFromEnv gives a first start something to run with: when the
// database holds no model at all, it adds global chat models for the
// providers the environment names — OPENAI_API_KEY or OPENAI_BASE_URL (a
// local Ollama, vLLM or llama.cpp server needs no key) with OPENAI_MODEL,
// and ANTHROPIC_API_KEY with ANTHROPIC_MODEL — and makes the first the
// global default. Only the key's variable name is stored, never the key.
// Later starts leave models alone: they are the admin API's.
// A model the operator's endpoint policy would refuse (its key bound
// elsewhere) is not seeded, with a warning.
func SeedModelsFromEnv(ctx context.Context, st *store.Store, policy *endpoints.Policy, log hclog.Logger) error {
	n, err := st.CountModels(ctx)
	if err != nil || n > 0 {
		return err
	}
	var seeded []store.Model
	if os.Getenv("OPENAI_API_KEY") != "" || os.Getenv("OPENAI_BASE_URL") != "" {
		name := envOr("OPENAI_MODEL", DefaultOpenAIModel)
		m := store.Model{ID: "openai-" + slug(name), Name: name, Kind: "chat", Provider: "openai", ProviderModel: name,
			BaseURL: os.Getenv("OPENAI_BASE_URL"), Active: true}
		if os.Getenv("OPENAI_API_KEY") != "" {
			m.APIKeyEnv = "OPENAI_API_KEY"
		}
		seeded = append(seeded, m)
	}
	if os.Getenv("ANTHROPIC_API_KEY") != "" {
		name := envOr("ANTHROPIC_MODEL", DefaultAnthropicModel)
		seeded = append(seeded, store.Model{ID: "anthropic-" + slug(name), Name: name, Kind: "chat", Provider: "anthropic",
			ProviderModel: name, APIKeyEnv: "ANTHROPIC_API_KEY", Active: true})
	}
	allowed := seeded[:0]
	for _, m := range seeded {
		if err := policy.Check(m.Provider, m.BaseURL, m.APIKeyEnv, true); err != nil {
			log.Warn("not seeding a model from the environment: the host config's provider bindings refuse it", "model", m.ID, "error", err)
			continue
		}
		allowed = append(allowed, m)
	}
	seeded = allowed
	for _, m := range seeded {
		// OpenCode names models provider/model.
		bindings := []store.Binding{{Engine: "opencode", EngineModelID: m.Provider + "/" + m.ProviderModel}}
		if err := st.CreateModel(ctx, m, bindings); err != nil {
			return err
		}
		log.Info("seeded a model from the environment", "model", m.ID, "provider", m.Provider, "base_url", m.BaseURL, "key_env", m.APIKeyEnv)
	}
	if len(seeded) > 0 {
		return st.SetDefaultModel(ctx, "", seeded[0].ID)
	}
	return nil
}

// slug makes a model name usable in an id.
func slug(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '.', r == '-', r == '_':
			return r
		case r >= 'A' && r <= 'Z':
			return r + ('a' - 'A')
		}
		return '-'
	}, s)
}
