package store

import (
	"context"
	"errors"
	"net/url"
	"strconv"
	"time"

	"github.com/agenthost/agenthost/core"
	"github.com/lib/pq"
)

// Notices are what a host hears from the others through the database.
// Every callback must return quickly (it runs on the listener's goroutine).
type Notices struct {
	// Self is this host's lease key: its own event notes are dropped
	// unread.
	Self string
	// Event: another host committed run runID's events up to seq; events
	// are those of the commit, in order, when the notification carried
	// them (nil otherwise: read the log).
	Event func(runID string, seq int64, events []core.Envelope)
	// Command: a new command for the host with this lease key.
	Command func(owner string)
	// Answer: command id was answered.
	Answer func(id int64)
	// Resync: notifications may have been missed (the listening
	// connection was lost and is back): every waiter should read the
	// truth from the tables again.
	Resync func()
}

// ListenerApplicationName is the application_name of the connection a host
// listens on (pg_stat_activity shows it so).
const ListenerApplicationName = "agenthost-listener"

// withParam sets a query parameter of a postgres:// URL.
func withParam(connStr, key, value string) (string, error) {
	u, err := url.Parse(connStr)
	if err != nil {
		return "", err
	}
	q := u.Query()
	q.Set(key, value)
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// Listen delivers PostgreSQL notifications to n until ctx ends. It keeps
// one connection of its own, re-established (with a Resync) when it
// drops. It returns at once on SQLite, which has one host and nobody to
// hear from.
func (s *Store) Listen(ctx context.Context, n Notices) error {
	if s.dialect != Postgres {
		return nil
	}
	connStr, err := withParam(s.connStr, "application_name", ListenerApplicationName)
	if err != nil {
		return err
	}
	lost := make(chan struct{}, 1)
	l := pq.NewListener(connStr, 50*time.Millisecond, 2*time.Second, func(ev pq.ListenerEventType, _ error) {
		if ev == pq.ListenerEventReconnected || ev == pq.ListenerEventConnectionAttemptFailed {
			select {
			case lost <- struct{}{}:
			default:
			}
		}
	})
	for _, ch := range []string{EventsChannel, CommandsChannel, AnswersChannel} {
		if err := l.Listen(ch); err != nil && !errors.Is(err, pq.ErrChannelAlreadyOpen) {
			l.Close()
			return err
		}
	}
	go func() {
		defer l.Close()
		ping := time.NewTicker(5 * time.Second)
		defer ping.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-lost:
				if n.Resync != nil {
					n.Resync()
				}
			case <-ping.C:
				// A connection that died quietly is only noticed when
				// used; the reconnect then resyncs.
				go func() { _ = l.Ping() }()
			case msg, ok := <-l.Notify:
				if !ok {
					return
				}
				if msg == nil {
					// pq sends nil after re-establishing the connection.
					if n.Resync != nil {
						n.Resync()
					}
					continue
				}
				dispatch(msg, n)
			}
		}
	}()
	return nil
}

func dispatch(msg *pq.Notification, n Notices) {
	switch msg.Channel {
	case EventsChannel:
		if _, run, seq, events, ok := parseEventNote(msg.Extra, n.Self); ok && n.Event != nil {
			n.Event(run, seq, events)
		}
	case CommandsChannel:
		if n.Command != nil {
			n.Command(msg.Extra)
		}
	case AnswersChannel:
		if v, err := strconv.ParseInt(msg.Extra, 10, 64); err == nil && n.Answer != nil {
			n.Answer(v)
		}
	}
}
