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
	"syscall"
	"time"

	"github.com/agenthost/agenthost/sdk/workspace/owned"
)

// owner is the uid/gid commands run as and the workspace belongs to when
// the plugin runs as root (owned.Owner.Active).
func owner(c Config) owned.Owner { return owned.Owner{UID: c.UID, GID: c.GID} }

// killRecorded SIGKILLs the commands recorded under a sandbox folder that
// are still bwrap processes (a recorded pid may have been reused since).
// A plugin relaunched after a crash does not track its predecessor's
// commands; bwrap's --die-with-parent killed them already, this makes sure.
func killRecorded(boxDir string) {
	entries, _ := os.ReadDir(filepath.Join(boxDir, execsDir))
	for _, e := range entries {
		if pid, ok := recordedPid(filepath.Join(boxDir, execsDir, e.Name())); ok {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// recordedPid reads a pid file and checks that the pid still runs bwrap.
func recordedPid(file string) (int, bool) {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 1 {
		return 0, false
	}
	exe, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe")
	if err != nil || filepath.Base(exe) != "bwrap" {
		return 0, false
	}
	return pid, true
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
