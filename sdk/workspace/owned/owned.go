// Package owned hands a dirfs workspace to an unprivileged uid, so that a
// plugin running as root can run its commands as that uid: what the file
// API writes (as root) is chowned to the uid, folders are checked to be
// reachable by it, and processes of a uid can be found and killed (Linux
// only: KillUIDs reads /proc). The local and bwrap sandbox backends share
// it.
package owned

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/agenthost/agenthost/sdk/workspace"
	"github.com/agenthost/agenthost/sdk/workspace/dirfs"
)

// Owner is the uid and gid a sandbox's commands run as and its files
// belong to.
type Owner struct {
	UID, GID int
}

// Active reports whether files are handed to o and commands run as o: only
// a root plugin can, and a zero UID means "keep the plugin's own".
func (o Owner) Active() bool { return os.Geteuid() == 0 && o.UID > 0 }

// Credential is what exec needs to start a process as o, with no
// supplementary groups (root's would otherwise be kept); nil when o is not
// active.
func (o Owner) Credential() *syscall.Credential {
	if !o.Active() {
		return nil
	}
	return &syscall.Credential{Uid: uint32(o.UID), Gid: uint32(o.GID), Groups: []uint32{}}
}

// FS is the dirfs workspace with one addition: what the file API writes is
// handed to Owner, so commands can edit files the host wrote. The plugin
// runs as root and dirfs writes as root. Files commands write stay theirs;
// root reads them regardless.
type FS struct {
	*dirfs.FS
	Owner Owner
}

// WriteFile writes through dirfs, then chowns the file and every folder on
// its path. The chown goes through os.Root and does not follow the last
// component, so a command swapping a folder for a symlink meanwhile cannot
// make root chown a file outside the workspace.
func (o *FS) WriteFile(ctx context.Context, p string, data []byte, mode uint32) (workspace.FileInfo, error) {
	fi, err := o.FS.WriteFile(ctx, p, data, mode)
	if err != nil || !o.Owner.Active() {
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
		if err := r.Lchown(prefix, o.Owner.UID, o.Owner.GID); err != nil {
			return fi, fmt.Errorf("hand %s to the sandbox uid: %w", prefix, err)
		}
	}
	return fi, nil
}

// Own hands one file or folder (not a symlink's target) to o.
func Own(name string, o Owner) error {
	if !o.Active() {
		return nil
	}
	return os.Lchown(name, o.UID, o.GID)
}

// OwnTree hands a tree to o. Symlinks are not followed, but a process of
// another uid renaming folders meanwhile could redirect the walk: call it
// only on trees no command is running in.
func OwnTree(dir string, o Owner) error {
	if !o.Active() {
		return nil
	}
	return filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, o.UID, o.GID)
	})
}

// CanSearch reports whether o may pass through a folder (x permission for
// the class o falls in; o has no supplementary groups).
func CanSearch(fi fs.FileInfo, o Owner) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	perm := fi.Mode().Perm()
	switch {
	case !ok:
		return perm&0o001 != 0
	case int(st.Uid) == o.UID:
		return perm&0o100 != 0
	case int(st.Gid) == o.GID:
		return perm&0o010 != 0
	}
	return perm&0o001 != 0
}

// Searchable checks that o can reach dir: exec changes to the uid before it
// changes into the working folder, so every folder from / down to dir needs
// x for o. The error names the first folder that stops it.
func Searchable(dir string, o Owner) error {
	if !o.Active() {
		return nil // the plugin's own uid, which made the folders
	}
	for d := dir; ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			return err
		}
		if !CanSearch(fi, o) {
			return fmt.Errorf("%s is not reachable by uid %d: %s has mode %v (chmod o+x %s, or choose a root elsewhere)", dir, o.UID, d, fi.Mode().Perm(), d)
		}
		if d == "/" {
			return nil
		}
	}
}
