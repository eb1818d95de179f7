package api_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/agenthost/agenthost/host/config"
	"github.com/agenthost/agenthost/host/internal/testenv"
	"github.com/agenthost/agenthost/host/store"
	"github.com/agenthost/agenthost/plugins/engine-native/fakellm"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// listener records every request that reaches it: the address a malicious
// tenant admin would like the operator's key and other tenants' prompts
// sent to.
type listener struct {
	*httptest.Server
	mu   sync.Mutex
	seen []string
}

func newListener(t *testing.T) *listener {
	l := &listener{}
	l.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		l.mu.Lock()
		l.seen = append(l.seen, r.Header.Get("Authorization")+" "+string(body))
		l.mu.Unlock()
		http.Error(w, "no", http.StatusTeapot)
	}))
	t.Cleanup(l.Close)
	return l
}

func (l *listener) requests() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.seen...)
}

// TestTenantAdminCannotRedirectOperatorKey is the review's reproduction: a
// host holding the operator's OPENAI_API_KEY, a second tenant's admin token,
// and a listener. Global models and the global default need the operator's
// platform.admin scope; the key may only go where the operator bound it;
// and the first tenant's run with no model named reaches only the
// operator's endpoint — the listener never sees a request.
func TestTenantAdminCannotRedirectOperatorKey(t *testing.T) {
	operator := fakellm.New()
	defer operator.Close()
	for _, dialect := range []string{"sqlite", "postgres"} {
		t.Run(dialect, func(t *testing.T) {
			evil := newListener(t)
			t.Setenv("OPENAI_API_KEY", "sk-operator")
			t.Setenv("APPS_CODING_AGENT_NATIVE_ENABLED", "1")
			// The operator binds its key to its provider (a fake here).
			t.Setenv(config.KeyEndpointsEnv, "OPENAI_API_KEY="+operator.BaseURL())
			dir := testenv.PluginConfigDir(t, "local", "patch")
			require.NoError(t, os.WriteFile(filepath.Join(dir, "native.hcl"), []byte(fmt.Sprintf(`plugin "native" {
  kind    = "engine"
  command = %q
  env     = ["OPENAI_API_KEY"]
}
`, pluginBinary(t, "agenthost-engine-native"))), 0o644))
			e := startEnvIn(t, dialect, dir)

			// The operator's model, made with the bootstrap token (the
			// operator's, with platform.admin), is the global default.
			model := "gpt-operator-" + dialect
			operator.Script(model, fakellm.Turn{Text: []string{"done"}})
			var opModel struct{ ID string }
			require.Equal(t, http.StatusCreated, e.do(e.tokenA, "POST", "/admin/models", map[string]any{
				"name": model, "provider": "openai", "provider_model": model, "base_url": operator.BaseURL(),
				"api_key_env": "OPENAI_API_KEY", "scope": "global"}, &opModel))
			require.Equal(t, http.StatusOK, e.do(e.tokenA, "PUT", "/admin/models/default", map[string]string{"model_id": opModel.ID, "scope": "global"}, nil))

			// Tenant "other"'s admin (token-b: admin, not platform.admin).
			var er apiError
			evilModel := map[string]any{"name": "evil", "provider": "openai", "provider_model": "gpt-4o",
				"base_url": evil.URL + "/v1", "api_key_env": "OPENAI_API_KEY", "scope": "global"}
			assert.Equal(t, http.StatusForbidden, e.do(e.tokenB, "POST", "/admin/models", evilModel, &er))
			assert.Equal(t, "FORBIDDEN", er.Detail.Code)
			assert.Contains(t, er.Detail.Message, "platform.admin")

			evilModel["scope"] = "tenant"
			assert.Equal(t, http.StatusBadRequest, e.do(e.tokenB, "POST", "/admin/models", evilModel, &er))
			assert.Equal(t, "MODEL_ENDPOINT_NOT_ALLOWED", er.Detail.Code)
			assert.Equal(t, "base_url", er.Detail.Field)

			// Not even the operator may send the key elsewhere.
			evilModel["scope"] = "global"
			assert.Equal(t, http.StatusBadRequest, e.do(e.tokenA, "POST", "/admin/models", evilModel, &er))
			assert.Equal(t, "MODEL_ENDPOINT_NOT_ALLOWED", er.Detail.Code)

			// A key variable the operator never bound is refused too (it
			// could be any of the host's secrets).
			assert.Equal(t, http.StatusBadRequest, e.do(e.tokenB, "POST", "/admin/models", map[string]any{"name": "e2", "provider": "openai",
				"provider_model": "m", "base_url": operator.BaseURL(), "api_key_env": "AGENTHOST_BOOTSTRAP_TOKEN"}, &er))
			assert.Equal(t, "MODEL_ENDPOINT_NOT_ALLOWED", er.Detail.Code)
			assert.Equal(t, "api_key_env", er.Detail.Field)

			// Keyless, a tenant may still not aim the host at any address.
			assert.Equal(t, http.StatusBadRequest, e.do(e.tokenB, "POST", "/admin/models", map[string]any{"name": "e3", "provider": "openai",
				"provider_model": "m", "base_url": evil.URL + "/v1"}, &er))
			assert.Equal(t, "MODEL_ENDPOINT_NOT_ALLOWED", er.Detail.Code)

			// The global default is the operator's, even for a global model.
			assert.Equal(t, http.StatusForbidden, e.do(e.tokenB, "PUT", "/admin/models/default", map[string]string{"model_id": opModel.ID, "scope": "global"}, &er))
			assert.Equal(t, "FORBIDDEN", er.Detail.Code)

			// Where the operator allowed the key, a tenant may use it.
			var own struct {
				ID           string `json:"id"`
				EndpointHost string `json:"endpoint_host"`
			}
			require.Equal(t, http.StatusCreated, e.do(e.tokenB, "POST", "/admin/models", map[string]any{"name": "mine", "provider": "openai",
				"provider_model": model, "base_url": operator.BaseURL(), "api_key_env": "OPENAI_API_KEY"}, &own))
			assert.Equal(t, hostOf(t, operator.URL), own.EndpointHost)

			// Tenants see where their prompts go.
			var list struct {
				Items []struct {
					ID           string `json:"id"`
					EndpointHost string `json:"endpoint_host"`
				} `json:"items"`
			}
			require.Equal(t, http.StatusOK, e.do(e.readA, "GET", "/models", nil, &list))
			require.Len(t, list.Items, 1)
			assert.Equal(t, hostOf(t, operator.URL), list.Items[0].EndpointHost)

			// The first tenant's run with no model named goes to the
			// operator's model and nowhere else.
			app := e.createApp(e.tokenA)
			var run struct{ ID string }
			require.Equal(t, http.StatusCreated, e.do(e.tokenA, "POST", "/admin/apps/"+app+"/coding-agent/runs",
				map[string]any{"engine": "native", "prompt": "secret plans of tenant default"}, &run))
			done := e.waitRun(app, run.ID)
			assert.Equal(t, "completed", done.Status, "%+v", done)
			require.NotEmpty(t, operator.RequestsFor(model))
			for _, r := range operator.RequestsFor(model) {
				assert.Equal(t, "sk-operator", r.Auth)
			}

			// A model stored before this policy existed (straight into the
			// database, as an old host let a tenant admin do) is refused
			// when a run pins it, before anything is sent.
			ctx := context.Background()
			legacy := store.Model{ID: "mdl_legacy_" + dialect, Name: "legacy", Kind: "chat", Provider: "openai", ProviderModel: "gpt-4o",
				BaseURL: evil.URL + "/v1", APIKeyEnv: "OPENAI_API_KEY", Active: true}
			require.NoError(t, e.h.Store.CreateModel(ctx, legacy, nil))
			require.NoError(t, e.h.Store.SetDefaultModel(ctx, "", legacy.ID))
			assert.Equal(t, http.StatusBadRequest, e.do(e.tokenA, "POST", "/admin/apps/"+app+"/coding-agent/runs",
				map[string]any{"engine": "native", "prompt": "more secrets"}, &er))
			assert.Equal(t, "MODEL_ENDPOINT_NOT_ALLOWED", er.Detail.Code)

			assert.Empty(t, evil.requests(), "no request may reach the listener")
		})
	}
}

func hostOf(t *testing.T, raw string) string {
	t.Helper()
	req, err := http.NewRequest("GET", raw, nil)
	require.NoError(t, err)
	return req.URL.Host
}
