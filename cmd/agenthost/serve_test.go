package main

import (
	"bufio"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host/store"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestServeAnnounces: serve, on a fresh data dir, prints the URL it
// answers on and how to authenticate: the operator's own bootstrap token
// when one is set, else the tokens create command, never a secret of its
// own making. It stops cleanly on SIGINT.
func TestServeAnnounces(t *testing.T) {
	bin := buildAgenthost(t)

	for _, tc := range []struct {
		name, bootstrap string
		want            []string
	}{
		{"no token", "", []string{
			"agenthost: no bootstrap token set (AGENTHOST_BOOTSTRAP_TOKEN); to make an API token:",
			bin + " tokens create --tenant default --scopes apps.read,apps.write,admin",
		}},
		{"bootstrap token", "operator-chosen-secret", []string{
			"agenthost: operator token from $AGENTHOST_BOOTSTRAP_TOKEN",
			"curl -H 'Authorization: Bearer operator-chosen-secret' http://127.0.0.1:",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(bin, "serve")
			cmd.Env = append(os.Environ(),
				"AGENTHOST_LISTEN=127.0.0.1:0",
				"AGENTHOST_DATA_DIR="+t.TempDir(),
				"AGENTHOST_PLUGIN_CONFIG_DIR="+t.TempDir(), // no plugins: this is about the CLI
				"AGENTHOST_BOOTSTRAP_TOKEN="+tc.bootstrap,
				"AGENTHOST_LOG_LEVEL=error",
				"DATABASE_URL=",
			)
			cmd.Stderr = os.Stderr
			stdout, err := cmd.StdoutPipe()
			require.NoError(t, err)
			require.NoError(t, cmd.Start())
			t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })

			lines := make(chan string)
			go func() {
				sc := bufio.NewScanner(stdout)
				for sc.Scan() {
					lines <- sc.Text()
				}
				close(lines)
			}()
			var out []string
			timeout := time.After(60 * time.Second)
			for len(out) < 3 {
				select {
				case l, ok := <-lines:
					require.True(t, ok, "serve ended early: %q", out)
					out = append(out, l)
				case <-timeout:
					t.Fatalf("serve printed %q in 60s", out)
				}
			}
			m := regexp.MustCompile(`^agenthost: listening on (http://127\.0\.0\.1:\d+) \(sqlite database, data dir .+\)$`).FindStringSubmatch(out[0])
			require.NotNil(t, m, out[0])
			text := strings.Join(out, "\n")
			for _, w := range tc.want {
				assert.Contains(t, text, w)
			}
			assert.NotContains(t, text, store.TokenPrefix, "serve prints no secret it made")

			// The URL answers, and the announced token works.
			req, err := http.NewRequest(http.MethodGet, m[1]+"/admin/apps", nil)
			require.NoError(t, err)
			req.Header.Set("Authorization", "Bearer "+tc.bootstrap)
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			resp.Body.Close()
			want := http.StatusUnauthorized
			if tc.bootstrap != "" {
				want = http.StatusOK
			}
			assert.Equal(t, want, resp.StatusCode)

			require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
			assert.NoError(t, cmd.Wait(), "serve exits 0 on SIGINT")
		})
	}
}

// buildAgenthost builds this command into a fresh folder and returns the
// binary's path, for tests that run it as a process of its own.
func buildAgenthost(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "agenthost")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	require.NoError(t, build.Run())
	return bin
}
