package store

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStreamTickets: a ticket opens exactly one run's stream, with the read
// scope alone, until it expires; extending keeps it for reconnects; a
// revoked token takes its tickets with it.
func TestStreamTickets(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		require.NoError(t, s.EnsureTenant(ctx, "t1", "T1"))
		user, err := s.EnsureUser(ctx, "t1", "u1", "u1@example.org")
		require.NoError(t, err)
		tok, err := s.CreateToken(ctx, "t1", user, "ci", "ah_secret", []string{"apps.read", "apps.write"})
		require.NoError(t, err)
		now := time.Now()
		require.NoError(t, s.CreateStreamTicket(ctx, "st_one", StreamTicket{
			TokenID: tok, TenantID: "t1", AppID: "app1", RunID: "run1", ExpiresAt: now.Add(time.Minute),
		}))

		p, err := s.RedeemStreamTicket(ctx, "st_one", "app1", "run1", "apps.read", now)
		require.NoError(t, err)
		assert.Equal(t, Principal{TokenID: tok, TenantID: "t1", UserID: user, Scopes: []string{"apps.read"}}, p, "the stream's scope alone, whatever the token holds")

		for name, try := range map[string]func() error{
			"another run": func() error {
				_, err := s.RedeemStreamTicket(ctx, "st_one", "app1", "run2", "apps.read", now)
				return err
			},
			"another app": func() error {
				_, err := s.RedeemStreamTicket(ctx, "st_one", "app2", "run1", "apps.read", now)
				return err
			},
			"unknown": func() error {
				_, err := s.RedeemStreamTicket(ctx, "st_two", "app1", "run1", "apps.read", now)
				return err
			},
			"a scope the token lacks": func() error {
				_, err := s.RedeemStreamTicket(ctx, "st_one", "app1", "run1", "admin", now)
				return err
			},
			"after expiry": func() error {
				_, err := s.RedeemStreamTicket(ctx, "st_one", "app1", "run1", "apps.read", now.Add(2*time.Minute))
				return err
			},
		} {
			assert.ErrorIs(t, try(), ErrNotFound, name)
		}

		// A connection that ends keeps the ticket for its reconnect; an
		// extension never shortens it.
		require.NoError(t, s.ExtendStreamTicket(ctx, "st_one", now.Add(3*time.Minute), time.Hour))
		require.NoError(t, s.ExtendStreamTicket(ctx, "st_one", now.Add(2*time.Minute), time.Hour))
		_, err = s.RedeemStreamTicket(ctx, "st_one", "app1", "run1", "apps.read", now.Add(150*time.Second))
		require.NoError(t, err)
		_, err = s.RedeemStreamTicket(ctx, "st_one", "app1", "run1", "apps.read", now.Add(4*time.Minute))
		assert.ErrorIs(t, err, ErrNotFound)

		// Past its maximum age a ticket is extended no more, however often
		// it reconnects.
		require.NoError(t, s.ExtendStreamTicket(ctx, "st_one", now.Add(2*time.Hour), time.Hour))
		_, err = s.RedeemStreamTicket(ctx, "st_one", "app1", "run1", "apps.read", now.Add(90*time.Minute))
		assert.ErrorIs(t, err, ErrNotFound, "minted over an hour before: not extended")
		require.NoError(t, s.ExtendStreamTicket(ctx, "st_one", now.Add(50*time.Minute), time.Hour))
		_, err = s.RedeemStreamTicket(ctx, "st_one", "app1", "run1", "apps.read", now.Add(45*time.Minute))
		require.NoError(t, err, "within its maximum age it is")

		_, err = s.w.ExecContext(ctx, s.rebind(`UPDATE api_tokens SET revoked_at = ? WHERE id = ?`), now.UnixMilli(), tok)
		require.NoError(t, err)
		_, err = s.RedeemStreamTicket(ctx, "st_one", "app1", "run1", "apps.read", now)
		assert.ErrorIs(t, err, ErrNotFound, "a revoked token's tickets die with it")
	})
}
