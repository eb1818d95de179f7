package dirfs

import (
	"os"
	"slices"
	"strings"
)

// nameCache keeps nothing on macOS, which reads every folder it lists
// (dirnames_linux.go says what Linux keeps).
type nameCache struct{}

// readEntries lists folder d (opened through the root; dir is its path,
// "" for the root), sorted by path. Entries of a folder opened in an
// os.Root come with their lstat already done, relative to the folder's
// descriptor.
func readEntries(d *os.File, dir string, _ *nameCache) ([]entry, error) {
	list, err := d.ReadDir(-1)
	if err != nil {
		return nil, err
	}
	out := make([]entry, len(list))
	for i, e := range list {
		// As path.Join: a listed name is never "", "." or ".." and has
		// no slash.
		rel := e.Name()
		if dir != "" {
			rel = dir + "/" + rel
		}
		out[i] = entry{rel: rel, d: e}
	}
	slices.SortFunc(out, func(a, b entry) int { return strings.Compare(a.rel, b.rel) })
	return out, nil
}
