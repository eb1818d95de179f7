package hostapp_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/agenthost/agenthost/host/endpoints"
	"github.com/agenthost/agenthost/host/hostapp"
	"github.com/agenthost/agenthost/host/internal/testenv"
	"github.com/agenthost/agenthost/host/store"
	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSeedModelsFromEnv: a start with provider variables set makes global
// models for them (the first is the default; keys stay in the environment,
// only their names are stored); a later start adds only what is new.
func TestSeedModelsFromEnv(t *testing.T) {
	for _, dialect := range []string{"sqlite", "postgres"} {
		t.Run(dialect, func(t *testing.T) {
			dataDir := t.TempDir()
			url := filepath.Join(dataDir, "a.db")
			if dialect == "postgres" {
				url = testenv.PostgresURL(t)
			}
			ctx := context.Background()
			st, err := store.Open(ctx, url, dataDir)
			require.NoError(t, err)
			defer st.Close()

			t.Setenv("OPENAI_API_KEY", "")
			t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:11434/v1")
			t.Setenv("OPENAI_MODEL", "Qwen2.5-Coder:7B")
			t.Setenv("ANTHROPIC_API_KEY", "sk-ant-secret")
			t.Setenv("ANTHROPIC_MODEL", "")
			// The operator bound ANTHROPIC_API_KEY to a gateway: the seeded
			// Anthropic model (its default endpoint) would send the key
			// elsewhere, so it is not made.
			strict, err := endpoints.New([]endpoints.Binding{{Name: "anthropic", KeyEnv: "ANTHROPIC_API_KEY", BaseURLs: []string{"https://gateway.example/v1"}}})
			require.NoError(t, err)
			strictDir := t.TempDir()
			strictSt, err := store.Open(ctx, filepath.Join(strictDir, "s.db"), strictDir)
			require.NoError(t, err)
			defer strictSt.Close()
			require.NoError(t, hostapp.SeedModelsFromEnv(ctx, strictSt, strict, hclog.NewNullLogger()))
			models, err := strictSt.VisibleModels(ctx, "any-tenant")
			require.NoError(t, err)
			require.Len(t, models, 1)
			assert.Equal(t, "openai", models[0].Provider)

			policy, err := endpoints.New(nil)
			require.NoError(t, err)
			require.NoError(t, hostapp.SeedModelsFromEnv(ctx, st, policy, hclog.NewNullLogger()))

			models, err = st.VisibleModels(ctx, "any-tenant")
			require.NoError(t, err)
			require.Len(t, models, 2)
			byProvider := map[string]store.Model{}
			for _, m := range models {
				byProvider[m.Provider] = m
			}
			local := byProvider["openai"]
			assert.Equal(t, "openai-qwen2.5-coder-7b", local.ID)
			assert.Equal(t, "Qwen2.5-Coder:7B", local.ProviderModel)
			assert.Equal(t, "http://127.0.0.1:11434/v1", local.BaseURL)
			assert.Empty(t, local.APIKeyEnv, "a local server with no key gets none")
			claude := byProvider["anthropic"]
			assert.Equal(t, hostapp.DefaultAnthropicModel, claude.ProviderModel)
			assert.Equal(t, "ANTHROPIC_API_KEY", claude.APIKeyEnv)
			def, err := st.DefaultModelID(ctx, "")
			require.NoError(t, err)
			assert.Equal(t, local.ID, def)
			oc, err := st.EngineModelID(ctx, claude.ID, "t", "opencode")
			require.NoError(t, err)
			assert.Equal(t, "anthropic/"+hostapp.DefaultAnthropicModel, oc)

			// A later start with the same variables changes nothing: the
			// models are the admin API's now.
			t.Setenv("OPENAI_API_KEY", "sk-other")
			require.NoError(t, hostapp.SeedModelsFromEnv(ctx, st, policy, hclog.NewNullLogger()))
			n, err := st.CountModels(ctx)
			require.NoError(t, err)
			assert.Equal(t, 2, n)

			// A variable set on a later start adds its model (it used to be
			// ignored once any model existed), and the default stays.
			t.Setenv("OPENAI_MODEL", "gpt-later")
			require.NoError(t, hostapp.SeedModelsFromEnv(ctx, st, policy, hclog.NewNullLogger()))
			n, err = st.CountModels(ctx)
			require.NoError(t, err)
			assert.Equal(t, 3, n)
			later, err := st.VisibleModel(ctx, "t", "openai-gpt-later")
			require.NoError(t, err)
			assert.Equal(t, "OPENAI_API_KEY", later.APIKeyEnv)
			def, err = st.DefaultModelID(ctx, "")
			require.NoError(t, err)
			assert.Equal(t, local.ID, def, "the default is not moved")
		})
	}
}
