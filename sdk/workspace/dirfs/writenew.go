package dirfs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path"
	"syscall"

	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/agenthost/agenthost/sdk/sandbox"
)

// WriteNew fills a workspace that nothing else uses yet (a sandbox being
// created: no command has run in it and nobody reads it) with files, and
// returns each file's sha256 by its cleaned path. It writes what WriteFile
// would, but for such a tree WriteFile's care is wasted work: each file is
// created under its own name, not a temporary one renamed over it, and each
// folder is opened once for all its files, not once per file and per
// path component. A later file of the same path replaces an earlier one.
// Paths are checked as Clean checks them and stay inside the workspace
// (os.Root).
func (f *FS) WriteNew(ctx context.Context, files []sandbox.File) (map[string]string, error) {
	r, err := f.open()
	if err != nil {
		return nil, err
	}
	dirs := map[string]*os.Root{"": r}
	defer func() {
		for _, d := range dirs {
			d.Close()
		}
	}()
	// folder opens the folder rel (made first if missing), once.
	folder := func(rel string) (*os.Root, error) {
		if d, ok := dirs[rel]; ok {
			return d, nil
		}
		if err := mkdirAll(r, rel); err != nil {
			return nil, err
		}
		d, err := r.OpenRoot(rel)
		if err != nil {
			return nil, err
		}
		dirs[rel] = d
		return d, nil
	}
	sums := make(map[string]string, len(files))
	for _, nf := range files {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		rel, err := Clean(nf.Path)
		if err != nil {
			return nil, err
		}
		if rel == "" {
			return nil, denied(nf.Path, "is the workspace root")
		}
		if err := f.checkSize(nf.Path, nf.Data); err != nil {
			return nil, err
		}
		dir, name := path.Split(rel)
		d, err := folder(path.Clean("/" + dir)[1:])
		if err != nil {
			return nil, mapErr(nf.Path, err)
		}
		if err := createFile(d, name, os.O_TRUNC, nf.Data, nf.Mode); err != nil {
			return nil, mapErr(nf.Path, err)
		}
		sum := sha256.Sum256(nf.Data)
		sums[rel] = hex.EncodeToString(sum[:])
	}
	return sums, nil
}

// checkSize refuses data over the workspace's file size limit.
func (f *FS) checkSize(p string, data []byte) error {
	if f.maxBytes > 0 && int64(len(data)) > f.maxBytes {
		return plugin.Errorf(plugin.CodeTooLarge, p, "%d bytes for %q; the limit is %d", len(data), p, f.maxBytes)
	}
	return nil
}

// mkdirAll makes folder rel and its parents (0755) under r; a file where
// a folder should be is ENOTDIR, as the path's own lookup would say.
func mkdirAll(r *os.Root, rel string) error {
	err := r.MkdirAll(rel, 0o755)
	if errors.Is(err, fs.ErrExist) {
		err = syscall.ENOTDIR
	}
	return err
}

// createFile creates name under r (os.O_EXCL or os.O_TRUNC in flag) with
// data and exactly mode's permission bits, whatever the umask (0 means
// 0644): the mode is set after the create, and only permission bits are
// kept, so no setuid comes from a tool.
func createFile(r *os.Root, name string, flag int, data []byte, mode uint32) error {
	if mode == 0 {
		mode = 0o644
	}
	file, err := r.OpenFile(name, os.O_WRONLY|os.O_CREATE|flag, 0o600)
	if err != nil {
		return err
	}
	_, err = file.Write(data)
	if err == nil {
		err = file.Chmod(fs.FileMode(mode).Perm())
	}
	if cerr := file.Close(); err == nil {
		err = cerr
	}
	return err
}
