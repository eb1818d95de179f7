package hostapp

import (
	"context"
	"errors"
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

// SeedModelsFromEnv makes the models the environment describes, on every
// start: OPENAI_API_KEY or OPENAI_BASE_URL (a local Ollama, vLLM or
// llama.cpp server needs no key) with OPENAI_MODEL, and ANTHROPIC_API_KEY
// with ANTHROPIC_MODEL, as global chat models. A model whose id (from its
// provider and name) exists already is left as the admin API made it, so
// setting a new variable (or model name) on a later start adds its model
// and changes nothing else. The first seeded model becomes the global
// default when there is none. Only the key's variable name is stored,
// never the key. A model the operator's endpoint policy would refuse (its
// key bound elsewhere) is not seeded, with a warning.
func SeedModelsFromEnv(ctx context.Context, st *store.Store, policy *endpoints.Policy, log hclog.Logger) error {
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
		exists, err := st.ModelExists(ctx, m.ID)
		if err != nil {
			return err
		}
		if exists {
			log.Debug("a model from the environment exists already", "model", m.ID)
			continue
		}
		// OpenCode names models provider/model.
		bindings := []store.Binding{{Engine: "opencode", EngineModelID: m.Provider + "/" + m.ProviderModel}}
		if err := st.CreateModel(ctx, m, bindings); errors.Is(err, store.ErrConflict) {
			continue // another host starting at the same moment seeded it
		} else if err != nil {
			return err
		}
		log.Info("seeded a model from the environment", "model", m.ID, "provider", m.Provider, "base_url", m.BaseURL, "key_env", m.APIKeyEnv)
	}
	if len(seeded) == 0 {
		return nil
	}
	def, err := st.DefaultModelID(ctx, "")
	if err != nil || def != "" {
		return err
	}
	log.Info("the global default model is now one from the environment", "model", seeded[0].ID)
	return st.SetDefaultModel(ctx, "", seeded[0].ID)
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
