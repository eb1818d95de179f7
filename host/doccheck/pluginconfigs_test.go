package doccheck

import (
	"path/filepath"
	"testing"

	"github.com/agenthost/agenthost/host/internal/testenv"
	"github.com/agenthost/agenthost/host/pluginmgr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTestsRunPluginsAsShipped: the plugin configs the tests and benchmarks
// write (testenv.PluginConfigDir) give each default plugin the max_procs
// plugin-configs/ ships, so a benchmark measures what `make run` runs.
func TestTestsRunPluginsAsShipped(t *testing.T) {
	configs, err := pluginmgr.LoadConfigDir(filepath.Join(repoRoot, "plugin-configs"), filepath.Join(repoRoot, "bin", "plugins"))
	require.NoError(t, err)
	seen := 0
	for _, c := range configs {
		if _, isDefault := testenv.DefaultPlugins[c.Name]; !isDefault {
			continue
		}
		seen++
		assert.Equal(t, c.MaxProcs, testenv.DefaultMaxProcs[c.Name], "max_procs of %s: %s against testenv.DefaultMaxProcs", c.Name, c.File)
	}
	assert.Equal(t, len(testenv.DefaultPlugins), seen, "every default plugin has a file in plugin-configs/")
}
