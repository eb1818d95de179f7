package dirfs

import (
	"io/fs"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"
)

// hashCache remembers the sha256 of files by path and stat, the way git's
// index does, so that a listing with hashes of an unchanged tree reads no
// file twice. An entry is trusted only while the file's size, modification
// time, inode and change time are those it was hashed with, and only when
// the file was last modified well before it was hashed: a write within the
// same timestamp tick as the hashing could otherwise go unnoticed (git's
// "racily clean" case).
//
// Entries are kept by folder, then by name: a listing looks up a folder's
// files together, and one small map per folder keeps those lookups on a
// few pages of memory rather than all over one map of the whole tree. (On
// a 2-CPU VM, amid the walk's system calls, a lookup in one map of 10,000
// files cost ~1 µs: a sixth of a warm listing.)
type hashCache struct {
	// mu is read-locked for lookups, which the walk's workers make at
	// once, a folder each.
	mu sync.RWMutex
	// entries maps a folder ("" for the root) to its files' entries by
	// name; n counts the files.
	entries map[string]map[string]hashEntry
	n       int
}

type hashEntry struct {
	size         int64
	mtime, ctime int64
	ino          uint64
	sha          string
}

// racyWindow is how recent a modification may be for its hash to be cached
// (a variable so tests can shrink it).
var racyWindow = 2 * time.Second

// maxHashCacheEntries bounds the cache; past it, it starts over (a tree that
// large is re-hashed rather than tracked without limit).
const maxHashCacheEntries = 200_000

// statKeyer is a FileInfo that gives its stat key itself (a walk's
// entries on Linux) rather than through a Sys of *syscall.Stat_t.
type statKeyer interface {
	statKey() (mtime, ctime int64, ino uint64)
}

func statKey(fi fs.FileInfo) (mtime, ctime int64, ino uint64, ok bool) {
	if k, ok := fi.(statKeyer); ok {
		mtime, ctime, ino = k.statKey()
		return mtime, ctime, ino, true
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, 0, false
	}
	return fi.ModTime().UnixNano(), changeTime(st).UnixNano(), st.Ino, true
}

// get returns the cached hash of rel if fi still matches.
func (c *hashCache) get(rel string, fi fs.FileInfo) (string, bool) {
	dir, name := splitRel(rel)
	c.mu.RLock()
	defer c.mu.RUnlock()
	return match(c.entries[dir][name], fi)
}

// match returns e's hash if e is an entry whose stat key fi still has.
func match(e hashEntry, fi fs.FileInfo) (string, bool) {
	mtime, ctime, ino, ok := statKey(fi)
	if !ok || e.sha == "" || e.size != fi.Size() || e.mtime != mtime || e.ctime != ctime || e.ino != ino {
		return "", false
	}
	return e.sha, true
}

// fill sets the sha of each regular file of list, the entries of one
// folder, found unchanged, under one read lock for the folder (a warm
// listing is all hits), and returns the indexes of the regular files it
// did not find.
func (c *hashCache) fill(list []entry) []int {
	var misses []int
	if len(list) == 0 {
		return nil
	}
	dir, _ := splitRel(list[0].rel)
	c.mu.RLock()
	defer c.mu.RUnlock()
	files := c.entries[dir]
	for i := range list {
		e := &list[i]
		if !e.d.Type().IsRegular() {
			continue
		}
		if info, err := e.d.Info(); err == nil {
			if sha, ok := match(files[e.d.Name()], info); ok {
				e.sha = sha
				continue
			}
		}
		misses = append(misses, i)
	}
	return misses
}

// put caches sha for rel as of fi, unless fi was modified too recently.
func (c *hashCache) put(rel string, fi fs.FileInfo, sha string) {
	mtime, ctime, ino, ok := statKey(fi)
	if !ok || time.Since(time.Unix(0, max(mtime, ctime))) < racyWindow {
		return
	}
	dir, name := splitRel(rel)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil || c.n >= maxHashCacheEntries {
		c.entries, c.n = map[string]map[string]hashEntry{}, 0
	}
	files := c.entries[dir]
	if files == nil {
		files = map[string]hashEntry{}
		c.entries[dir] = files
	}
	if _, ok := files[name]; !ok {
		c.n++
	}
	files[name] = hashEntry{size: fi.Size(), mtime: mtime, ctime: ctime, ino: ino, sha: sha}
}

// splitRel splits a workspace path into its folder ("" for the root) and
// its name.
func splitRel(rel string) (dir, name string) {
	i := strings.LastIndexByte(rel, '/')
	if i < 0 {
		return "", rel
	}
	return rel[:i], rel[i+1:]
}

// hashCached returns the sha256 of regular file rel (info fi from the
// listing), from the cache when the file is unchanged.
func (f *FS) hashCached(r *os.Root, rel string, fi fs.FileInfo) (string, error) {
	if sha, ok := f.hashes.get(rel, fi); ok {
		return sha, nil
	}
	sha, err := hashFile(r, rel)
	if err == nil {
		f.hashes.put(rel, fi, sha)
	}
	return sha, err
}
