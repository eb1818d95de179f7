package dirfs

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Records of process groups (Groups.RecordDir): one file per group, named
// by its id and holding the leader's start time, so that the group can be
// told from a later process given the same number.

func recordPath(dir string, pgid int) string {
	return filepath.Join(dir, strconv.Itoa(pgid))
}

func writeRecord(dir string, pgid int, start uint64) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return os.WriteFile(recordPath(dir, pgid), []byte(strconv.FormatUint(start, 10)), 0o600)
}

// KillRecorded SIGKILLs the process groups recorded in dir by a Groups of
// an earlier plugin process, and removes the records. It answers how many
// processes it signalled.
//
// The leader of such a group died with that plugin (parent-death signal),
// but what it left in the background lives on in its group. Linux does not
// give the group's number to a new process while the group has members, so
// a process still in group pgid that started no earlier than the recorded
// leader is ours, with one exception this cannot see: if the group emptied
// and the number came round again (pid_max processes later) to a process
// of the same user that made its own group. A group whose leader is alive
// is killed only if the leader's start time is the recorded one.
//
// Only processes of this process's own uid are touched (the kill of another
// uid's process would fail anyway unless this is root).
func KillRecorded(dir string) int {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	sent := 0
	for _, e := range entries {
		file := filepath.Join(dir, e.Name())
		pgid, err := strconv.Atoi(e.Name())
		raw, rerr := os.ReadFile(file)
		if err != nil || rerr != nil || pgid <= 1 {
			_ = os.Remove(file)
			continue
		}
		start, err := strconv.ParseUint(strings.TrimSpace(string(raw)), 10, 64)
		if err == nil && start != 0 {
			sent += killRecordedGroup(pgid, start)
		}
		_ = os.Remove(file)
	}
	return sent
}

func killRecordedGroup(pgid int, start uint64) int {
	if now, alive := procStart(pgid); alive {
		if now != start {
			return 0 // the number belongs to another process now
		}
		if syscall.Kill(-pgid, syscall.SIGKILL) == nil {
			return 1
		}
		return 0
	}
	// The leader is gone: find the group's members one by one.
	uid := os.Getuid()
	return killMembers(func(pid int, st stat) bool {
		if st.pgrp != pgid || st.start < start {
			return false
		}
		fi, err := os.Stat("/proc/" + strconv.Itoa(pid))
		return err == nil && int(fi.Sys().(*syscall.Stat_t).Uid) == uid
	})
}

// KillSession SIGKILLs every process of the session that process sid led
// when it started at start (ProcStart), and answers how many processes it
// signalled. Session ids are process ids: a process that called setsid, as
// every command does (LocalExec), leads a session of that number, which
// everything it starts joins unless it makes a session of its own.
//
// It is for a plugin cleaning up after a crashed predecessor, when the
// leader may be gone but not what it started. As for process groups (see
// KillRecorded), Linux does not give the session's number to a new process
// while the session has members, so a member that started no earlier than
// the recorded leader is the leader's, unless the session emptied and the
// number came round to a new session leader; to keep that case from
// touching a stranger, with the leader gone only processes whose real uid
// is uid (the uid commands run as) are killed. A session whose leader still
// runs is killed whole if the leader's start time is the recorded one, and
// not at all otherwise.
func KillSession(sid int, start uint64, uid int) int {
	if sid <= 1 {
		return 0
	}
	now, alive := procStart(sid)
	if alive && now != start {
		return 0 // the number belongs to another process now
	}
	return killMembers(func(pid int, st stat) bool {
		if st.sid != sid || st.start < start {
			return false
		}
		if alive {
			return true
		}
		ruid, ok := procRealUID(pid)
		return ok && ruid == uid
	})
}

// killPasses bounds how often killMembers scans /proc: a member may fork
// while a pass runs, which the next pass finds. A few passes catch what a
// command's processes fork as they die; a tree that forks faster than it
// is killed is not the case this clean-up exists for.
const killPasses = 5

// killMembers SIGKILLs every live process (not a zombie) that member
// selects, scanning /proc again until a pass finds nothing new, and
// answers how many processes it signalled.
func killMembers(member func(pid int, st stat) bool) int {
	// pid → start time of the processes signalled, so a process still
	// dying is not counted twice and a new one with its pid is not skipped.
	signalled := map[int]uint64{}
	for range killPasses {
		entries, _ := os.ReadDir("/proc")
		found := false
		for _, e := range entries {
			pid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			st, ok := procStat(pid)
			if !ok || st.state == 'Z' || !member(pid, st) {
				continue
			}
			if s, seen := signalled[pid]; seen && s == st.start {
				continue
			}
			if syscall.Kill(pid, syscall.SIGKILL) == nil {
				signalled[pid] = st.start
				found = true
			}
		}
		if !found {
			break
		}
	}
	return len(signalled)
}

// procRealUID reads a process's real uid from /proc/<pid>/status. Unlike
// the owner of /proc/<pid>, it does not turn to root when a process stops
// being dumpable (after a uid change, say).
func procRealUID(pid int) (int, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "Uid:"); ok {
			f := strings.Fields(rest)
			if len(f) == 0 {
				return 0, false
			}
			uid, err := strconv.Atoi(f[0])
			return uid, err == nil
		}
	}
	return 0, false
}
