//go:build !linux

package pluginmgr

import "syscall"

// withDeathSignal returns a unchanged: only Linux has a parent-death
// signal. A host that stops normally still kills each plugin's process
// group (instance.kill); plugins of a host that crashed may keep running
// until they are killed by hand.
func withDeathSignal(a *syscall.SysProcAttr) *syscall.SysProcAttr { return a }
