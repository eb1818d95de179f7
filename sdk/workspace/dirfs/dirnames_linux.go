package dirfs

import (
	"sync"
	"time"
)

// nameCache remembers the names in each folder a listing read, by the
// folder's stat, so that listing an unchanged tree again lstat's every
// entry (a file's change shows only there) but reads no folder (getdents,
// and sorting what it gives, were a fifth of such a listing). A folder's
// modification and change times move whenever a name is added to it,
// removed from it or renamed in it; its change time no call can set back.
// As with hashCache, a folder modified within racyWindow of being read is
// not kept: a change in the same timestamp tick as the read could
// otherwise go unnoticed.
type nameCache struct {
	mu      sync.Mutex
	folders map[string]folderNames
	// n counts the names held in all folders.
	n int
}

// dirKey is what a folder's names are kept by.
type dirKey struct {
	dev, ino     uint64
	mtime, ctime int64
}

// folderNames are the paths of a folder's entries, sorted, as of key.
type folderNames struct {
	key  dirKey
	rels []string
}

// get returns the paths of folder dir's entries if it still has key. They
// are shared and must not be modified.
func (c *nameCache) get(dir string, key dirKey) ([]string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f, ok := c.folders[dir]
	if !ok || f.key != key {
		return nil, false
	}
	return f.rels, true
}

// put keeps rels, the sorted paths of folder dir's entries read after its
// stat was key, unless the folder was modified too recently.
func (c *nameCache) put(dir string, key dirKey, rels []string) {
	if time.Since(time.Unix(0, max(key.mtime, key.ctime))) < racyWindow {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.folders == nil || c.n+len(rels) > maxHashCacheEntries {
		c.folders, c.n = map[string]folderNames{}, 0
	}
	c.n += len(rels) - len(c.folders[dir].rels)
	c.folders[dir] = folderNames{key: key, rels: rels}
}
