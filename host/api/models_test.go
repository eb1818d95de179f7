package api_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestModelsResolutionAndPinning(t *testing.T) {
	eachDialect(t, func(e *env) {
		var list struct {
			Items []struct {
				ID        string `json:"id"`
				Scope     string `json:"scope"`
				IsDefault bool   `json:"is_default"`
			} `json:"items"`
		}
		require.Equal(t, http.StatusOK, e.do(e.readA, "GET", "/models", nil, &list))
		assert.Empty(t, list.Items)

		var global, own, inactive struct{ ID string }
		require.Equal(t, http.StatusCreated, e.do(e.tokenA, "POST", "/admin/models", map[string]any{
			"name": "Old", "provider": "openai", "provider_model": "gpt-old", "inactive": true,
		}, &inactive))
		require.Equal(t, http.StatusCreated, e.do(e.tokenA, "POST", "/admin/models", map[string]any{
			"name": "GPT", "provider": "openai", "provider_model": "gpt-x", "api_key_env": "OPENAI_API_KEY", "scope": "global",
			"bindings": []map[string]string{{"engine": "opencode", "engine_model_id": "openai/gpt-x"}},
		}, &global))
		app := e.createApp(e.tokenA)
		runs := "/admin/apps/" + app + "/coding-agent/runs"
		pinned := func(body map[string]any) (int, map[string]any) {
			var out map[string]any
			code := e.do(e.tokenA, "POST", runs, body, &out)
			return code, out
		}
		// No default anywhere: the first active chat model (the inactive one
		// is skipped).
		code, run := pinned(map[string]any{"prompt": "say a"})
		require.Equal(t, http.StatusCreated, code)
		assert.Equal(t, global.ID, run["resolved_model_id"])
		assert.Nil(t, run["requested_model_id"])

		require.Equal(t, http.StatusCreated, e.do(e.tokenA, "POST", "/admin/models", map[string]any{
			"name": "Mine", "provider": "anthropic", "provider_model": "claude-y",
		}, &own))

		var er apiError
		assert.Equal(t, http.StatusForbidden, e.do(e.readA, "POST", "/admin/models", map[string]any{"name": "x", "provider": "p", "provider_model": "m"}, &er))
		assert.Equal(t, http.StatusBadRequest, e.do(e.tokenA, "POST", "/admin/models", map[string]any{"name": "x", "provider": "p", "provider_model": "m", "api_key_env": "KEY=secret"}, &er))
		assert.Equal(t, "api_key_env", er.Detail.Field)

		require.Equal(t, http.StatusOK, e.do(e.readA, "GET", "/models", nil, &list))
		require.Len(t, list.Items, 2, "active models of the tenant plus global ones")
		require.Equal(t, http.StatusOK, e.do(e.tokenB, "GET", "/models", nil, &list))
		require.Len(t, list.Items, 1, "another tenant sees only the global model")
		assert.Equal(t, global.ID, list.Items[0].ID)

		// The tenant's default wins; a run stays pinned when it changes.
		require.Equal(t, http.StatusOK, e.do(e.tokenA, "PUT", "/admin/models/default", map[string]string{"model_id": own.ID}, nil))
		code, run = pinned(map[string]any{"prompt": "say b"})
		require.Equal(t, http.StatusCreated, code)
		assert.Equal(t, own.ID, run["resolved_model_id"])
		require.Equal(t, http.StatusOK, e.do(e.tokenA, "PUT", "/admin/models/default", map[string]string{"model_id": global.ID}, nil))
		var again map[string]any
		require.Equal(t, http.StatusOK, e.do(e.tokenA, "GET", runs+"/"+run["id"].(string), nil, &again))
		assert.Equal(t, own.ID, again["resolved_model_id"], "pinned at creation")

		// Explicit ids: visible and active, or CODING_AGENT_MODEL_UNAVAILABLE.
		code, run = pinned(map[string]any{"prompt": "say c", "model_id": own.ID})
		require.Equal(t, http.StatusCreated, code)
		assert.Equal(t, own.ID, run["requested_model_id"])
		assert.Equal(t, own.ID, run["resolved_model_id"])
		for _, bad := range []string{inactive.ID, "mdl_nope"} {
			assert.Equal(t, http.StatusBadRequest, e.do(e.tokenA, "POST", runs, map[string]any{"prompt": "x", "model_id": bad}, &er))
			assert.Equal(t, "CODING_AGENT_MODEL_UNAVAILABLE", er.Detail.Code)
			assert.Equal(t, "model_id", er.Detail.Field)
		}
		appB := e.createApp(e.tokenB)
		assert.Equal(t, http.StatusBadRequest, e.do(e.tokenB, "POST", "/admin/apps/"+appB+"/coding-agent/runs", map[string]any{"prompt": "x", "model_id": own.ID}, &er),
			"another tenant's model is unavailable")
		assert.Equal(t, "CODING_AGENT_MODEL_UNAVAILABLE", er.Detail.Code)
		assert.Equal(t, http.StatusBadRequest, e.do(e.tokenA, "PUT", "/admin/models/default", map[string]string{"model_id": own.ID, "scope": "global"}, &er))
	})
}
