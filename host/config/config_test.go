package config

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestToolTimeout(t *testing.T) {
	t.Setenv("APPS_CODING_AGENT_TOOL_TIMEOUT_S", "")
	h, err := Load("")
	require.NoError(t, err)
	assert.Equal(t, 120, h.ToolTimeoutS, "the seed's default")

	file := filepath.Join(t.TempDir(), "host.hcl")
	require.NoError(t, os.WriteFile(file, []byte("tool_timeout_s = 30\n"), 0o644))
	h, err = Load(file)
	require.NoError(t, err)
	assert.Equal(t, 30, h.ToolTimeoutS)

	t.Setenv("APPS_CODING_AGENT_TOOL_TIMEOUT_S", "45")
	h, err = Load(file)
	require.NoError(t, err)
	assert.Equal(t, 45, h.ToolTimeoutS, "the environment wins over the file")

	for _, bad := range []string{"soon", "0", "-1", "3601"} {
		t.Setenv("APPS_CODING_AGENT_TOOL_TIMEOUT_S", bad)
		_, err = Load("")
		assert.Error(t, err, bad)
	}
}
