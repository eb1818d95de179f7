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
)

// NewFile is one file for WriteNew.
type NewFile struct {
	Path string
	Data []byte
	// Mode is the file's permission bits; 0 means 0644.
	Mode uint32
}

// WriteNew fills a workspace that nothing else uses yet (a sandbox being
// created: no command has run in it and nobody reads it) with files, and
// returns each file's sha256 by its cleaned path. It writes what WriteFile
// would, but for such a tree WriteFile's care is wasted work: each file is
// created under its own name, not a temporary one renamed over it, and each
// folder is opened once for all its files, not once per file and per
// path component. A later file of the same path replaces an earlier one.
// Paths are checked as Clean checks them and stay inside the workspace
// (os.Root).
func (f *FS) WriteNew(ctx context.Context, files []NewFile) (map[string]string, error) {
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
		if err := r.MkdirAll(rel, 0o755); err != nil {
			if errors.Is(err, fs.ErrExist) {
				err = syscall.ENOTDIR // a file sits where a folder should be
			}
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
		if f.maxBytes > 0 && int64(len(nf.Data)) > f.maxBytes {
			return nil, plugin.Errorf(plugin.CodeTooLarge, nf.Path, "%d bytes for %q; the limit is %d", len(nf.Data), nf.Path, f.maxBytes)
		}
		mode := nf.Mode
		if mode == 0 {
			mode = 0o644
		}
		dir, name := path.Split(rel)
		d, err := folder(path.Clean("/" + dir)[1:])
		if err != nil {
			return nil, mapErr(nf.Path, err)
		}
		if err := writeNewFile(d, name, nf.Data, fs.FileMode(mode).Perm()); err != nil {
			return nil, mapErr(nf.Path, err)
		}
		sum := sha256.Sum256(nf.Data)
		sums[rel] = hex.EncodeToString(sum[:])
	}
	return sums, nil
}

// writeNewFile writes name in folder d with exactly perm (whatever the
// umask: chmod after the create).
func writeNewFile(d *os.Root, name string, data []byte, perm fs.FileMode) error {
	file, err := d.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	_, err = file.Write(data)
	if err == nil {
		err = file.Chmod(perm)
	}
	if cerr := file.Close(); err == nil {
		err = cerr
	}
	return err
}
