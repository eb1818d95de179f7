//go:build !linux

package sandboxtest

import "syscall"

// processGone reports whether pid has ended, by signal 0 (no /proc here).
// A zombie still counts as running; outside a container something reaps
// it soon.
func processGone(pid int) bool { return syscall.Kill(pid, 0) == syscall.ESRCH }
