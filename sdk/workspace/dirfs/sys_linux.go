package dirfs

import (
	"errors"
	"os"
	"path"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/agenthost/agenthost/sdk/plugin"
	"golang.org/x/sys/unix"
)

// What dirfs needs from the kernel beyond POSIX, for Linux; sys_darwin.go
// holds the macOS counterparts and says what they give up.

// withDeathSignal makes the kernel SIGKILL the started process when the
// plugin dies, so a crashed plugin leaves no command running.
func withDeathSignal(a *syscall.SysProcAttr) *syscall.SysProcAttr {
	a.Pdeathsig = syscall.SIGKILL
	return a
}

// setRlimit applies one resource limit to a started process (prlimit),
// soft and hard alike so the process cannot raise it again. Best effort:
// failing here must not fail the command.
func setRlimit(pid, resource int, v uint64) {
	_ = unix.Prlimit(pid, resource, &unix.Rlimit{Cur: v, Max: v}, nil)
}

// changeTime is a file's status change time (ctime).
func changeTime(st *syscall.Stat_t) time.Time { return time.Unix(st.Ctim.Unix()) }

// renameAt renames base name src in folder sd to dst in dd without
// replacing an existing target, in one step (renameat2 RENAME_NOREPLACE).
// Filesystems without it fall back to r.Rename after the caller's check.
func renameAt(r *os.Root, sd, dd *os.File, src, dst, from, to string) error {
	err := unix.Renameat2(int(sd.Fd()), path.Base(src), int(dd.Fd()), path.Base(dst), unix.RENAME_NOREPLACE)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS):
		return mapErr(from, r.Rename(src, dst))
	case errors.Is(err, unix.EEXIST):
		return plugin.Errorf(plugin.CodeAlreadyExists, to, "%q already exists", to)
	}
	return mapErr(from, err)
}

// procStart reads a process's start time (clock ticks since boot).
func procStart(pid int) (uint64, bool) {
	st, ok := procStat(pid)
	return st.start, ok
}

type stat struct {
	state byte // 'Z' for a zombie
	pgrp  int
	sid   int
	start uint64
	// rss is resident memory in pages (field 24).
	rss int64
}

// procStat reads a process's state (field 3), group (field 5), session
// (field 6) and start time (field 22) from /proc/<pid>/stat. The command
// name (field 2) may hold spaces and parentheses, so fields are counted
// from the last ')'.
func procStat(pid int) (stat, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return stat{}, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return stat{}, false
	}
	f := strings.Fields(s[i+1:])
	// Fields after ')' begin at field 3 (state): the n-th field of
	// proc(5) is at index n-first.
	const first = 3
	const stateField, pgrpField, sidField, startField, rssField = 3 - first, 5 - first, 6 - first, 22 - first, 24 - first
	if len(f) <= rssField || len(f[stateField]) != 1 {
		return stat{}, false
	}
	pgrp, err1 := strconv.Atoi(f[pgrpField])
	sid, err2 := strconv.Atoi(f[sidField])
	start, err3 := strconv.ParseUint(f[startField], 10, 64)
	rss, err4 := strconv.ParseInt(f[rssField], 10, 64)
	return stat{state: f[stateField][0], pgrp: pgrp, sid: sid, start: start, rss: rss}, err1 == nil && err2 == nil && err3 == nil && err4 == nil
}

// sessionRSS is the resident memory, in bytes, of every process of the
// session sid: a service leads its own session, and what it starts (an
// agent server's commands) stays in it unless it makes one of its own.
func sessionRSS(sid int) int64 {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	var pages int64
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, ok := procStat(pid); ok && st.sid == sid {
			pages += st.rss
		}
	}
	return pages * int64(os.Getpagesize())
}

// touchNow sets a file's mtime to the filesystem's "now" (utimensat with
// UTIME_NOW, leaving atime as it is), not following a symlink.
func touchNow(name string) error {
	ts := []unix.Timespec{{Nsec: unix.UTIME_OMIT}, {Nsec: unix.UTIME_NOW}}
	return unix.UtimesNanoAt(unix.AT_FDCWD, name, ts, unix.AT_SYMLINK_NOFOLLOW)
}

// signalSessionButLeader sends sig to every live process of session sid
// but its leader (see WrappedService.SpareLeader).
func signalSessionButLeader(sid int, sig syscall.Signal) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == sid {
			continue
		}
		if st, ok := procStat(pid); ok && st.sid == sid {
			_ = syscall.Kill(pid, sig)
		}
	}
}
