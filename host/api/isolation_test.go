package api_test

import (
	"net/http"
	"os"
	"testing"

	"github.com/agenthost/agenthost/host/internal/testenv"
	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSandboxIsolationShown: /readyz and an app's capabilities say how far
// each real sandbox backend keeps commands from the host: the local one
// "uid" when it runs as root (it drops to sandbox uids) and "none"
// otherwise, bwrap "namespaces"; the fields that were there stay.
func TestSandboxIsolationShown(t *testing.T) {
	dir := testenv.PluginConfigDir(t, "mock", "local", "patch")
	testenv.BwrapSandboxConfig(t, dir, "bwrap", "none")
	e := startEnvIn(t, "sqlite", dir)
	wantLocal := plugin.IsolationNone
	switch {
	case os.Getenv(testenv.SandboxEnv) == "bwrap":
		// The suite's bwrap pass swaps the bwrap binary in as "local".
		wantLocal = plugin.IsolationNamespaces
	case os.Geteuid() == 0:
		wantLocal = plugin.IsolationUID
	}
	want := map[string]string{"local": wantLocal, "bwrap": plugin.IsolationNamespaces}

	var ready struct {
		Plugins []map[string]any `json:"plugins"`
	}
	require.Equal(t, http.StatusOK, e.do("", "GET", "/readyz", nil, &ready), "%v", ready)
	got := map[string]any{}
	for _, p := range ready.Plugins {
		for _, field := range []string{"name", "kind", "version", "state", "reason", "restarts"} {
			assert.Contains(t, p, field, "readyz keeps its fields")
		}
		if p["kind"] == "sandbox" {
			got[p["name"].(string)] = p["isolation"]
		} else {
			assert.NotContains(t, p, "isolation", "%v: only sandboxes isolate", p["name"])
		}
	}
	assert.Equal(t, map[string]any{"local": want["local"], "bwrap": want["bwrap"]}, got, "readyz")

	app := e.createApp(e.tokenA)
	var caps struct {
		Sandboxes []struct {
			Name      string `json:"name"`
			Available bool   `json:"available"`
			State     string `json:"state"`
			Isolation string `json:"isolation"`
		} `json:"sandbox_backends"`
	}
	require.Equal(t, http.StatusOK, e.do(e.tokenA, "GET", "/admin/apps/"+app+"/coding-agent/capabilities", nil, &caps))
	require.Len(t, caps.Sandboxes, 2)
	for _, s := range caps.Sandboxes {
		assert.True(t, s.Available, s.Name)
		assert.Equal(t, "healthy", s.State, s.Name)
		assert.Equal(t, want[s.Name], s.Isolation, s.Name)
	}
}
