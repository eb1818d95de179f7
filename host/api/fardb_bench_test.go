package api_test

import (
	"io"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host/config"
	"github.com/agenthost/agenthost/host/internal/testenv"
	"github.com/stretchr/testify/require"
)

// farDelay is the delay the far database's proxy adds each way. Go's
// timers here wake about a millisecond late at best, so the round trip
// the benchmark reports (rtt-µs) is what to quote, not this.
const farDelay = 500 * time.Microsecond

// BenchmarkMockTurnFarDatabase: BenchmarkMockTurn on PostgreSQL reached
// through a proxy that delays every packet each way, as a database across
// a network from the hosts that share it is. It reports the proxy's
// round trip (rtt-µs) and the round trips a turn makes (db-round-trips/
// turn: the host's writes to the database, each followed by a wait for
// the answer), the figure that decides a turn's time once the database is
// far; it does not depend on the machine's speed.
func BenchmarkMockTurnFarDatabase(b *testing.B) {
	stats := ownDatabase(b)
	u, err := url.Parse(stats.url)
	require.NoError(b, err)
	proxy := startDelayProxy(b, u.Host, farDelay)
	u.Host = proxy.addr
	configDir := testenv.PluginConfigDir(b, "mock", "local", "patch")
	e := startEnvIn(b, "sqlite", configDir, func(c *config.Host) { c.DatabaseURL = u.String() })
	app := e.createApp(e.tokenA)
	first := e.mockTurn(app, "", "say ok")
	require.Equal(b, "run.completed", first.terminal, first.payload)
	// Settle what the first turn left in flight (the sandbox's return to
	// the pool, the run's last writes) before counting.
	e.mockTurn(app, first.chatID, "say ok")
	lat := make([]time.Duration, 0, b.N)
	sent := proxy.requests.Load()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		turn := e.mockTurn(app, first.chatID, "say ok")
		lat = append(lat, time.Since(start))
		if turn.terminal != "run.completed" {
			b.Fatalf("turn %d: %s", i, turn.payload)
		}
	}
	b.StopTimer()
	reportPercentiles(b, lat, "")
	b.ReportMetric(float64(proxy.requests.Load()-sent)/float64(b.N), "db-round-trips/turn")
	b.ReportMetric(float64(proxy.rtt(b).Microseconds()), "rtt-µs")
}

// delayProxy forwards TCP connections to a server, delaying what passes
// each way, in order, and counting what the clients send.
type delayProxy struct {
	addr, target string
	delay        time.Duration
	// requests counts the reads from clients: a client that waits for an
	// answer after each write (lib/pq does) makes one per round trip.
	requests atomic.Int64
}

func startDelayProxy(tb testing.TB, target string, delay time.Duration) *delayProxy {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(tb, err)
	p := &delayProxy{addr: l.Addr().String(), target: target, delay: delay}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	tb.Cleanup(func() {
		l.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, c, s)
			mu.Unlock()
			wg.Add(2)
			go func() { defer wg.Done(); p.pipe(s, c, &p.requests); s.Close() }()
			go func() { defer wg.Done(); p.pipe(c, s, nil); c.Close() }()
		}
	}()
	return p
}

// pipe copies src to dst, each read delivered delay after it arrived.
func (p *delayProxy) pipe(dst io.Writer, src io.Reader, count *atomic.Int64) {
	type chunk struct {
		b  []byte
		at time.Time
	}
	ch := make(chan chunk, 256)
	go func() {
		defer close(ch)
		for {
			buf := make([]byte, 32<<10)
			n, err := src.Read(buf)
			if n > 0 {
				if count != nil {
					count.Add(1)
				}
				ch <- chunk{buf[:n], time.Now().Add(p.delay)}
			}
			if err != nil {
				return
			}
		}
	}()
	for c := range ch {
		time.Sleep(time.Until(c.at))
		if _, err := dst.Write(c.b); err != nil {
			for range ch { // drain, so the reader can end
			}
			return
		}
	}
}

// rtt is the round trip through the proxy of the cheapest exchange
// PostgreSQL has, the best of five: an SSLRequest, which the server
// answers with one byte at once, before any login (so once per
// connection).
func (p *delayProxy) rtt(tb testing.TB) time.Duration {
	best := time.Duration(1 << 62)
	for i := 0; i < 5; i++ {
		c, err := net.Dial("tcp", p.addr)
		require.NoError(tb, err)
		start := time.Now()
		_, err = c.Write([]byte{0, 0, 0, 8, 4, 210, 22, 47})
		require.NoError(tb, err)
		var one [1]byte
		_, err = io.ReadFull(c, one[:])
		require.NoError(tb, err)
		best = min(best, time.Since(start))
		c.Close()
	}
	return best
}
