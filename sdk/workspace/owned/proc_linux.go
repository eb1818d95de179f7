package owned

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// maxKillPasses bounds KillUIDs. Each pass SIGKILLs every match it saw, and
// a killed process forks no more, so only processes forked during the
// previous pass's /proc walk can be found by the next; a few passes end any
// real command tree, a hundred ends a fork bomb that outruns the first ones.
const maxKillPasses = 100

// KillUIDs SIGKILLs every process on this machine whose real, effective,
// saved or filesystem uid matches, and repeats until a pass finds none (up
// to maxKillPasses). It returns how many signals it sent, and whether a
// pass found none: cleared is false when processes outran every pass or
// /proc could not be read, and then the uids must not be handed out again.
//
// A uid given to one sandbox alone identifies that sandbox's processes
// whatever they did: left the process group (setsid), double-forked, or
// outlived the plugin that started them. Unlike a recorded pid, a uid
// cannot be reused by a stranger between recording and killing, so no
// start-time check is needed. It must only be used for uids nothing but
// sandboxes runs as, and needs root to signal them.
func KillUIDs(match func(uid int) bool) (sent int, cleared bool) {
	self := os.Getpid()
	for range maxKillPasses {
		entries, err := os.ReadDir("/proc")
		if err != nil {
			return sent, false
		}
		found := 0
		for _, e := range entries {
			pid, err := strconv.Atoi(e.Name())
			if err != nil || pid == self {
				continue
			}
			// A zombie is dead already (and would match until reaped).
			if uids, zombie, ok := procUIDs(pid); ok && !zombie && anyMatch(uids, match) {
				found++
				if syscall.Kill(pid, syscall.SIGKILL) == nil {
					sent++
				}
			}
		}
		if found == 0 {
			return sent, true
		}
	}
	return sent, false
}

func anyMatch(uids []int, match func(int) bool) bool {
	for _, u := range uids {
		if match(u) {
			return true
		}
	}
	return false
}

// procUIDs reads the four uids of a process from /proc/<pid>/status, and
// whether it is a zombie (State comes before Uid in that file).
func procUIDs(pid int) (uids []int, zombie, ok bool) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return nil, false, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if state, isState := strings.CutPrefix(line, "State:"); isState {
			zombie = strings.HasPrefix(strings.TrimSpace(state), "Z")
			continue
		}
		rest, isUID := strings.CutPrefix(line, "Uid:")
		if !isUID {
			continue
		}
		for _, field := range strings.Fields(rest) {
			u, err := strconv.Atoi(field)
			if err != nil {
				return nil, false, false
			}
			uids = append(uids, u)
		}
		return uids, zombie, len(uids) > 0
	}
	return nil, false, false
}

// AnyUID reports whether a live process (not a zombie) has a uid match
// accepts, through /proc: a sandbox's own uid finds its processes whatever
// group or session they moved to.
func AnyUID(match func(uid int) bool) bool {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return true // cannot tell: assume one
	}
	self := os.Getpid()
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		if uids, zombie, ok := procUIDs(pid); ok && !zombie && anyMatch(uids, match) {
			return true
		}
	}
	return false
}
