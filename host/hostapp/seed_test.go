package hostapp_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/agenthost/agenthost/host/hostapp"
	"github.com/agenthost/agenthost/host/internal/testenv"
	"github.com/agenthost/agenthost/host/store"
	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSeedModelsFromEnv: a first start with provider variables set makes
// global models for them (the first is the default; keys stay in the
// environment, only their names are stored); a later start adds nothing.
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
			require.NoError(t, hostapp.SeedModelsFromEnv(ctx, st, hclog.NewNullLogger()))

			models, err := st.VisibleModels(ctx, "any-tenant")
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

			// Once models exist they are the admin API's.
			t.Setenv("OPENAI_API_KEY", "sk-other")
			require.NoError(t, hostapp.SeedModelsFromEnv(ctx, st, hclog.NewNullLogger()))
			n, err := st.CountModels(ctx)
			require.NoError(t, err)
			assert.Equal(t, 2, n)
		})
	}
}
