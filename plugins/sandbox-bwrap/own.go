//go:build linux

package bwrap

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/agenthost/agenthost/sdk/workspace/dirfs"
	"github.com/agenthost/agenthost/sdk/workspace/owned"
)

// owner is the uid/gid commands run as and the workspace belongs to when
// the plugin runs as root (owned.Owner.Active).
func owner(c Config) owned.Owner { return owned.Owner{UID: c.UID, GID: c.GID} }

// execRecord is what the exec helper writes to execs/<random> before it
// execs bwrap, as "<pid> <start>": its pid, which is bwrap's after the
// exec and the id of the session every process of the command starts in
// (the helper leads it: dirfs starts commands with setsid, and bwrap runs
// without --new-session), and its start time (dirfs.ProcStart), which
// tells it from a later process given the same pid.
type execRecord struct {
	pid   int
	start uint64
}

func (r execRecord) String() string { return fmt.Sprintf("%d %d", r.pid, r.start) }

// readRecord reads an execRecord; ok is false for a file that holds none.
func readRecord(file string) (r execRecord, ok bool) {
	b, err := os.ReadFile(file)
	if err != nil {
		return r, false
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return r, false
	}
	pid, err1 := strconv.Atoi(f[0])
	start, err2 := strconv.ParseUint(f[1], 10, 64)
	if err1 != nil || err2 != nil || pid <= 1 {
		return r, false
	}
	return execRecord{pid: pid, start: start}, true
}

// running reports whether the recorded process still runs (not only its
// pid number, given to another process since).
func (r execRecord) running() bool {
	now, ok := dirfs.ProcStart(r.pid)
	return ok && now == r.start
}

// killRecorded SIGKILLs what is left of the commands recorded under a
// sandbox folder and removes their records: every process of each
// command's session (dirfs.KillSession; uid is the host uid commands run
// as). A relaunched plugin does not track its predecessor's commands.
// Most died with it, through the helper's and bwrap's parent-death
// signals, but not all: bwrap's pid-namespace init arms its own only some
// time after bwrap creates it, and a plugin dying in between leaves it,
// and so the whole sandbox, running. It never left the session.
func killRecorded(boxDir string, uid int) int {
	dir := filepath.Join(boxDir, execsDir)
	entries, _ := os.ReadDir(dir)
	n := 0
	for _, e := range entries {
		file := filepath.Join(dir, e.Name())
		if r, ok := readRecord(file); ok {
			n += dirfs.KillSession(r.pid, r.start, uid)
		}
		_ = os.Remove(file)
	}
	return n
}

// killLeftovers runs killRecorded for every sandbox under root but those
// in skip (this process's own, whose commands are its own).
func killLeftovers(root string, uid int, skip func(id string) bool) int {
	entries, _ := os.ReadDir(root)
	n := 0
	for _, e := range entries {
		if !e.IsDir() || checkID(e.Name()) != nil || skip(e.Name()) {
			continue
		}
		n += killRecorded(filepath.Join(root, e.Name()), uid)
	}
	return n
}

// commandUID is the host uid a sandbox's processes run as.
func commandUID(c Config) int {
	if os.Geteuid() == 0 {
		return c.UID
	}
	return os.Getuid()
}

// removeTree removes a folder even where a command made parts of it
// read-only, retrying while killed processes finish their last writes.
func removeTree(dir string) error {
	var err error
	for range 3 {
		if err = os.RemoveAll(dir); err == nil {
			return nil
		}
		_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, werr error) error {
			if werr == nil && d.IsDir() {
				_ = os.Chmod(p, 0o700)
			}
			return nil
		})
		time.Sleep(50 * time.Millisecond)
	}
	return err
}

// sweepLeftovers removes staging, trash and health folders a crashed
// process left behind.
func sweepLeftovers(root string) []error {
	entries, err := os.ReadDir(root)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return []error{err}
	}
	var errs []error
	for _, e := range entries {
		n := e.Name()
		if !strings.HasPrefix(n, stagingPrefix) && !strings.HasPrefix(n, trashPrefix) && !strings.HasPrefix(n, healthPrefix) {
			continue
		}
		fi, err := e.Info()
		if err != nil || time.Since(fi.ModTime()) < leftoverAge {
			continue
		}
		if err := removeTree(filepath.Join(root, n)); err != nil {
			errs = append(errs, fmt.Errorf("remove leftover %s: %w", n, err))
		}
	}
	return errs
}
