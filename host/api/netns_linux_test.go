//go:build linux

package api_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// netnsDial returns a dialer into the network namespace of pid when it is
// not this process's (a service on the bwrap sandbox listens on its own
// loopback), or nil. The test runs as root, as the bwrap plugin does.
func netnsDial(pid int) func(ctx context.Context, network, addr string) (net.Conn, error) {
	own, err1 := os.Readlink("/proc/self/ns/net")
	theirs, err2 := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", pid))
	if err1 != nil || err2 != nil || own == theirs {
		return nil
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		type result struct {
			c   net.Conn
			err error
		}
		ch := make(chan result, 1)
		go func() {
			// The thread goes back before it is unlocked: a thread that
			// ends may take processes it started with it (parent-death
			// signals), so it must not end in another namespace either.
			runtime.LockOSThread()
			home, err := os.Open("/proc/thread-self/ns/net")
			if err != nil {
				runtime.UnlockOSThread()
				ch <- result{nil, err}
				return
			}
			defer home.Close()
			ns, err := os.Open(fmt.Sprintf("/proc/%d/ns/net", pid))
			if err != nil {
				runtime.UnlockOSThread()
				ch <- result{nil, err}
				return
			}
			defer ns.Close()
			if err := unix.Setns(int(ns.Fd()), unix.CLONE_NEWNET); err != nil {
				runtime.UnlockOSThread()
				ch <- result{nil, err}
				return
			}
			var d net.Dialer
			c, err := d.DialContext(ctx, network, addr)
			if unix.Setns(int(home.Fd()), unix.CLONE_NEWNET) != nil {
				ch <- result{c, err}
				select {} // stuck in there: never run anything else on it
			}
			runtime.UnlockOSThread()
			ch <- result{c, err}
		}()
		r := <-ch
		return r.c, r.err
	}
}
