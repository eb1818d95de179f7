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

// childrenCPU sums the CPU time of this process's live children from
// /proc/<pid>/stat (utime and stime, after the parenthesised command name,
// which may itself hold spaces).
func childrenCPU() time.Duration {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	self := strconv.Itoa(os.Getpid())
	var ticks int64
	for _, e := range entries {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // gone meanwhile
		}
		s := string(b)
		end := strings.LastIndexByte(s, ')')
		if end < 0 {
			continue
		}
		// From the state on: state ppid pgrp session tty_nr tpgid flags
		// minflt cminflt majflt cmajflt utime stime.
		f := strings.Fields(s[end+1:])
		if len(f) < 13 || f[1] != self {
			continue
		}
		utime, err1 := strconv.ParseInt(f[11], 10, 64)
		stime, err2 := strconv.ParseInt(f[12], 10, 64)
		if err1 == nil && err2 == nil {
			ticks += utime + stime
		}
	}
	return time.Duration(ticks) * time.Second / userHZ
}
