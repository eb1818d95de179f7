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

	mu        sync.Mutex
	ports     map[int]net.Listener
	listeners map[net.Listener]struct{}
	conns     map[net.Conn]struct{}
	closed    bool
	wg        sync.WaitGroup
}

func newForwarder(log hclog.Logger, boxDir string) *forwarder {
	return &forwarder{log: log, boxDir: boxDir, ports: map[int]net.Listener{},
		listeners: map[net.Listener]struct{}{}, conns: map[net.Conn]struct{}{}}
}

// expose returns the local address forwarding to port, starting it once.
func (f *forwarder) expose(port int) (string, error) {
	if err := needRoot(); err != nil {
		return "", err
	}
	f.mu.Lock()
	if l, ok := f.ports[port]; ok {
		f.mu.Unlock()
		return l.Addr().String(), nil
	}
	f.mu.Unlock()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("expose port %d: %w", port, err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if l2, ok := f.ports[port]; ok {
		_ = l.Close() // exposed meanwhile
		return l2.Addr().String(), nil
	}
	if err := f.serveLocked(l, func() (net.Conn, error) { return f.dialAny(port) }); err != nil {
		return "", err
	}
	f.ports[port] = l
	return l.Addr().String(), nil
}

// needRoot: entering a sandbox's network namespace takes root.
func needRoot() error {
	if os.Geteuid() != 0 {
		return plugin.Errorf(plugin.CodeUnavailable, "port", "network policy loopback forwards ports by entering the sandbox's network namespace, which needs the plugin to run as root")
	}
	return nil
}

// relayFrom serves l until it or the forwarder closes: each connection is
// relayed to what dial opens. The caller made l (in whichever network
// namespace) and may close it earlier.
func (f *forwarder) relayFrom(l net.Listener, dial func() (net.Conn, error)) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.serveLocked(l, dial)
}

func (f *forwarder) serveLocked(l net.Listener, dial func() (net.Conn, error)) error {
	if f.closed {
		_ = l.Close()
		return plugin.Errorf(plugin.CodeNotFound, "sandbox_id", "the sandbox was stopped")
	}
	f.listeners[l] = struct{}{}
	f.wg.Add(1)
	go f.serve(l, dial)
	return nil
}

func (f *forwarder) serve(l net.Listener, dial func() (net.Conn, error)) {
	defer f.wg.Done()
	defer func() {
		f.mu.Lock()
		delete(f.listeners, l)
		f.mu.Unlock()
	}()
	for {
		c, err := l.Accept()
		if err != nil {
			return // closed by Stop or by the service's end
		}
		if !f.track(c) {
			_ = c.Close()
			return
		}
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			defer f.untrack(c)
			f.relay(c, dial)
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

// dialAny connects to the first running command of the sandbox that
// accepts on port.
func (f *forwarder) dialAny(port int) (net.Conn, error) {
	var errs []error
	for _, pid := range f.running() {
		conn, err := f.dialIn(pid, port)
		if err == nil {
			return conn, nil
		}
		errs = append(errs, err)
	}
	return nil, fmt.Errorf("nothing in the sandbox accepts port %d: %w", port, errors.Join(errs...))
}

// relay connects c to what dial opens and copies both ways until either
// side closes.
func (f *forwarder) relay(c net.Conn, dial func() (net.Conn, error)) {
	defer c.Close()
	in, err := dial()
	if err != nil {
		f.log.Debug("relay: the far end is not reachable", "error", err)
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
		r, ok := readRecord(filepath.Join(f.boxDir, execsDir, e.Name()))
		if !ok || !r.running() {
			continue
		}
		pid := r.pid
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
// namespace of pid.
func (f *forwarder) dialIn(pid, port int) (net.Conn, error) {
	var c net.Conn
	err := f.inNamespace(pid, func() (err error) {
		c, err = net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), dialTimeout)
		return err
	})
	return c, err
}

// listenIn opens a TCP listener on addr inside the network namespace of
// pid: a socket stays in the namespace it was made in, wherever it is
// used afterwards.
func (f *forwarder) listenIn(pid int, addr string) (net.Listener, error) {
	var l net.Listener
	err := f.inNamespace(pid, func() (err error) {
		l, err = net.Listen("tcp", addr)
		return err
	})
	return l, err
}

// inNamespace runs fn on a thread moved into the network namespace of pid
// and back.
//
// The thread must go back rather than end: Go ends a thread whose goroutine
// exits locked to it, and the kernel sends a command's parent-death signal
// (SIGKILL, see dirfs.LocalExec) when the *thread* that started it ends,
// not the process. Any thread of the plugin may have started a running
// command's bwrap, so ending one after each dial killed commands at random.
func (f *forwarder) inNamespace(pid int, fn func() error) error {
	ch := make(chan error, 1)
	go func() {
		back, err := runInNamespace(pid, fn)
		ch <- err
		if !back {
			f.log.Error("a thread could not return to the plugin's network namespace; it is parked for good", "pid", pid)
			// The thread is stuck in the sandbox's namespace: it may run
			// no other goroutine (their sockets would open in there) and
			// must not end (see above), so it stays with this goroutine,
			// which never ends. Only a failing setns into the plugin's own
			// namespace, which a root plugin is always allowed, gets here.
			select {}
		}
	}()
	return <-ch
}

// runInNamespace does inNamespace's work on the calling goroutine's
// thread, which it locks. back reports whether the thread is in the
// plugin's network namespace again and unlocked; if not, it stays locked.
func runInNamespace(pid int, fn func() error) (back bool, err error) {
	runtime.LockOSThread()
	// Where this thread is now is the plugin's namespace: no unlocked
	// thread is ever left anywhere else.
	home, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		runtime.UnlockOSThread()
		return true, fmt.Errorf("open the plugin's network namespace: %w", err)
	}
	defer home.Close()
	ns, err := os.Open(fmt.Sprintf("/proc/%d/ns/net", pid))
	if err != nil {
		runtime.UnlockOSThread()
		return true, err
	}
	defer ns.Close()
	if err := unix.Setns(int(ns.Fd()), unix.CLONE_NEWNET); err != nil {
		// Still where it was.
		runtime.UnlockOSThread()
		return true, fmt.Errorf("enter network namespace of %d: %w", pid, err)
	}
	err = fn()
	if rerr := unix.Setns(int(home.Fd()), unix.CLONE_NEWNET); rerr != nil {
		return false, err
	}
	runtime.UnlockOSThread()
	return true, err
}

// close stops every forwarded port, ends the connections in flight and
// waits for the goroutines serving them.
func (f *forwarder) close() {
	f.mu.Lock()
	f.closed = true
	for l := range f.listeners {
		_ = l.Close()
	}
	for c := range f.conns {
		// Closing the outside end unblocks both copies of its relay.
		_ = c.Close()
	}
	f.mu.Unlock()
	f.wg.Wait()
}
