package api_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTokenDescribesItself: GET /admin/token answers the calling token's
// tenant, user and scopes whatever its scopes are, and 401 without a valid
// token.
func TestTokenDescribesItself(t *testing.T) {
	eachDialect(t, func(e *env) {
		type token struct {
			TenantID string   `json:"tenant_id"`
			UserID   string   `json:"user_id"`
			Scopes   []string `json:"scopes"`
		}
		for _, tc := range []struct {
			name, token string
			want        token
		}{
			{"operator", e.tokenA, token{"default", "usr_admin", []string{"admin", "apps.read", "apps.write", "platform.admin"}}},
			{"read only", e.readA, token{"default", "usr_admin", []string{"apps.read"}}},
			{"other tenant", e.tokenB, token{"other", "usr_b", []string{"admin"}}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				var got token
				require.Equal(t, http.StatusOK, e.do(tc.token, "GET", "/admin/token", nil, &got))
				assert.Equal(t, tc.want.TenantID, got.TenantID)
				assert.Equal(t, tc.want.UserID, got.UserID)
				assert.ElementsMatch(t, tc.want.Scopes, got.Scopes)
			})
		}
		for _, tok := range []string{"", "no-such-token"} {
			var out apiError
			require.Equal(t, http.StatusUnauthorized, e.do(tok, "GET", "/admin/token", nil, &out))
			assert.Equal(t, "UNAUTHENTICATED", out.Detail.Code)
		}
	})
}
