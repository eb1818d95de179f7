package local

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/agenthost/agenthost/sdk/plugintest"
	"github.com/agenthost/agenthost/sdk/sandbox"
	"github.com/stretchr/testify/require"
)

// binDir holds the real plugin binary, built once, for the tests that need
// a plugin process of its own: to probe it from a command, or SIGKILL it.
var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "local-test-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// Reachable by the sandbox uids and by nobody, who runs one test's plugin.
	_ = os.Chmod(dir, 0o755)
	cmd := exec.Command("go", "build", "-o", dir+"/", "github.com/agenthost/agenthost/cmd/agenthost-sandbox-local")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build plugin:", err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// pluginProc is a running plugin binary.
type pluginProc struct {
	*sandbox.Client
	pid int
}

// launch starts the plugin binary with env (and as cred's user when cred
// is not nil), configures it with cfg and returns its client and pid; the
// process is killed at the end of the test.
func launch(t testing.TB, cfg Config, env []string, cred *syscall.Credential) pluginProc {
	t.Helper()
	raw, err := json.Marshal(cfg)
	require.NoError(t, err)
	cmd := exec.Command(filepath.Join(binDir, "agenthost-sandbox-local"))
	cmd.Env = append([]string{"PATH=/usr/bin:/bin", "TMPDIR=/tmp"}, env...)
	if cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	c, proc := plugintest.SandboxBinary(t, cmd, raw)
	return pluginProc{Client: c, pid: proc.Pid}
}

// markerPids lists the live (not zombie) processes with marker in their
// command line.
func markerPids(marker string) []string {
	var pids []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !strings.Contains(string(b), marker) {
			continue
		}
		st, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err == nil && strings.HasPrefix(string(st[strings.LastIndexByte(string(st), ')')+1:]), " Z") {
			continue
		}
		pids = append(pids, e.Name())
	}
	return pids
}
