//go:build linux

package bwrap

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/agenthost/agenthost/sdk/workspace"
	"github.com/agenthost/agenthost/sdk/workspace/dirfs"
)

// ownedFS is the dirfs workspace with one addition: what the file API
// writes is handed to the sandbox uid, so commands can edit files the host
// wrote. The plugin runs as root and dirfs writes as root.
type ownedFS struct {
	*dirfs.FS
	cfg Config
}

// WriteFile writes through dirfs, then chowns the file and every folder on
// its path. The chown goes through os.Root and does not follow the last
// component, so a command swapping a folder for a symlink meanwhile cannot
// make root chown a file outside the workspace.
func (o *ownedFS) WriteFile(ctx context.Context, p string, data []byte, mode uint32) (workspace.FileInfo, error) {
	fi, err := o.FS.WriteFile(ctx, p, data, mode)
	if err != nil || !chowning(o.cfg) {
		return fi, err
	}
	r, err := os.OpenRoot(o.Root())
	if err != nil {
		return fi, err
	}
	defer r.Close()
	var prefix string
	for _, part := range strings.Split(fi.Path, "/") {
		prefix = path.Join(prefix, part)
		if err := r.Lchown(prefix, o.cfg.UID, o.cfg.GID); err != nil {
			return fi, fmt.Errorf("hand %s to the sandbox uid: %w", prefix, err)
		}
	}
	return fi, nil
}

// chowning: only a root plugin runs commands as another uid.
func chowning(c Config) bool { return os.Geteuid() == 0 && c.UID > 0 }

// own hands one folder to the sandbox uid.
func own(dir string, c Config) error {
	if !chowning(c) {
		return nil
	}
	return os.Lchown(dir, c.UID, c.GID)
}

// ownTree hands a tree no command has touched yet to the sandbox uid.
func ownTree(dir string, c Config) error {
	if !chowning(c) {
		return nil
	}
	return filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, c.UID, c.GID)
	})
}

// canSearch reports whether uid/gid of c may pass through a folder.
func canSearch(fi fs.FileInfo, c Config) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	perm := fi.Mode().Perm()
	switch {
	case !ok:
		return perm&0o001 != 0
	case int(st.Uid) == c.UID:
		return perm&0o100 != 0
	case int(st.Gid) == c.GID:
		return perm&0o010 != 0
	}
	return perm&0o001 != 0
}

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
