package store

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDefaultModelIDs: a tenant's default and the global one, in one read.
func TestDefaultModelIDs(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		seedApp(t, s)
		for _, id := range []string{"mdl_global", "mdl_tenant"} {
			require.NoError(t, s.CreateModel(ctx, Model{ID: id, Name: id, Kind: "chat", Provider: "openai", ProviderModel: "m", Active: true}, nil))
		}
		tenant, global, err := s.DefaultModelIDs(ctx, "t1")
		require.NoError(t, err)
		assert.Empty(t, tenant)
		assert.Empty(t, global)

		require.NoError(t, s.SetDefaultModel(ctx, "", "mdl_global"))
		tenant, global, err = s.DefaultModelIDs(ctx, "t1")
		require.NoError(t, err)
		assert.Empty(t, tenant)
		assert.Equal(t, "mdl_global", global)

		require.NoError(t, s.SetDefaultModel(ctx, "t1", "mdl_tenant"))
		tenant, global, err = s.DefaultModelIDs(ctx, "t1")
		require.NoError(t, err)
		assert.Equal(t, "mdl_tenant", tenant)
		assert.Equal(t, "mdl_global", global)
		tenant, _, err = s.DefaultModelIDs(ctx, "t2")
		require.NoError(t, err)
		assert.Empty(t, tenant, "another tenant's default is not this one's")
	})
}
