package main

import (
	"context"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host/store"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTokensCreate: the printed secret authenticates as the tenant with
// exactly the scopes asked for (platform.admin included), the old
// one-dash flags still work, and bad flags are refused as usage errors.
func TestTokensCreate(t *testing.T) {
	dataDir := t.TempDir()
	t.Setenv("AGENTHOST_DATA_DIR", dataDir)
	t.Setenv("DATABASE_URL", "")
	st := func() *store.Store {
		s, err := store.Open(context.Background(), "", dataDir)
		require.NoError(t, err)
		t.Cleanup(func() { s.Close() })
		return s
	}

	for _, tc := range []struct {
		name      string
		args      []string
		tenant    string
		has, lack []string
	}{
		{"default scopes", []string{"--tenant", "acme"}, "acme", []string{"apps.read", "apps.write"}, []string{"admin", store.ScopePlatformAdmin}},
		{"apps", []string{"--tenant", "acme", "--scopes", "apps.read,apps.write"}, "acme", []string{"apps.read", "apps.write"}, []string{"admin", store.ScopePlatformAdmin}},
		{"read only", []string{"--tenant=beta", "--scopes=apps.read", "--email", "r@beta", "--name", "ro"}, "beta", []string{"apps.read"}, []string{"apps.write", "admin"}},
		// admin implies every tenant scope, never platform.admin.
		{"tenant admin", []string{"--tenant", "acme", "--scopes", "admin"}, "acme", []string{"apps.read", "apps.write", "admin"}, []string{store.ScopePlatformAdmin}},
		{"platform admin only", []string{"--tenant", "ops", "--scopes", "platform.admin"}, "ops", []string{store.ScopePlatformAdmin}, []string{"apps.read", "admin"}},
		{"operator", []string{"--tenant", "ops", "--scopes", "apps.read, admin,platform.admin"}, "ops", []string{"apps.read", "admin", store.ScopePlatformAdmin}, nil},
		{"one-dash flags", []string{"-tenant", "old", "-scopes", "apps.write", "-name", "legacy"}, "old", []string{"apps.write"}, []string{"apps.read"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, append([]string{"tokens", "create"}, tc.args...)...)
			require.Equal(t, exitOK, code, errOut)
			secret := strings.TrimSpace(out)
			require.True(t, strings.HasPrefix(secret, store.TokenPrefix), secret)
			p, err := st().Authenticate(context.Background(), secret)
			require.NoError(t, err)
			assert.Equal(t, tc.tenant, p.TenantID)
			for _, s := range tc.has {
				assert.True(t, p.Has(s), s)
			}
			for _, s := range tc.lack {
				assert.False(t, p.Has(s), s)
			}
		})
	}

	for _, args := range [][]string{
		{"--scopes", "apps.read"},                 // tenant is required
		{"--tenant", "", "--scopes", "apps.read"}, // and not empty
		{"--tenant", "acme", "--scopes", "root"},  // unknown scope
	} {
		code, out, errOut := runCLI(t, append([]string{"tokens", "create"}, args...)...)
		assert.Equal(t, exitUsage, code, "%v: %s", args, errOut)
		assert.Empty(t, out, "no token is printed for %v", args)
	}
}
