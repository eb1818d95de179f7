package main

import (
	"context"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host/config"
	"github.com/agenthost/agenthost/host/store"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTokensCreate: the printed secret authenticates as the tenant with the
// scopes asked for, and bad flags are refused.
func TestTokensCreate(t *testing.T) {
	cfg := config.Host{DataDir: t.TempDir()}
	r, w, err := os.Pipe()
	require.NoError(t, err)
	stdout := os.Stdout
	os.Stdout = w
	err = tokensCreate(cfg, []string{"--tenant", "acme", "--scopes", "apps.read,apps.write"})
	os.Stdout = stdout
	w.Close()
	require.NoError(t, err)
	out, _ := io.ReadAll(r)
	secret := strings.TrimSpace(string(out))
	require.True(t, strings.HasPrefix(secret, store.TokenPrefix), secret)

	st, err := store.Open(context.Background(), "", cfg.DataDir)
	require.NoError(t, err)
	defer st.Close()
	p, err := st.Authenticate(context.Background(), secret)
	require.NoError(t, err)
	assert.Equal(t, "acme", p.TenantID)
	assert.True(t, p.Has("apps.write"))
	assert.False(t, p.Has("admin"))

	assert.Error(t, tokensCreate(cfg, []string{"--scopes", "apps.read"}), "tenant is required")
	assert.Error(t, tokensCreate(cfg, []string{"--tenant", "acme", "--scopes", "root"}), "unknown scope")
}
