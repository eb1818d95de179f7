package dirfs

import (
	"errors"
	"os"
	"path"
	"syscall"
	"time"

	"github.com/agenthost/agenthost/sdk/plugin"
	"golang.org/x/sys/unix"
)

// The macOS counterparts of sys_linux.go. What macOS gives up:
//   - no parent-death signal: a command outlives a plugin that crashes
//     (a plugin that stops normally still kills its groups, and the host
//     kills the plugin's own process group);
//   - no prlimit: commands are not limited in CPU time or file size
//     (ExecLimits.FileSize and CPUSeconds are ignored);
//   - no /proc: process start times are unknown, so Groups cannot tell its
//     group from a reused pid number and KillRecorded finds nothing to kill
//     after a plugin crash.

// withDeathSignal returns a unchanged: macOS has no parent-death signal.
func withDeathSignal(a *syscall.SysProcAttr) *syscall.SysProcAttr { return a }

// setRlimit does nothing: macOS cannot set another process's limits, and
// Go's exec offers no hook to set them in the child before it runs.
func setRlimit(pid, resource int, v uint64) {}

// changeTime is a file's status change time (ctime).
func changeTime(st *syscall.Stat_t) time.Time { return time.Unix(st.Ctimespec.Unix()) }

// renameAt renames base name src in folder sd to dst in dd without
// replacing an existing target, in one step (renameatx_np RENAME_EXCL).
// Filesystems without it fall back to r.Rename after the caller's check.
func renameAt(r *os.Root, sd, dd *os.File, src, dst, from, to string) error {
	err := unix.RenameatxNp(int(sd.Fd()), path.Base(src), int(dd.Fd()), path.Base(dst), unix.RENAME_EXCL)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.ENOTSUP) || errors.Is(err, unix.EINVAL):
		return mapErr(from, r.Rename(src, dst))
	case errors.Is(err, unix.EEXIST):
		return plugin.Errorf(plugin.CodeAlreadyExists, to, "%q already exists", to)
	}
	return mapErr(from, err)
}

// procStart reports the start time as unknown (there is no /proc).
func procStart(pid int) (uint64, bool) { return 0, false }

type stat struct {
	state byte // 'Z' for a zombie
	pgrp  int
	sid   int
	start uint64
}

// procStat reports nothing (there is no /proc).
func procStat(pid int) (stat, bool) { return stat{}, false }

// sessionRSS cannot tell without /proc: 0.
func sessionRSS(sid int) int64 { return 0 }

// touchNow sets a file's mtime to the filesystem's "now" (utimensat with
// UTIME_NOW, leaving atime as it is) (macOS spells UTIME_NOW -1 and UTIME_OMIT -2; x/sys does not name them there), not following a symlink.
func touchNow(name string) error {
	ts := []unix.Timespec{{Nsec: -2}, {Nsec: -1}}
	return unix.UtimesNanoAt(unix.AT_FDCWD, name, ts, unix.AT_SYMLINK_NOFOLLOW)
}

// signalSessionButLeader cannot list a session without /proc: the whole
// group gets sig.
func signalSessionButLeader(sid int, sig syscall.Signal) { _ = syscall.Kill(-sid, sig) }
