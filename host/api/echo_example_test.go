package api_test

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/agenthost/agenthost/host/internal/testenv"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEchoExampleFromItsHCL: the echo example engine, built as its README
// says and configured with its own HCL file unchanged, is launched by the
// real plugin manager and runs a script through the real host.
func TestEchoExampleFromItsHCL(t *testing.T) {
	built, err := testenv.BuildBinaries("examples/engine-echo/cmd/agenthost-engine-echo")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(built) })
	bin, err := os.ReadFile(filepath.Join(built, "agenthost-engine-echo"))
	require.NoError(t, err)
	// The plugin dir is the package's; the HCL names the bare binary.
	require.NoError(t, os.WriteFile(filepath.Join(binDir, "agenthost-engine-echo"), bin, 0o755))
	hcl, err := os.ReadFile("../../examples/engine-echo/echo.hcl")
	require.NoError(t, err)
	dir := testenv.PluginConfigDir(t, "local", "patch")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "echo.hcl"), hcl, 0o644))
	e := startEnvIn(t, "sqlite", dir)

	app := e.createApp(e.tokenA)
	var run struct{ ID string }
	require.Equal(t, http.StatusCreated, e.do(e.tokenA, "POST", "/admin/apps/"+app+"/coding-agent/runs",
		map[string]any{"engine": "echo", "prompt": "say hello from echo"}, &run))
	done := e.waitRun(app, run.ID)
	require.Equal(t, "completed", done.Status, "%+v", done)
	assert.Contains(t, e.payloads(app, run.ID, "assistant.delta")[0], "hello from echo")
}
