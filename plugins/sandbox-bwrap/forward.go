//go:build linux

package bwrap

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/hashicorp/go-hclog"
	"golang.org/x/sys/unix"
)

// dialTimeout bounds one connection attempt into a sandbox: the far end is
// a loopback interface, so anything slower means nothing listens.
const dialTimeout = 5 * time.Second

// forwarder serves the loopback policy's exposed ports: for each, a
// listener on the plugin's 127.0.0.1 whose connections are dialled, inside
// the network namespace of each running command of the sandbox in turn, to
// 127.0.0.1:<port>. The sandbox itself still reaches nothing outside.
type forwarder struct {
	log    hclog.Logger
	boxDir string

	mu     sync.Mutex
	ports  map[int]net.Listener
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

func newForwarder(log hclog.Logger, boxDir string) *forwarder {
	return &forwarder{log: log, boxDir: boxDir, ports: map[int]net.Listener{}, conns: map[net.Conn]struct{}{}}
}

// expose returns the local address forwarding to port, starting it once.
func (f *forwarder) expose(port int) (string, error) {
	if os.Geteuid() != 0 {
		return "", plugin.Errorf(plugin.CodeUnavailable, "port", "network policy loopback forwards ports by entering the sandbox's network namespace, which needs the plugin to run as root")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return "", plugin.Errorf(plugin.CodeNotFound, "sandbox_id", "the sandbox was stopped")
	}
	if l, ok := f.ports[port]; ok {
		return l.Addr().String(), nil
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("expose port %d: %w", port, err)
	}
	f.ports[port] = l
	f.wg.Add(1)
	go f.serve(l, port)
	return l.Addr().String(), nil
}

func (f *forwarder) serve(l net.Listener, port int) {
	defer f.wg.Done()
	for {
		c, err := l.Accept()
		if err != nil {
			return // closed by Stop
		}
		if !f.track(c) {
			_ = c.Close()
			return
		}
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			defer f.untrack(c)
			f.relay(c, port)
		}()
	}
}

// track records an open connection so close can end it; false once closed.
func (f *forwarder) track(c net.Conn) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return false
	}
	f.conns[c] = struct{}{}
	return true
}

func (f *forwarder) untrack(c net.Conn) {
	f.mu.Lock()
	delete(f.conns, c)
	f.mu.Unlock()
}

// relay connects c to the first running command of the sandbox that
// accepts on port, and copies both ways until either side closes.
func (f *forwarder) relay(c net.Conn, port int) {
	defer c.Close()
	var in net.Conn
	var errs []error
	for _, pid := range f.running() {
		conn, err := dialIn(pid, port)
		if err == nil {
			in = conn
			break
		}
		errs = append(errs, err)
	}
	if in == nil {
		f.log.Debug("nothing in the sandbox accepts the port", "port", port, "errors", errors.Join(errs...))
		return
	}
	defer in.Close()
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		if tc, ok := dst.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		done <- struct{}{}
	}
	go pipe(in, c)
	go pipe(c, in)
	<-done
	<-done
}

// running lists the pid-namespace inits of the sandbox's running commands:
// the children of the bwrap processes recorded in execs/.
func (f *forwarder) running() []int {
	entries, _ := os.ReadDir(filepath.Join(f.boxDir, execsDir))
	var out []int
	for _, e := range entries {
		pid, ok := recordedPid(filepath.Join(f.boxDir, execsDir, e.Name()))
		if !ok {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
		if err != nil {
			continue
		}
		for _, s := range strings.Fields(string(b)) {
			if child, err := strconv.Atoi(s); err == nil {
				out = append(out, child)
			}
		}
	}
	return out
}

// dialIn opens a TCP connection to 127.0.0.1:port inside the network
// namespace of pid. The socket is made on a thread moved into that
// namespace; the thread is never unlocked, so Go ends it with the goroutine
// instead of reusing a thread in the wrong namespace.
func dialIn(pid, port int) (net.Conn, error) {
	type result struct {
		c   net.Conn
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		ns, err := os.Open(fmt.Sprintf("/proc/%d/ns/net", pid))
		if err != nil {
			ch <- result{err: err}
			return
		}
		defer ns.Close()
		if err := unix.Setns(int(ns.Fd()), unix.CLONE_NEWNET); err != nil {
			ch <- result{err: fmt.Errorf("enter network namespace of %d: %w", pid, err)}
			return
		}
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), dialTimeout)
		ch <- result{c, err}
	}()
	r := <-ch
	return r.c, r.err
}

// close stops every forwarded port, ends the connections in flight and
// waits for the goroutines serving them.
func (f *forwarder) close() {
	f.mu.Lock()
	f.closed = true
	for _, l := range f.ports {
		_ = l.Close()
	}
	for c := range f.conns {
		// Closing the outside end unblocks both copies of its relay.
		_ = c.Close()
	}
	f.mu.Unlock()
	f.wg.Wait()
}
