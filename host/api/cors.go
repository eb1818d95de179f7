package api

import (
	"net/http"
	"slices"
	"time"

	"github.com/agenthost/agenthost/core"
	"github.com/gin-contrib/cors"
	"github.com/gin-gonic/gin"
)

// corsMiddleware lets pages on the operator's allowed origins call the API
// from a browser: it answers preflights and adds the CORS headers. Requests
// carry bearer tokens, not cookies, so credentials are not allowed. A
// cross-origin request from any other origin gets 403 with the error
// envelope (same-origin requests, whose Origin is the host itself, pass).
func corsMiddleware(origins []string) gin.HandlerFunc {
	headers := cors.New(cors.Config{
		AllowOrigins: origins,
		AllowMethods: []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete},
		AllowHeaders: []string{"Authorization", "Content-Type", "Idempotency-Key", "Last-Event-ID", "X-Request-ID"},
		ExposeHeaders: []string{
			"X-Request-ID", "X-Agenthost-Run-Owner", "Retry-After", "Content-Disposition", "Location",
		},
		MaxAge: 10 * time.Minute,
	})
	return func(c *gin.Context) {
		origin := c.GetHeader("Origin")
		host := c.Request.Host
		if origin != "" && origin != "http://"+host && origin != "https://"+host && !slices.Contains(origins, origin) {
			_ = c.Error(core.Errf(CodeForbidden, "", "origin %s may not call this API from a browser (the operator allows: cors_origins)", origin))
			c.Abort()
			return
		}
		headers(c)
	}
}
