package store

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDefaultModel: the tenant's default, else the global one, else the
// oldest visible chat model, in one read; a default the tenant cannot use
// is passed over.
func TestDefaultModel(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		seedApp(t, s)
		m, err := s.DefaultModel(ctx, "t1")
		require.NoError(t, err)
		assert.Empty(t, m.ID, "no models: none")
		for _, id := range []string{"mdl_first", "mdl_global", "mdl_tenant"} {
			require.NoError(t, s.CreateModel(ctx, Model{ID: id, Name: id, Kind: "chat", Provider: "openai", ProviderModel: "m", Active: true}, nil))
		}
		require.NoError(t, s.EnsureTenant(ctx, "t2", "Other"))
		require.NoError(t, s.CreateModel(ctx, Model{ID: "mdl_other", TenantID: "t2", Name: "o", Kind: "chat", Provider: "openai", ProviderModel: "m", Active: true}, nil))
		m, err = s.DefaultModel(ctx, "t1")
		require.NoError(t, err)
		assert.Equal(t, "mdl_first", m.ID, "no defaults: the oldest visible model")

		require.NoError(t, s.SetDefaultModel(ctx, "", "mdl_global"))
		m, err = s.DefaultModel(ctx, "t1")
		require.NoError(t, err)
		assert.Equal(t, "mdl_global", m.ID)

		require.NoError(t, s.SetDefaultModel(ctx, "t1", "mdl_tenant"))
		m, err = s.DefaultModel(ctx, "t1")
		require.NoError(t, err)
		assert.Equal(t, "mdl_tenant", m.ID, "the tenant's default wins")
		m, err = s.DefaultModel(ctx, "t3")
		require.NoError(t, err)
		assert.Equal(t, "mdl_global", m.ID, "another tenant's default is not this one's")

		require.NoError(t, s.SetDefaultModel(ctx, "t1", "mdl_other"))
		m, err = s.DefaultModel(ctx, "t1")
		require.NoError(t, err)
		assert.Equal(t, "mdl_global", m.ID, "a default of another tenant's model is passed over")
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
