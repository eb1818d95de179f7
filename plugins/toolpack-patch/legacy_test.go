package patch

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/agenthost/agenthost/sdk/toolpack"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMain turns the legacy write tool on for this package's tests, which
// use it to set up and to check the path policy on writes;
// TestLegacyWriteFileIsOffByDefault checks the default.
func TestMain(m *testing.M) {
	os.Setenv("APPS_CODING_AGENT_ENABLE_LEGACY_WRITE_FILE", "1")
	os.Exit(m.Run())
}

func toolNames(t *testing.T, p *Pack) []string {
	t.Helper()
	specs, err := p.Tools(t.Context())
	require.NoError(t, err)
	var names []string
	for _, s := range specs {
		names = append(names, s.Name)
	}
	return names
}

func TestLegacyWriteFileIsOffByDefault(t *testing.T) {
	t.Setenv("APPS_CODING_AGENT_ENABLE_LEGACY_WRITE_FILE", "")
	p := New()
	assert.NotContains(t, toolNames(t, p), "coding_agent_write_file")
	ws := newFake(nil)
	res, err := p.Call(t.Context(), toolpack.Call{Tool: "coding_agent_write_file", Input: json.RawMessage(`{"path":"a.txt","content":"x"}`)}, ws)
	require.NoError(t, err)
	requireFailure(t, res, CodeToolDisabled, "tool")
	_, err = ws.Stat(t.Context(), "a.txt")
	assert.Error(t, err, "nothing was written")

	// The config block turns it on whatever the environment says...
	require.NoError(t, p.Configure(t.Context(), json.RawMessage(`{"legacy_write_file": true}`)))
	assert.Contains(t, toolNames(t, p), "coding_agent_write_file")

	// ...and so does the environment variable.
	t.Setenv("APPS_CODING_AGENT_ENABLE_LEGACY_WRITE_FILE", "1")
	assert.Contains(t, toolNames(t, New()), "coding_agent_write_file")
	p = New()
	require.NoError(t, p.Configure(t.Context(), json.RawMessage(`{"legacy_write_file": false}`)))
	assert.NotContains(t, toolNames(t, p), "coding_agent_write_file")
}
