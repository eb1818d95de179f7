package archtest

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const module = "github.com/agenthost/agenthost/"

// moduleRoot is two folders up from this file.
func moduleRoot(t *testing.T) string {
	_, file, _, ok := runtime.Caller(0)
	require.True(t, ok)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// deps maps each package of ours matching pattern to its transitive
// dependencies inside the module (go list -deps).
func deps(t *testing.T, pattern string) map[string][]string {
	t.Helper()
	pkgs := list(t, "-f", "{{.ImportPath}}", pattern)
	out := map[string][]string{}
	for _, p := range pkgs {
		var own []string
		for _, d := range list(t, "-deps", "-f", "{{.ImportPath}}", p) {
			if strings.HasPrefix(d, module) && d != p {
				own = append(own, strings.TrimPrefix(d, module))
			}
		}
		out[strings.TrimPrefix(p, module)] = own
	}
	return out
}

func list(t *testing.T, args ...string) []string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	cmd.Dir = moduleRoot(t)
	b, err := cmd.Output()
	require.NoError(t, err, "go list %v", args)
	return strings.Fields(string(b))
}

func top(pkg string) string { return strings.SplitN(pkg, "/", 2)[0] }

// TestDependencyRules: core imports nothing of ours; sdk imports nothing of
// host or core; api (the OpenAPI document) imports nothing of ours; plugins
// import sdk only (and their own packages); nothing but a plugin's own main
// under cmd/ imports plugins.
func TestDependencyRules(t *testing.T) {
	if testing.Short() {
		t.Skip("go list over the whole module is slow for -short")
	}
	allowed := map[string][]string{
		"core": {"core"},
		"sdk":  {"sdk"},
		// api is the OpenAPI document (embedded) that host/api serves and
		// its tests hold the handlers to; it imports nothing of ours.
		"api":     {},
		"host":    {"host", "core", "sdk", "migrations", "api"},
		"plugins": {"sdk"},
	}
	for area, ok := range allowed {
		for pkg, ds := range deps(t, "./"+area+"/...") {
			for _, d := range ds {
				if area == "plugins" && strings.HasPrefix(d, pluginRoot(pkg)) {
					continue // a plugin's own sub-packages
				}
				assert.Contains(t, ok, top(d), "%s must not import %s", pkg, d)
			}
		}
	}
	for pkg, ds := range deps(t, "./cmd/...") {
		for _, d := range ds {
			if top(d) != "plugins" {
				continue
			}
			// cmd/agenthost-engine-mock may import plugins/engine-mock.
			want := "plugins/" + strings.TrimPrefix(pkg, "cmd/agenthost-")
			assert.True(t, strings.HasPrefix(d, want), "%s must not import %s", pkg, d)
		}
	}
}

// pluginRoot is plugins/<name>/ for any package under it.
func pluginRoot(pkg string) string {
	parts := strings.SplitN(pkg, "/", 3)
	if len(parts) < 2 {
		return pkg + "/"
	}
	return parts[0] + "/" + parts[1]
}

// TestClientSpeaksOnlyHTTP: the API client (host/apiclient) imports no
// package of ours, and the CLI's client commands (cmd/agenthost/client)
// nothing of the host but that client: they reach a host through its
// public HTTP API only, never its store or its internals.
func TestClientSpeaksOnlyHTTP(t *testing.T) {
	if testing.Short() {
		t.Skip("go list over the whole module is slow for -short")
	}
	for pkg, ds := range deps(t, "./host/apiclient/...") {
		assert.Empty(t, ds, "%s must import no package of this module", pkg)
	}
	cmds := deps(t, "./cmd/agenthost/client/...")
	require.NotEmpty(t, cmds)
	for pkg, ds := range cmds {
		for _, d := range ds {
			ok := d == "host/apiclient" || top(d) == "core" || top(d) == "sdk" || strings.HasPrefix(d, "cmd/agenthost/client")
			assert.True(t, ok, "%s must not import %s: the client speaks the public API only", pkg, d)
		}
	}
}
