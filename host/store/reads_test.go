package store

import (
	"context"
	"errors"
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

// TestAppForRun: the app, the tenant's default model and the engine's id for
// it, in one read, agree with GetApp, DefaultModel and EngineModelID.
func TestAppForRun(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		seedApp(t, s)
		agrees := func(tenant, engine string) (Model, string) {
			t.Helper()
			app, m, engineID, err := s.AppForRun(ctx, "app1", tenant, engine)
			require.NoError(t, err)
			want, err := s.GetApp(ctx, "app1")
			require.NoError(t, err)
			assert.Equal(t, want, app)
			wantModel, err := s.DefaultModel(ctx, tenant)
			require.NoError(t, err)
			assert.Equal(t, wantModel, m)
			wantID := ""
			if wantModel.ID != "" {
				wantID, err = s.EngineModelID(ctx, wantModel.ID, tenant, engine)
				require.NoError(t, err)
			}
			assert.Equal(t, wantID, engineID)
			// Read with a chat's tail, the answer is the same.
			withApp, withModel, withID, tail, err := s.AppForRunWithChatTail(ctx, "app1", tenant, engine, "chat_none", 100, 0)
			require.NoError(t, err)
			assert.Equal(t, app, withApp)
			assert.Equal(t, m, withModel)
			assert.Equal(t, engineID, withID)
			assert.True(t, errors.Is(tail.Err, ErrNotFound), "no such chat: %v", tail.Err)
			return m, engineID
		}
		m, _ := agrees("t1", "opencode")
		assert.Empty(t, m.ID, "no models: none")

		require.NoError(t, s.CreateModel(ctx, Model{ID: "mdl_a", Name: "a", Kind: "chat", Provider: "openai", ProviderModel: "m", Active: true},
			[]Binding{{Engine: "opencode", EngineModelID: "openai/m-global"}}))
		require.NoError(t, s.EnsureTenant(ctx, "t2", "Other"))
		require.NoError(t, s.CreateModel(ctx, Model{ID: "mdl_t2", TenantID: "t2", Name: "o", Kind: "chat", Provider: "openai", ProviderModel: "m", Active: true}, nil))
		m, id := agrees("t1", "opencode")
		assert.Equal(t, "mdl_a", m.ID)
		assert.Equal(t, "openai/m-global", id)
		_, id = agrees("t1", "native")
		assert.Empty(t, id, "no binding for that engine")

		_, err := s.w.Exec(s.rebind(`INSERT INTO model_bindings (model_id, tenant_id, engine, engine_model_id) VALUES (?, ?, ?, ?)`),
			"mdl_a", "t1", "opencode", "openai/m-t1")
		require.NoError(t, err)
		_, id = agrees("t1", "opencode")
		assert.Equal(t, "openai/m-t1", id, "the tenant's binding wins")
		_, id = agrees("t2", "opencode")
		assert.Equal(t, "openai/m-global", id, "not another tenant's binding")

		require.NoError(t, s.SetDefaultModel(ctx, "t2", "mdl_t2"))
		m, _ = agrees("t2", "opencode")
		assert.Equal(t, "mdl_t2", m.ID)

		_, _, _, err = s.AppForRun(ctx, "app_none", "t1", "opencode")
		assert.True(t, errors.Is(err, ErrNotFound), "%v", err)
		_, _, _, _, err = s.AppForRunWithChatTail(ctx, "app_none", "t1", "opencode", "chat_none", 100, 0)
		assert.True(t, errors.Is(err, ErrNotFound), "%v", err)
	})
}
