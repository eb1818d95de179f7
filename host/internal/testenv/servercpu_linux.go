package testenv

import (
	"os"
	"strconv"
	"strings"
	"time"
)

// procStat is what a benchmark needs of /proc/<pid>/stat: the command, the
// parent, and the CPU times (in USER_HZ ticks) of the process and of its
// children that ended and were waited for.
type procStat struct {
	comm           string
	ppid           int
	utime, stime   int64
	cutime, cstime int64
}

// readProcStat parses /proc/<pid>/stat; ok is false when the process is
// gone or the file does not parse.
func readProcStat(pid int) (procStat, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, false
	}
	s := string(b)
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return procStat{}, false
	}
	// From the state on: state ppid pgrp session tty_nr tpgid flags
	// minflt cminflt majflt cmajflt utime stime cutime cstime.
	f := strings.Fields(s[end+1:])
	if len(f) < 15 {
		return procStat{}, false
	}
	n := func(i int) int64 { v, _ := strconv.ParseInt(f[i], 10, 64); return v }
	return procStat{comm: s[open+1 : end], ppid: int(n(1)), utime: n(11), stime: n(12), cutime: n(13), cstime: n(14)}, true
}

// serverCPU is the CPU time the server process root and its children have
// used so far: root's own, its children's that ended (a server such as
// PostgreSQL waits for every backend it forked, so their time is kept in
// root's cutime and cstime), and its live children's. ok is false when
// root is not a process of this machine.
func serverCPU(root int) (time.Duration, bool) {
	r, ok := readProcStat(root)
	if !ok {
		return 0, false
	}
	ticks := r.utime + r.stime + r.cutime + r.cstime
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, false
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if c, ok := readProcStat(pid); ok && c.ppid == root {
			ticks += c.utime + c.stime
		}
	}
	return time.Duration(ticks) * time.Second / userHZ, true
}

// postmasterOf is the pid of the PostgreSQL server whose backend has pid
// backend, when that backend runs on this machine: its parent, both named
// postgres. 0 when the server is elsewhere (the pid, if it exists here,
// is some other process).
func postmasterOf(backend int) int {
	b, ok := readProcStat(backend)
	if !ok || b.comm != "postgres" {
		return 0
	}
	if p, ok := readProcStat(b.ppid); ok && p.comm == "postgres" {
		return b.ppid
	}
	return 0
}
