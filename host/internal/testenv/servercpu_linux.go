package testenv

import "time"

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
	ticks := r.utime + r.stime + r.cutime + r.cstime + liveChildrenTicks(root)
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
