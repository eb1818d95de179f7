// Package dirfs implements workspace.Workspace over a directory of this
// machine, confining every path to it. Sandbox backends whose working copy is
// a local directory (local, bubblewrap) share it and differ only in how they
// run commands (ExecFunc).
package dirfs

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/agenthost/agenthost/sdk/plugin"
)

// maxSymlinkHops bounds symlink resolution so a loop cannot spin forever.
const maxSymlinkHops = 40

func denied(p, why string) error {
	return plugin.Errorf(plugin.CodePathDenied, p, "path %q %s", p, why)
}

// Clean validates a workspace path and returns it cleaned ("" for the root).
// It refuses absolute paths, NUL bytes, backslashes and any ".." that climbs
// above the root.
func Clean(p string) (string, error) {
	if strings.ContainsRune(p, 0) {
		return "", denied(p, "contains a NUL byte")
	}
	if strings.Contains(p, `\`) {
		return "", denied(p, "contains a backslash")
	}
	if strings.HasPrefix(p, "/") {
		return "", denied(p, "is absolute; workspace paths are relative to the workspace root")
	}
	c := path.Clean("/" + p)
	// Clean("/"+p) swallows leading ".." silently; compare segment counts to
	// catch a climb out instead of quietly remapping it to the root.
	depth := 0
	for _, seg := range strings.Split(p, "/") {
		switch seg {
		case "", ".":
		case "..":
			depth--
			if depth < 0 {
				return "", denied(p, "climbs out of the workspace with ..")
			}
		default:
			depth++
		}
	}
	return strings.TrimPrefix(c, "/"), nil
}

// resolve maps a workspace path to a host path, following symlinks inside the
// workspace by hand and refusing any that lead out of it. The last component
// need not exist (for writes); when it is a symlink it is resolved too, so a
// write cannot follow a link out of the root.
func (f *FS) resolve(p string) (string, error) {
	rel, err := Clean(p)
	if err != nil {
		return "", err
	}
	if rel == "" {
		return f.root, nil
	}
	segs := strings.Split(rel, "/")
	cur := "" // resolved, relative to root, no symlinks
	hops := 0
	for i := 0; i < len(segs); i++ {
		next := path.Join(cur, segs[i])
		full := filepath.Join(f.root, filepath.FromSlash(next))
		fi, err := os.Lstat(full)
		if errors.Is(err, fs.ErrNotExist) {
			// The rest does not exist yet: nothing left to resolve.
			rest := append([]string{next}, segs[i+1:]...)
			return filepath.Join(f.root, filepath.FromSlash(path.Join(rest...))), nil
		}
		if err != nil {
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			cur = next
			continue
		}
		hops++
		if hops > maxSymlinkHops {
			return "", denied(p, "has too many levels of symlinks")
		}
		target, err := os.Readlink(full)
		if err != nil {
			return "", err
		}
		if filepath.IsAbs(target) {
			r, ok := f.within(target)
			if !ok {
				return "", denied(p, "goes through a symlink that leads outside the workspace")
			}
			target = r
		} else {
			target = path.Join(cur, filepath.ToSlash(target))
			if target == ".." || strings.HasPrefix(target, "../") {
				return "", denied(p, "goes through a symlink that leads outside the workspace")
			}
		}
		// Re-walk from the root through the link's target.
		rest := append(strings.Split(target, "/"), segs[i+1:]...)
		segs, cur, i = rest, "", -1
		if target == "." || target == "" {
			segs = segs[1:]
		}
	}
	return filepath.Join(f.root, filepath.FromSlash(cur)), nil
}

// within reports whether an absolute host path lies in the root and returns
// it relative to the root.
func (f *FS) within(abs string) (string, bool) {
	rel, err := filepath.Rel(f.root, filepath.Clean(abs))
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", false
	}
	if rel == "." {
		rel = ""
	}
	return filepath.ToSlash(rel), true
}

// relOf turns a host path under the root back into a workspace path.
func (f *FS) relOf(full string) string {
	rel, _ := f.within(full)
	return rel
}
