// Package cluster lets several hosts share one PostgreSQL database: each
// host process holds a lease it renews while it lives, owns the runs it
// executes through that lease, takes over the runs of hosts whose leases
// lapsed, and passes commands about a run (cancel, resume) to the run's
// owner through the database. On SQLite there is one host: it still holds
// a lease, and nothing else happens.
package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agenthost/agenthost/core"
	"github.com/agenthost/agenthost/host/store"
	"github.com/hashicorp/go-hclog"
)

// DefaultLeaseTTL is how long a host's lease lasts without renewal: a dead
// host's runs are taken over within about this plus one sweep.
const DefaultLeaseTTL = 5 * time.Second

// Options configure a Member.
type Options struct {
	// HostID names the host (AGENTHOST_HOST_ID); empty means the machine's
	// hostname and a random suffix.
	HostID string
	// LeaseTTL is the lease's length (DefaultLeaseTTL when 0). The lease is
	// renewed every fifth of it; lapsed leases are looked for as often.
	LeaseTTL time.Duration
	Logger   hclog.Logger
	// TakeOver settles runs this host just took over from a lost host:
	// each is owned by this host now, in the state the lost host left.
	TakeOver func(ctx context.Context, runs []*core.Run)
	// Execute carries out a command another host passed on for a run this
	// host owns, and returns the HTTP status and body to answer with.
	Execute func(ctx context.Context, cmd store.RunCommand) (int, []byte)
	// Events receives other hosts' commits of run events: the run, its
	// newest seq, and the events themselves when the notification carried
	// them (nil: read the log). Resync is news that some may have been
	// missed.
	Events func(runID string, seq int64, events []core.Envelope)
	Resync func()
	// Lost is called when this host finds its lease was taken: another
	// host declared it dead and owns its runs now; what it still runs must
	// stop without writing.
	Lost func()
}

// Member is this host's place among the hosts sharing its database.
type Member struct {
	st   *store.Store
	opts Options
	log  hclog.Logger
	id   string
	key  string

	cancel context.CancelFunc
	wg     sync.WaitGroup
	// sweeps serialises takeovers of the same lost owner on this host.
	sweeps sync.Mutex
	// sweeping is set while a sweep runs: Join's first, or one of
	// keepLease's in its goroutine.
	sweeping atomic.Bool

	mu sync.Mutex
	// answers are commands this host sent and waits on, by id.
	answers map[int64]chan struct{}
	// executing are commands for this host being carried out, by id.
	executing map[int64]bool
	// wakeCommands is signalled when a command for this host may be new.
	wakeCommands chan struct{}
}

// NewHostID is the default host id: the hostname and a random suffix.
func NewHostID() string {
	name, err := os.Hostname()
	if err != nil || name == "" {
		name = "host"
	}
	return sanitize(name) + "-" + randomHex(3)
}

// ValidHostID reports whether id may name a host: 1–64 letters, digits,
// '.', '_' or '-'.
func ValidHostID(id string) bool {
	return id != "" && len(id) <= 64 && sanitize(id) == id
}

func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-' {
			return r
		}
		return '-'
	}, s)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Join registers this host process and makes it the owner of the runs the
// store records from now on. A process of the same host id whose lease is
// still live is waited out for up to one lease (it may have just died);
// if it is still renewing after that, Join refuses: two live processes
// must not share a host id. Then it takes over what lost hosts left (this
// host's own earlier processes included), and keeps the lease, the sweep
// and the command queue going until Leave.
func Join(ctx context.Context, st *store.Store, opts Options) (*Member, error) {
	if opts.LeaseTTL <= 0 {
		opts.LeaseTTL = DefaultLeaseTTL
	}
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	if opts.HostID == "" {
		opts.HostID = NewHostID()
	}
	if !ValidHostID(opts.HostID) {
		return nil, fmt.Errorf("host id %q: use 1 to 64 letters, digits, '.', '_' or '-'", opts.HostID)
	}
	m := &Member{st: st, opts: opts, log: opts.Logger.Named("cluster"), id: opts.HostID,
		key: opts.HostID + "/" + randomHex(4), answers: map[int64]chan struct{}{}, executing: map[int64]bool{},
		wakeCommands: make(chan struct{}, 1)}
	if err := m.waitOutTwin(ctx); err != nil {
		return nil, err
	}
	if err := st.RegisterHost(ctx, m.key, m.id, opts.LeaseTTL); err != nil {
		return nil, fmt.Errorf("register host %s: %w", m.id, err)
	}
	st.SetOwner(m.key)
	runCtx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	if st.Dialect() != store.Postgres {
		// One host on SQLite: nobody to take over from or to talk to.
		m.wg.Add(1)
		go m.keepLease(runCtx)
		return m, nil
	}
	if err := st.Listen(runCtx, store.Notices{Self: m.key, Event: m.opts.Events, Command: m.commandNotice, Answer: m.answerNotice, Resync: m.resync}); err != nil {
		cancel()
		return nil, fmt.Errorf("listen for other hosts: %w", err)
	}
	m.awaitPeersNotes(ctx)
	// The first sweep settles what lost hosts left before Join returns,
	// with this host's lease renewed beside it: settling many runs (an
	// engine restarted and a sandbox made for each) can take longer than a
	// lease, and a lease that lapsed meanwhile would let another host take
	// over the runs this one is resuming. keepLease's own sweeps wait for
	// this one (sweeping).
	m.sweeping.Store(true)
	m.wg.Add(2)
	go m.keepLease(runCtx)
	go m.serveCommands(runCtx)
	m.sweep(ctx)
	m.sweeping.Store(false)
	return m, nil
}

// awaitPeersNotes returns once the other hosts notify this one of every
// commit of their runs' events, and wakes every waiter to read the tables
// again. A host notifies only while another host has a row in hosts, in
// the snapshot its statement began with (store.Store.notifyIfHeard), so
// the commits of statements that began before this host's row are waited
// out (store.Store.WaitOutOlderTransactions), for at most a lease: a
// transaction held open longer (an operator's idle session) is no reason
// to refuse to serve, and streams of those runs then catch up at the
// runs' next events.
func (m *Member) awaitPeersNotes(ctx context.Context) {
	if err := m.st.WaitOutOlderTransactions(ctx, m.opts.LeaseTTL); err != nil && ctx.Err() == nil {
		m.log.Warn("transactions older than this host's registration are still open; streams of other hosts' runs may wait for those runs' next events", "error", err)
	}
	m.resync()
}

// waitOutTwin waits while another process of this host id holds a live
// lease, for at most a lease and a bit.
func (m *Member) waitOutTwin(ctx context.Context) error {
	deadline := time.Now().Add(m.opts.LeaseTTL + m.opts.LeaseTTL/2)
	for {
		live, err := m.st.LiveHostLeases(ctx, m.id, time.Now())
		if err != nil {
			return fmt.Errorf("check host id %s: %w", m.id, err)
		}
		if len(live) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("host id %s is in use by a live host process (%s) that keeps renewing its lease; give this one another AGENTHOST_HOST_ID", m.id, strings.Join(live, ", "))
		}
		m.log.Warn("waiting for an earlier process of this host id to lose its lease", "host_id", m.id, "lease", live[0])
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(m.opts.LeaseTTL / 5):
		}
	}
}

// HostID is this host's id.
func (m *Member) HostID() string { return m.id }

// LeaseKey is this host process's lease key (the owner of its runs).
func (m *Member) LeaseKey() string { return m.key }

// LeaseTTL is the lease's length.
func (m *Member) LeaseTTL() time.Duration { return m.opts.LeaseTTL }

// Leave stops renewing and sweeping and deletes this host's row, so that
// the runs it leaves (paused ones) go to a live host at once. Call it
// after the host's runs are settled.
func (m *Member) Leave(ctx context.Context) {
	m.cancel()
	m.wg.Wait()
	if err := m.st.RemoveHost(ctx, m.key); err != nil {
		m.log.Warn("remove host row", "error", err)
	}
}

// keepLease renews the lease every fifth of it and sweeps for lapsed ones
// as often. A sweep runs beside the renewals, one at a time: settling what
// it took over (restarting engines, making sandboxes) can take longer than
// the lease, and a renewal that waited for it let this host's own lease
// lapse, so another host took over the runs it was resuming.
func (m *Member) keepLease(ctx context.Context) {
	defer m.wg.Done()
	tick := time.NewTicker(m.opts.LeaseTTL / 5)
	defer tick.Stop()
	// A host that could not renew its own lease for a while (the database
	// restarted, or was cut off) does not sweep until it has renewed for a
	// whole lease again: the other hosts were likely cut off the same way,
	// and their leases look lapsed only because they could not renew
	// either. They get that lease to renew before anyone takes their runs.
	var renewedSince time.Time
	failing := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		// A renewal that has not answered within the lease is no use (the
		// lease lapsed meanwhile); give up on it so the next tick retries
		// on a fresh connection instead of waiting on a wedged one.
		renewCtx, cancel := context.WithTimeout(ctx, m.opts.LeaseTTL)
		ok, err := m.st.RenewHost(renewCtx, m.key, m.opts.LeaseTTL)
		cancel()
		switch {
		case err != nil:
			if ctx.Err() == nil && !failing {
				m.log.Warn("cannot renew this host's lease; its runs' writes wait for the database", "error", err)
			}
			failing = true
			continue
		case !ok:
			m.log.Error("this host's lease was taken: another host declared it dead and took its runs over; runs still executing here stop without writing", "lease", m.key)
			if m.opts.Lost != nil {
				m.opts.Lost()
			}
			if err := m.st.RegisterHost(ctx, m.key, m.id, m.opts.LeaseTTL); err != nil && ctx.Err() == nil {
				m.log.Error("register host again", "error", err)
			} else if err == nil {
				// While its row was gone, the others sent this host no
				// notes of their runs' events.
				m.wg.Add(1)
				go func() {
					defer m.wg.Done()
					m.awaitPeersNotes(ctx)
				}()
			}
		}
		if failing {
			failing, renewedSince = false, time.Now()
			m.log.Info("renewed this host's lease again; other hosts get one lease to do the same before lost runs are taken over")
		}
		if m.st.Dialect() == store.Postgres && time.Since(renewedSince) >= m.opts.LeaseTTL && m.sweeping.CompareAndSwap(false, true) {
			m.wg.Add(1)
			go func() {
				defer m.wg.Done()
				defer m.sweeping.Store(false)
				m.sweep(ctx)
			}()
		}
	}
}

// forgetAfter is how long a lapsed host with no runs stays listed.
const forgetAfter = time.Minute

// sweep takes over the runs of every lost owner, and forgets lost hosts
// that left none.
func (m *Member) sweep(ctx context.Context) {
	if err := m.st.ForgetLapsedHosts(ctx, time.Now().Add(-forgetAfter)); err != nil && ctx.Err() == nil {
		m.log.Warn("forget lapsed hosts", "error", err)
	}
	owners, err := m.st.LostOwners(ctx, time.Now())
	if err != nil {
		if ctx.Err() == nil {
			m.log.Warn("look for lost hosts", "error", err)
		}
		return
	}
	for _, owner := range owners {
		if owner == m.key {
			continue
		}
		m.TakeOverNow(ctx, owner)
	}
}

// TakeOverNow claims the runs of lost, a lease key whose lease has lapsed
// (or "" for runs nobody owns), and settles them (Options.TakeOver). Runs
// another host claimed first are not touched.
func (m *Member) TakeOverNow(ctx context.Context, lost string) {
	m.sweeps.Lock()
	defer m.sweeps.Unlock()
	runs, err := m.st.ClaimRuns(ctx, lost, time.Now())
	if err != nil {
		if ctx.Err() == nil {
			m.log.Warn("take over runs", "from", lost, "error", err)
		}
		return
	}
	if len(runs) == 0 {
		return
	}
	m.log.Warn("took over the runs of a lost host", "from", lost, "runs", len(runs))
	if m.opts.TakeOver != nil {
		m.opts.TakeOver(ctx, runs)
	}
}

// Route says where a command about a run must be carried out: "" for this
// host (it owns the run, or took it over just now from a lost owner), or
// the lease key of the live host that owns it.
func (m *Member) Route(ctx context.Context, runID string) (string, error) {
	owner, live, err := m.st.RunOwner(ctx, runID, time.Now())
	if err != nil {
		return "", err
	}
	switch {
	case owner == m.key:
		return "", nil
	case live:
		return owner, nil
	}
	m.TakeOverNow(ctx, owner)
	return "", nil
}

// RouteChat says where a chat session's next run should be created: on
// the live host that ran the chat's newest run (it keeps the chat's warm
// sandbox), named by its lease key, with that run's id (via); or "" for
// this host — it ran it, nobody did, or that host is gone (the run then
// gets a fresh sandbox here).
func (m *Member) RouteChat(ctx context.Context, chatID string) (via, owner string, err error) {
	runID, owner, live, err := m.st.ChatOwner(ctx, chatID, time.Now())
	if err != nil || !live || owner == m.key {
		return "", "", err
	}
	return runID, owner, nil
}
