package testenv

import (
	"os"
	"strconv"
	"strings"
	"time"
)

// userHZ is the unit of /proc's CPU times: USER_HZ, 100 on every Linux
// architecture Go supports.
const userHZ = 100

// childrenCPU sums the CPU time of this process's live children.
func childrenCPU() time.Duration {
	return time.Duration(liveChildrenTicks(os.Getpid())) * time.Second / userHZ
}

// liveChildrenTicks sums the CPU times, user and system in USER_HZ ticks,
// of parent's live children.
func liveChildrenTicks(parent int) int64 {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	var ticks int64
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if c, ok := readProcStat(pid); ok && c.ppid == parent {
			ticks += c.utime + c.stime
		}
	}
	return ticks
}

// procStat is what the benchmarks need of /proc/<pid>/stat: the command,
// the parent, and the CPU times (in USER_HZ ticks) of the process and of
// its children that ended and were waited for.
type procStat struct {
	comm           string
	ppid           int
	utime, stime   int64
	cutime, cstime int64
}

// readProcStat parses /proc/<pid>/stat; ok is false when the process is
// gone (it may go meanwhile) or the file does not parse.
func readProcStat(pid int) (procStat, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, false
	}
	s := string(b)
	// The command is in parentheses and may itself hold spaces and
	// parentheses: it ends at the last ')'.
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
