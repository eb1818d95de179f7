// Package dirfs implements workspace.Workspace over a directory of this
// machine, confining every path to it. Sandbox backends whose working copy is
// a local directory (local, bubblewrap) share it and differ only in how they
// run commands (ExecFunc).
//
// Confinement has two layers. resolve walks a path component by component
// with Lstat, follows symlinks by hand and refuses any that leads out of the
// root, so callers get plugin.CodePathDenied with the path at fault. The file
// operations then run through an os.Root opened on the workspace (openat
// underneath), using the symlink-free path resolve produced, so a command
// that swaps a folder for a symlink between the check and the use still
// cannot make an operation leave the root.
package dirfs

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/agenthost/agenthost/sdk/plugin"
)

// maxSymlinkHops bounds symlink resolution so a loop cannot spin forever; 40
// is what Linux allows (MAXSYMLINKS) before ELOOP.
const maxSymlinkHops = 40

func denied(p, why string) error {
	return plugin.Errorf(plugin.CodePathDenied, p, "path %q %s", p, why)
}

// Clean validates a workspace path and returns it cleaned ("" for the root).
// It refuses absolute paths, NUL bytes, backslashes (a separator on Windows
// hosts; refusing it everywhere keeps paths meaning the same on every
// backend) and any ".." that climbs above the root.
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
	// path.Clean("/"+p) would swallow a leading ".." silently; count depth
	// instead so a climb out is refused rather than quietly remapped.
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
	return strings.TrimPrefix(path.Clean("/"+p), "/"), nil
}

// resolve maps a workspace path to a relative path under the root with no
// symlink left in it, following symlinks inside the workspace and refusing
// any that lead out. Components that do not exist yet are kept as they are
// (writes create them). When followLast is false the last component is not
// followed: Remove and Rename act on a link itself, never on its target.
// "" is the root.
func (f *FS) resolve(p string, followLast bool) (string, error) {
	rel, err := Clean(p)
	if err != nil {
		return "", err
	}
	if rel == "" {
		return "", nil
	}
	todo := strings.Split(rel, "/")
	var done []string // resolved components: existing folders, or names not there yet
	hops := 0
	for len(todo) > 0 {
		name := todo[0]
		todo = todo[1:]
		switch name {
		case "", ".":
			continue
		case "..":
			// Only symlink targets bring ".." here (Clean removed the
			// caller's); they are relative to the folder holding the link.
			if len(done) == 0 {
				return "", denied(p, "goes through a symlink that leads outside the workspace")
			}
			done = done[:len(done)-1]
			continue
		}
		if len(todo) == 0 && !followLast {
			done = append(done, name)
			break
		}
		cur := path.Join(path.Join(done...), name)
		fi, err := os.Lstat(filepath.Join(f.root, filepath.FromSlash(cur)))
		if err != nil {
			// Missing, or a file used as a folder: nothing more to
			// resolve here; the operation itself reports what is wrong.
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
				done = append(done, name)
				continue
			}
			return "", mapErr(p, err)
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			done = append(done, name)
			continue
		}
		if hops++; hops > maxSymlinkHops {
			return "", denied(p, "has too many levels of symlinks")
		}
		target, err := os.Readlink(filepath.Join(f.root, filepath.FromSlash(cur)))
		if err != nil {
			return "", mapErr(p, err)
		}
		if filepath.IsAbs(target) {
			// An absolute link is fine when it points into the root
			// (commands often make them with $PWD); resolve it from there.
			in, ok := f.within(target)
			if !ok {
				return "", denied(p, "goes through a symlink that leads outside the workspace")
			}
			target, done = in, nil
		}
		todo = append(strings.Split(filepath.ToSlash(target), "/"), todo...)
	}
	return strings.Join(done, "/"), nil
}

// within reports whether an absolute host path lies in the root (lexically)
// and returns it relative to the root with forward slashes.
func (f *FS) within(abs string) (string, bool) {
	rel, err := filepath.Rel(f.root, filepath.Clean(abs))
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", false
	}
	if rel == "." {
		rel = ""
	}
	return filepath.ToSlash(rel), true
}

// rootName turns a resolved path into a name os.Root accepts ("." for the
// root itself).
func rootName(rel string) string {
	if rel == "" {
		return "."
	}
	return rel
}

// isEscape reports os.Root's refusal to leave the root. os does not export
// that error, so it is recognised by its text; it only happens when the tree
// changed between resolve and the operation (a command swapped a folder for
// a symlink), which is exactly the attack to answer with CodePathDenied.
func isEscape(err error) bool {
	return err != nil && strings.Contains(err.Error(), "path escapes from parent")
}
