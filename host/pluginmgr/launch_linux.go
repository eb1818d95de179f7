package pluginmgr

import "syscall"

// withDeathSignal makes the kernel SIGKILL the plugin when the host dies.
func withDeathSignal(a *syscall.SysProcAttr) *syscall.SysProcAttr {
	a.Pdeathsig = syscall.SIGKILL
	return a
}
