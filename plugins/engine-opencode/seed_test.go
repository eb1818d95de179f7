package opencode

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agenthost/agenthost/sdk/engine"
	"github.com/agenthost/agenthost/sdk/workspace/dirfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSeedWritesOnlyWhatChanged: a warm sandbox's seeded files are left
// as they are (OpenCode's watcher would reload its tools on a rewrite); a
// file the agent changed or removed is written again.
func TestSeedWritesOnlyWhatChanged(t *testing.T) {
	root := t.TempDir()
	ws, err := dirfs.New(root, nil)
	require.NoError(t, err)
	ctx := context.Background()
	tools := []engine.ToolDescriptor{{Name: contractTools[0], Description: "the contract", InputSchema: []byte(`{"type":"object"}`)}}
	zod := []byte("export const z = {};\n")
	bridged, err := seed(ctx, ws, tools, zod, nil)
	require.NoError(t, err)
	assert.True(t, bridged[contractTools[0]])
	tool := filepath.Join(root, seedDir, "tool", contractTools[0]+".ts")
	old := time.Now().Add(-time.Hour)
	for _, p := range []string{tool, filepath.Join(root, zodFile)} {
		require.NoError(t, os.Chtimes(p, old, old))
	}
	_, err = seed(ctx, ws, tools, zod, nil)
	require.NoError(t, err)
	fi, err := os.Stat(tool)
	require.NoError(t, err)
	assert.True(t, fi.ModTime().Equal(old), "an unchanged tool file was rewritten")

	require.NoError(t, os.WriteFile(tool, []byte("changed by the agent"), 0o644))
	require.NoError(t, os.Remove(filepath.Join(root, zodFile)))
	_, err = seed(ctx, ws, tools, zod, nil)
	require.NoError(t, err)
	b, err := os.ReadFile(tool)
	require.NoError(t, err)
	assert.Contains(t, string(b), contractTools[0], "a changed tool file is seeded again")
	b, err = os.ReadFile(filepath.Join(root, zodFile))
	require.NoError(t, err)
	assert.Equal(t, zod, b)
}
