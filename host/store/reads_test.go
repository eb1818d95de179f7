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

// TestAppCarriesItsSelectedAgent: the app's selected agent is read with it
// (run creation needs both), by id and in lists.
func TestAppCarriesItsSelectedAgent(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		seedApp(t, s)
		a, err := s.GetApp(ctx, "app1")
		require.NoError(t, err)
		assert.Empty(t, a.SelectedAgentID)
		require.NoError(t, s.CreateAgent(ctx, &Agent{ID: "agt_1", TenantID: "t1", Name: "helper"}, nil))
		require.NoError(t, s.SelectAgent(ctx, "app1", "agt_1"))
		a, err = s.GetApp(ctx, "app1")
		require.NoError(t, err)
		assert.Equal(t, "agt_1", a.SelectedAgentID)
		list, err := s.ListApps(ctx, "t1", "", 10)
		require.NoError(t, err)
		require.Len(t, list, 1)
		assert.Equal(t, "agt_1", list[0].SelectedAgentID)
	})
}
