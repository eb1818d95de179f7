package api

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"net/http"
	"net/url"
	"time"

	"github.com/agenthost/agenthost/core"
	"github.com/agenthost/agenthost/host/store"
	"github.com/gin-gonic/gin"
)

// Stream tickets let a browser follow a run with its own EventSource, which
// cannot send an Authorization header: the page mints a ticket with its
// token (POST …/runs/{run_id}/stream-ticket) and opens
// …/runs/{run_id}/stream?ticket=…. A ticket opens that one run's stream
// with the read scope alone. It must be used within streamTicketTTL; after
// each connection made with it ends it stays usable for streamTicketGrace,
// so that EventSource's automatic reconnect (with Last-Event-ID) gets back
// in, and then it dies. A URL that leaks into a proxy's log is therefore
// worth nothing a minute after its stream ended. However often it
// reconnects, a ticket is not extended past streamTicketMaxAge after it
// was minted; a page that follows a run for longer mints a new one.
const (
	streamTicketTTL    = time.Minute
	streamTicketGrace  = time.Minute
	streamTicketMaxAge = 12 * time.Hour
	// streamTicketPrefix marks tickets, as TokenPrefix marks tokens.
	streamTicketPrefix = "st_"
)

// streamTicketOut is the answer to a ticket request.
type streamTicketOut struct {
	Ticket    string    `json:"ticket"`
	ExpiresAt time.Time `json:"expires_at"`
	// StreamURL is the stream's path with the ticket, for EventSource.
	StreamURL string `json:"stream_url"`
}

// createStreamTicket mints a ticket for the stream of one run the caller
// may read.
func (s *Server) createStreamTicket(c *gin.Context) {
	r, ok := s.runScope(c)
	if !ok {
		return
	}
	var b [24]byte
	_, _ = rand.Read(b[:])
	secret := streamTicketPrefix + base64.RawURLEncoding.EncodeToString(b[:])
	p := principal(c)
	expires := time.Now().Add(streamTicketTTL).Truncate(time.Millisecond)
	if err := s.deps.Store.CreateStreamTicket(c.Request.Context(), secret, store.StreamTicket{
		TokenID: p.TokenID, TenantID: p.TenantID, AppID: r.AppID, RunID: r.ID, ExpiresAt: expires,
	}); err != nil {
		_ = c.Error(err)
		return
	}
	c.JSON(http.StatusCreated, streamTicketOut{
		Ticket: secret, ExpiresAt: expires.UTC(),
		StreamURL: "/admin/apps/" + r.AppID + "/coding-agent/runs/" + r.ID + "/stream?ticket=" + url.QueryEscape(secret),
	})
}

// authenticateStream admits a stream request by its bearer token, as every
// route does, or by a stream ticket (?ticket=) for that run.
func (s *Server) authenticateStream(c *gin.Context) {
	ticket := c.Query("ticket")
	if ticket == "" || c.GetHeader("Authorization") != "" {
		s.authenticate(c)
		return
	}
	p, err := s.deps.Store.RedeemStreamTicket(c.Request.Context(), ticket, c.Param("app_id"), c.Param("run_id"), ScopeRead, time.Now())
	switch {
	case errors.Is(err, store.ErrNotFound):
		_ = c.Error(core.Errf(CodeUnauthenticated, "ticket", "the stream ticket is unknown, expired, or for another run: mint a new one with POST …/runs/{run_id}/stream-ticket"))
		c.Abort()
		return
	case err != nil:
		_ = c.Error(err)
		c.Abort()
		return
	}
	c.Set(principalKey, p)
	c.Next()
	if c.Writer.Status() != http.StatusOK {
		return
	}
	// The stream ended (the client left, the run finished, the host is
	// stopping): keep the ticket for the client's reconnect.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.Request.Context()), 5*time.Second)
	defer cancel()
	if err := s.deps.Store.ExtendStreamTicket(ctx, ticket, time.Now().Add(streamTicketGrace), streamTicketMaxAge); err != nil {
		s.log.Warn("stream ticket not extended; the client's reconnect will need a new one", "run_id", c.Param("run_id"), "error", err)
	}
}
