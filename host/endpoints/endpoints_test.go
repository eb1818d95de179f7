package endpoints_test

import (
	"testing"

	"github.com/agenthost/agenthost/host/endpoints"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNormalize(t *testing.T) {
	for in, want := range map[string]string{
		"https://API.OpenAI.com/v1/":    "https://api.openai.com/v1",
		"https://api.openai.com:443/v1": "https://api.openai.com/v1",
		"http://127.0.0.1:80/v1":        "http://127.0.0.1/v1",
		"http://127.0.0.1:8080":         "http://127.0.0.1:8080",
		"http://[::1]:11434/v1":         "http://[::1]:11434/v1",
	} {
		got, err := endpoints.Normalize(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, bad := range []string{"", "api.openai.com/v1", "ftp://x/", "https://user:pw@api.openai.com/v1",
		"https://api.openai.com/v1?x=https://evil", "https://api.openai.com/v1#frag", "file:///etc/passwd"} {
		_, err := endpoints.Normalize(bad)
		assert.Error(t, err, bad)
	}
}

func TestCheck(t *testing.T) {
	t.Setenv("OPENAI_BASE_URL", "")
	t.Setenv("ANTHROPIC_BASE_URL", "")
	p, err := endpoints.New([]endpoints.Binding{
		{Name: "gw", KeyEnv: "GW_KEY", BaseURLs: []string{"https://gw.example/v1"}},
		{Name: "ollama", BaseURLs: []string{"http://127.0.0.1:11434/v1"}},
	})
	require.NoError(t, err)
	cases := []struct {
		name                string
		provider, base, key string
		platform            bool
		refusedField        string // "" when allowed
	}{
		{"openai default", "openai", "", "OPENAI_API_KEY", false, ""},
		{"openai default spelled out", "openai", "https://api.openai.com/v1/", "OPENAI_API_KEY", false, ""},
		{"openai key elsewhere", "openai", "http://127.0.0.1:9/v1", "OPENAI_API_KEY", true, "base_url"},
		{"openai key to the gateway", "openai", "https://gw.example/v1", "OPENAI_API_KEY", true, "base_url"},
		{"anthropic default", "anthropic", "", "ANTHROPIC_API_KEY", false, ""},
		{"gateway key", "openai", "https://gw.example/v1", "GW_KEY", false, ""},
		{"gateway key, other path", "openai", "https://gw.example/v2", "GW_KEY", false, "base_url"},
		{"unbound key", "openai", "https://gw.example/v1", "DATABASE_URL", true, "api_key_env"},
		{"keyless listed", "openai", "http://127.0.0.1:11434/v1", "", false, ""},
		{"keyless unlisted, tenant", "openai", "http://10.0.0.1/v1", "", false, "base_url"},
		{"keyless unlisted, operator", "openai", "http://10.0.0.1/v1", "", true, ""},
		{"unknown provider, no base", "mistral", "", "GW_KEY", true, "base_url"},
		{"unknown provider, no base, keyless operator", "mistral", "", "", true, ""},
		{"not a URL", "openai", "gw.example", "", true, "base_url"},
	}
	for _, c := range cases {
		err := p.Check(c.provider, c.base, c.key, c.platform)
		if c.refusedField == "" {
			assert.NoError(t, err, c.name)
			continue
		}
		var r *endpoints.Refusal
		if assert.ErrorAs(t, err, &r, c.name) {
			assert.Equal(t, c.refusedField, r.Field, c.name)
		}
	}
	assert.Equal(t, "api.openai.com", endpoints.Host("openai", ""))
	assert.Equal(t, "127.0.0.1:11434", endpoints.Host("openai", "http://127.0.0.1:11434/v1"))

	_, err = endpoints.New([]endpoints.Binding{{Name: "bad", KeyEnv: "K", BaseURLs: []string{"not a url"}}})
	assert.Error(t, err)
}
