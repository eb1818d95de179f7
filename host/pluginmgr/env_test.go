package pluginmgr

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host/internal/noopplugin"
	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPluginEnvironment: a launched plugin's process holds the data dir,
// the variables its block lists, GOMAXPROCS when max_procs is set, and
// nothing else of the host's environment.
func TestPluginEnvironment(t *testing.T) {
	t.Setenv("AGENTHOST_TEST_LISTED", "yes")
	t.Setenv("AGENTHOST_TEST_SECRET", "no")
	m := &Manager{opts: Options{DataDir: "/srv/agenthost"}}
	for name, tc := range map[string]struct {
		cfg  Config
		want []string
	}{
		"max_procs set": {Config{Env: []string{"AGENTHOST_TEST_LISTED"}, MaxProcs: 1},
			[]string{"AGENTHOST_DATA_DIR=/srv/agenthost", "GOMAXPROCS=1", "AGENTHOST_TEST_LISTED=yes"}},
		"max_procs unset": {Config{},
			[]string{"AGENTHOST_DATA_DIR=/srv/agenthost"}},
	} {
		t.Run(name, func(t *testing.T) {
			log := hclog.New(&hclog.LoggerOptions{Level: hclog.Error, Output: os.Stderr})
			cmd := pluginCmd(noopBinary(t), nil, m.env(tc.cfg))
			client := goplugin.NewClient(clientConfig(cmd, noopplugin.PluginSet(), nil, log, 30*time.Second))
			t.Cleanup(client.Kill)
			_, err := client.Client()
			require.NoError(t, err)
			raw, err := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/environ")
			require.NoError(t, err)
			got := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
			// go-plugin adds its handshake cookie and transport variables.
			got = slices.DeleteFunc(got, func(kv string) bool {
				return strings.HasPrefix(kv, "PLUGIN_") || strings.HasPrefix(kv, plugin.Handshake.MagicCookieKey+"=")
			})
			assert.ElementsMatch(t, tc.want, got)
		})
	}
}
