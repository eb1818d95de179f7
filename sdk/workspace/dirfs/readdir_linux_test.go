package dirfs

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// readEntries (getdents and fstatat) must describe a folder as
// os.File.ReadDir in an os.Root does: the same names, types, modes, sizes,
// times and stat keys, for every kind of entry, in a folder too big for
// one getdents call.
func TestReadEntriesMatchesReadDir(t *testing.T) {
	f, base := newFS(t)
	root := f.Root()
	dir := filepath.Join(root, "many")
	require.NoError(t, os.Mkdir(dir, 0o755))
	// 80 bytes a record: 1,200 of them take three 32 KiB calls.
	for i := range 1200 {
		require.NoError(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("file-%04d-%s.txt", i, strings.Repeat("x", 40))), []byte(strings.Repeat("y", i)), 0o644))
	}
	odd := []string{"a b", "ü.txt", "bad\xffname", "-dash", strings.Repeat("L", 255)}
	for _, name := range odd {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(name), 0o600))
	}
	require.NoError(t, os.Mkdir(filepath.Join(dir, "sub"), 0o700))
	require.NoError(t, os.Chmod(filepath.Join(dir, "sub"), 0o700|os.ModeSticky|os.ModeSetgid))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "setuid"), nil, 0o755))
	require.NoError(t, os.Chmod(filepath.Join(dir, "setuid"), 0o755|os.ModeSetuid))
	require.NoError(t, os.Symlink(filepath.Join(base, "outside"), filepath.Join(dir, "out")))
	require.NoError(t, os.Symlink("sub", filepath.Join(dir, "in")))
	require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644))

	r, err := f.open()
	require.NoError(t, err)
	defer r.Close()
	for _, folder := range []string{"", "many"} {
		d, err := r.Open(rootName(folder))
		require.NoError(t, err)
		got, err := readEntries(d, folder, nil)
		require.NoError(t, err)
		d.Close()
		d, err = r.Open(rootName(folder))
		require.NoError(t, err)
		want, err := d.ReadDir(-1)
		require.NoError(t, err)
		d.Close()

		require.Len(t, got, len(want), folder)
		byName := map[string]entry{}
		for _, e := range got {
			byName[e.d.Name()] = e
		}
		for _, w := range want {
			e, ok := byName[w.Name()]
			require.True(t, ok, "%q missing", w.Name())
			wantRel := w.Name()
			if folder != "" {
				wantRel = folder + "/" + w.Name()
			}
			assert.Equal(t, wantRel, e.rel)
			assert.Equal(t, w.Type(), e.d.Type(), w.Name())
			assert.Equal(t, w.IsDir(), e.d.IsDir(), w.Name())
			wi, err := w.Info()
			require.NoError(t, err)
			gi, err := e.d.Info()
			require.NoError(t, err)
			assert.Equal(t, w.Name(), gi.Name())
			assert.Equal(t, wi.Mode(), gi.Mode(), w.Name())
			assert.Equal(t, wi.Size(), gi.Size(), w.Name())
			assert.True(t, wi.ModTime().Equal(gi.ModTime()), w.Name())
			assert.Equal(t, wi.IsDir(), gi.IsDir(), w.Name())
			wm, wc, wino, wok := statKey(wi)
			gm, gc, gino, gok := statKey(gi)
			assert.True(t, wok && gok, w.Name())
			assert.Equal(t, []any{wm, wc, wino}, []any{gm, gc, gino}, w.Name())
		}
	}
}
