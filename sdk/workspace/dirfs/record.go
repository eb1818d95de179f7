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
	entries, _ := os.ReadDir("/proc")
	sent := 0
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, ok := procStat(pid)
		if !ok || st.pgrp != pgid || st.start < start {
			continue
		}
		if fi, err := os.Stat("/proc/" + e.Name()); err != nil || int(fi.Sys().(*syscall.Stat_t).Uid) != uid {
			continue
		}
		if syscall.Kill(pid, syscall.SIGKILL) == nil {
			sent++
		}
	}
	return sent
}
