package hostapp_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/agenthost/agenthost/core"
	"github.com/agenthost/agenthost/host/config"
	"github.com/agenthost/agenthost/host/hostapp"
	"github.com/agenthost/agenthost/host/internal/heapfloor"
	"github.com/agenthost/agenthost/host/internal/testenv"
	"github.com/agenthost/agenthost/host/orchestrator"
	"github.com/agenthost/agenthost/host/store"
	"github.com/agenthost/agenthost/sdk/sandbox"
	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRunPersistsOnEachDialect runs a mock run through the assembled host
// and reads its whole life back from the database.
func TestRunPersistsOnEachDialect(t *testing.T) {
	for _, dialect := range []string{"sqlite", "postgres"} {
		t.Run(dialect, func(t *testing.T) {
			dataDir := t.TempDir()
			cfg := config.Host{DataDir: dataDir, PluginDir: binDir, PluginConfigDir: testenv.PluginConfigDir(t, "mock", "local"), DatabaseURL: filepath.Join(dataDir, "a.db")}
			if dialect == "postgres" {
				cfg.DatabaseURL = testenv.PostgresURL(t)
			}
			ctx := context.Background()
			h, err := hostapp.Start(ctx, cfg, hclog.NewNullLogger())
			require.NoError(t, err)
			defer h.Close(ctx)
			assert.Equal(t, dialect, string(h.Store.Dialect()))

			files := []sandbox.File{{Path: "a.txt", Data: []byte("a")}}
			require.NoError(t, h.Store.EnsureTenant(ctx, hostapp.DefaultTenant, "Default"))
			require.NoError(t, h.Store.CreateApp(ctx, store.App{ID: "app", TenantID: hostapp.DefaultTenant, Name: "demo"}))
			base, _, err := h.Store.CreateRevision(ctx, store.NewRevision{ID: "rev_base", AppID: "app", Source: "upload", Files: files, AdvanceDraft: true})
			require.NoError(t, err)
			run, err := h.Orch.Start(ctx, orchestrator.StartRequest{
				AppID: "app", Prompt: "say hello\ncheckpoint\nsay bye", Engine: "mock", Sandbox: "local",
				BaseRevisionID: base.ID, Files: files,
			})
			require.NoError(t, err)
			wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
			defer cancel()
			final, err := h.Orch.Wait(wctx, run.ID)
			require.NoError(t, err)
			assert.Equal(t, core.RunCompleted, final.Status)
			assert.Equal(t, "hellobye", final.OutputText)
			assert.NotNil(t, final.FinishedAt)
			assert.Equal(t, "sbx_"+run.ID, final.SandboxID)
			assert.Empty(t, final.ResultRevisionID, "the run changed no file")
			assert.Contains(t, string(final.Context), `"result":{"kind":"unchanged"}`)

			evs, err := h.Store.ListEvents(ctx, run.ID, "app", 0, 0)
			require.NoError(t, err)
			require.NotEmpty(t, evs)
			for i, e := range evs {
				assert.Equal(t, int64(i+1), e.Seq)
			}
			assert.Equal(t, core.EventRunAccepted, evs[0].Event)
			assert.Equal(t, core.EventRunCompleted, evs[len(evs)-1].Event)
			state, err := h.Store.LoadEngineState(ctx, run.ID)
			require.NoError(t, err)
			assert.JSONEq(t, `{"next_line":3}`, string(state), "engine state is durable")
		})
	}
}

// TestHostHoldsTheHeapFloor: a started host holds its configured heap
// floor (gc_heap_floor_mb) until it is closed. The floor here is so high
// that the percentage reaches its bound while this host holds it; other
// hosts of this test process hold the default 64 MiB at most, which a live
// heap of more than 640 KB keeps under the bound.
func TestHostHoldsTheHeapFloor(t *testing.T) {
	dataDir := t.TempDir()
	floor := 8 << 10 // MiB
	cfg := config.Host{DataDir: dataDir, PluginDir: binDir, PluginConfigDir: testenv.PluginConfigDir(t, "mock", "local"),
		DatabaseURL: filepath.Join(dataDir, "a.db"), GCHeapFloorMB: &floor}
	ctx := context.Background()
	h, err := hostapp.Start(ctx, cfg, hclog.NewNullLogger())
	require.NoError(t, err)
	assert.Equal(t, 10_000, heapfloor.Percent(), "the host's floor applies")
	h.Close(ctx)
	assert.Less(t, heapfloor.Percent(), 10_000, "and is released with the host")
}
