package pluginmgr

import (
	"bytes"
	"testing"

	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/assert"
)

// TestWarnIsolation: loading a sandbox backend that does not use
// namespaces logs a warning that says what a command can reach.
func TestWarnIsolation(t *testing.T) {
	cases := []struct {
		isolation string
		want      string // "" means no warning
	}{
		{plugin.IsolationNone, "does NOT isolate commands"},
		{plugin.IsolationUID, "isolates commands by uid only"},
		{"", "does not say how it isolates"},
		{plugin.IsolationNamespaces, ""},
	}
	for _, tc := range cases {
		var buf bytes.Buffer
		log := hclog.New(&hclog.LoggerOptions{Output: &buf, Level: hclog.Info})
		warnIsolation(log, "local", map[string]string{plugin.CapabilityIsolation: tc.isolation})
		if tc.want == "" {
			assert.Empty(t, buf.String(), tc.isolation)
			continue
		}
		assert.Contains(t, buf.String(), "[WARN]", tc.isolation)
		assert.Contains(t, buf.String(), tc.want, tc.isolation)
		assert.Contains(t, buf.String(), "plugin=local", tc.isolation)
	}
}
