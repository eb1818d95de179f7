package testenv

import (
	"io"
	"net"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// CutProxy forwards TCP connections to a target and can cut every open
// one at once, as a network failure would, while it keeps accepting new
// ones: for tests of clients that must reconnect and resume.
type CutProxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	conns map[net.Conn]struct{}
}

// NewCutProxy listens on a free loopback port and forwards to target
// (host:port) until the test ends.
func NewCutProxy(t testing.TB, target string) *CutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &CutProxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	go p.serve()
	t.Cleanup(func() {
		ln.Close()
		p.Cut()
	})
	return p
}

// Addr is the proxy's host:port.
func (p *CutProxy) Addr() string { return p.ln.Addr().String() }

// Cut closes every connection open through the proxy (both of its sides)
// and reports how many sockets it closed.
func (p *CutProxy) Cut() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for c := range p.conns {
		c.Close()
		delete(p.conns, c)
		n++
	}
	return n
}

func (p *CutProxy) track(cs ...net.Conn) {
	p.mu.Lock()
	for _, c := range cs {
		p.conns[c] = struct{}{}
	}
	p.mu.Unlock()
}

func (p *CutProxy) serve() {
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		out, err := net.Dial("tcp", p.target)
		if err != nil {
			in.Close()
			continue
		}
		p.track(in, out)
		go p.pipe(in, out)
		go p.pipe(out, in)
	}
}

// pipe copies until either side ends, then closes and forgets both.
func (p *CutProxy) pipe(dst, src net.Conn) {
	_, _ = io.Copy(dst, src)
	dst.Close()
	src.Close()
	p.mu.Lock()
	delete(p.conns, dst)
	delete(p.conns, src)
	p.mu.Unlock()
}
