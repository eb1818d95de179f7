//go:build linux

package api_test

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host/config"
	"github.com/agenthost/agenthost/host/internal/testenv"
	"github.com/agenthost/agenthost/plugins/engine-native/fakellm"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOpenCodeBwrapEscapes: the OpenCode server runs on the bwrap sandbox
// (loopback policy), and a command its bash tool runs, at the fake
// model's request, is held to the sandbox: no host files, database or
// environment, no host processes, no other sandboxes, and of the network
// only the model server and the tool bridge (the server's own Connect
// list), not the host's API nor the internet.
func TestOpenCodeBwrapEscapes(t *testing.T) {
	t.Setenv(testenv.SandboxEnv, "bwrap")
	t.Setenv("AGENTHOST_TEST_HOST_SECRET", "host-secret-value")
	srv := fakellm.New()
	defer srv.Close()
	var dbPath, dataDir string
	e, model := startOpenCodeEnvHost(t, srv, "oc-escape", "", func(c *config.Host) { dbPath, dataDir = c.DatabaseURL, c.DataDir },
		// OpenCode's own guard off, so only the sandbox stands in the way.
		`permission = { bash = "allow", external_directory = "allow" }`)
	require.FileExists(t, dbPath)
	apiPort := portOf(t, e.srv.URL)
	modelPort := portOf(t, srv.BaseURL())
	probes := []struct{ name, cmd string }{
		{"shadow", "cat /etc/shadow"},
		{"database", "cat " + dbPath},
		{"data dir", "ls " + dataDir},
		{"host api", "bash -c 'exec 3<>/dev/tcp/127.0.0.1/" + apiPort + "'"},
		{"internet", "bash -c 'exec 3<>/dev/tcp/1.1.1.1/53'"},
		{"model server", "bash -c 'exec 3<>/dev/tcp/127.0.0.1/" + modelPort + "'"},
		{"host process", fmt.Sprintf("kill -0 %d", os.Getpid())},
		{"host secret", "grep -rqs host-secret-value /proc/*/environ"},
		{"write usr", "touch /usr/owned"},
		{"workspace", "touch escape-probe.txt"},
	}
	var script strings.Builder
	for _, p := range probes {
		fmt.Fprintf(&script, "if %s >/dev/null 2>&1; then echo '%s: yes'; else echo '%s: no'; fi; ", p.cmd, p.name, p.name)
	}
	script.WriteString(`echo "uid: $(id -u)"; echo "processes: $(ls /proc | grep -c '^[0-9]')"`)
	srv.Script("oc-escape",
		fakellm.Turn{Calls: []fakellm.Call{bashCall("call_e1", script.String())}},
		fakellm.Turn{Text: []string{"probed"}},
	)
	app := e.createApp(e.tokenA)
	run := e.ocRun(app, model, "", "probe the sandbox")
	done := e.ocWait(app, run)
	require.Equal(t, "completed", done.Status, "%+v %v", done, e.eventTypes(app, run))
	completed := e.payloads(app, run, "tool.completed")
	require.Len(t, completed, 1, "events: %v; failed: %v", e.eventTypes(app, run), e.payloads(app, run, "tool.failed"))
	out := completed[0]
	t.Logf("probe output: %s", out)
	for _, want := range []string{
		"shadow: no", "database: no", "data dir: no", "host api: no", "internet: no",
		"model server: yes", "host process: no", "host secret: no", "write usr: no", "workspace: yes",
		"uid: 1000",
	} {
		assert.Contains(t, out, want)
	}
	d := e.runDetail(app, run)
	require.NotEmpty(t, d.ResultRevisionID)
	assert.Equal(t, "", e.fileAt(app, d.ResultRevisionID, "escape-probe.txt"), "what the command wrote is in the revision")
}

func portOf(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	require.NoError(t, err)
	_, port, err := net.SplitHostPort(u.Host)
	require.NoError(t, err)
	return port
}
