package opencode

import (
	"testing"

	"github.com/agenthost/agenthost/sdk/engine"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestConnectList: what the server must reach on a sandbox that gives it
// a network of its own: the model's server (port from the scheme when the
// URL has none), the tool bridge, and the configured extras.
func TestConnectList(t *testing.T) {
	bridge := "http://127.0.0.1:40123"
	for _, tc := range []struct {
		name       string
		model      engine.Model
		providerID string
		extra      []string
		want       []string
	}{
		{"local model server", engine.Model{BaseURL: "http://127.0.0.1:8080/v1"}, "fake", nil,
			[]string{"127.0.0.1:8080", "127.0.0.1:40123"}},
		{"https without a port", engine.Model{BaseURL: "https://llm.example.com/v1"}, "corp", nil,
			[]string{"llm.example.com:443", "127.0.0.1:40123"}},
		{"http without a port", engine.Model{BaseURL: "http://llm.internal/v1"}, "corp", nil,
			[]string{"llm.internal:80", "127.0.0.1:40123"}},
		{"OpenCode's own provider", engine.Model{}, "anthropic", []string{"proxy.internal:3128"},
			[]string{"api.anthropic.com:443", "127.0.0.1:40123", "proxy.internal:3128"}},
		{"unknown provider, no URL", engine.Model{}, "mystery", nil, []string{"127.0.0.1:40123"}},
	} {
		got, err := connectList(Config{Connect: tc.extra}, tc.model, tc.providerID, bridge)
		require.NoError(t, err, tc.name)
		assert.Equal(t, tc.want, got, tc.name)
	}
	_, err := connectList(Config{}, engine.Model{ID: "m", BaseURL: "not a url"}, "x", bridge)
	assert.ErrorContains(t, err, `model "m" base URL`)
}
