package api

import (
	"errors"
	"net/http"
	"strings"

	"github.com/agenthost/agenthost/core"
	"github.com/agenthost/agenthost/host/store"
	"github.com/gin-gonic/gin"
)

// Scopes a token can carry.
const (
	ScopeRead  = "apps.read"
	ScopeWrite = "apps.write"
	ScopeAdmin = "admin"
	// ScopePlatformAdmin is the operator's: global models and defaults.
	ScopePlatformAdmin = store.ScopePlatformAdmin
)

const principalKey = "principal"

// authenticate resolves the bearer token; no or bad token is 401.
func (s *Server) authenticate(c *gin.Context) {
	if p, ok := c.Request.Context().Value(forwardedKey{}).(store.Principal); ok {
		// Passed on by another host, which authenticated the caller.
		c.Set(principalKey, p)
		c.Next()
		return
	}
	h := c.GetHeader("Authorization")
	secret, ok := strings.CutPrefix(h, "Bearer ")
	if !ok || strings.TrimSpace(secret) == "" {
		_ = c.Error(core.Errf(CodeUnauthenticated, "", "send Authorization: Bearer <token>"))
		c.Abort()
		return
	}
	secret = strings.TrimSpace(secret)
	hash := store.HashToken(secret)
	p, ok := s.principals.get(hash)
	if !ok {
		var err error
		p, err = s.deps.Store.Authenticate(c.Request.Context(), secret)
		switch {
		case errors.Is(err, store.ErrNotFound):
			_ = c.Error(core.Errf(CodeUnauthenticated, "", "the token is unknown, expired or revoked"))
			c.Abort()
			return
		case err != nil:
			// The database failed, not the caller: not a 401.
			_ = c.Error(err)
			c.Abort()
			return
		}
		s.principals.put(hash, p)
	}
	c.Set(principalKey, p)
	c.Next()
}

// require refuses a request whose token lacks scope (403).
func require(scope string) gin.HandlerFunc {
	return func(c *gin.Context) {
		if !principal(c).Has(scope) {
			_ = c.Error(core.Errf(CodeForbidden, "", "this token lacks the %s scope", scope))
			c.Abort()
			return
		}
		c.Next()
	}
}

// tokenJSON is what GET /admin/token tells a client about its own token.
type tokenJSON struct {
	TenantID string   `json:"tenant_id"`
	UserID   string   `json:"user_id"`
	Scopes   []string `json:"scopes"`
}

// whoami answers GET /admin/token: the calling token's tenant, user and
// scopes, so a client (the console) can check a token at sign-in and show
// only what it may do. Any valid token may ask; it learns nothing it could
// not learn by trying.
func (s *Server) whoami(c *gin.Context) {
	p := principal(c)
	scopes := p.Scopes
	if scopes == nil {
		scopes = []string{}
	}
	c.JSON(http.StatusOK, tokenJSON{TenantID: p.TenantID, UserID: p.UserID, Scopes: scopes})
}

func principal(c *gin.Context) store.Principal {
	p, _ := c.Get(principalKey)
	pr, _ := p.(store.Principal)
	return pr
}
