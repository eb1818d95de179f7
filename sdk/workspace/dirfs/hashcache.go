package dirfs

import (
	"io/fs"
	"os"
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
type hashCache struct {
	mu      sync.Mutex
	entries map[string]hashEntry
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

func statKey(fi fs.FileInfo) (mtime, ctime int64, ino uint64, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, 0, false
	}
	return fi.ModTime().UnixNano(), changeTime(st).UnixNano(), st.Ino, true
}

// get returns the cached hash of rel if fi still matches.
func (c *hashCache) get(rel string, fi fs.FileInfo) (string, bool) {
	mtime, ctime, ino, ok := statKey(fi)
	if !ok {
		return "", false
	}
	c.mu.Lock()
	e, hit := c.entries[rel]
	c.mu.Unlock()
	if !hit || e.size != fi.Size() || e.mtime != mtime || e.ctime != ctime || e.ino != ino {
		return "", false
	}
	return e.sha, true
}

// put caches sha for rel as of fi, unless fi was modified too recently.
func (c *hashCache) put(rel string, fi fs.FileInfo, sha string) {
	mtime, ctime, ino, ok := statKey(fi)
	if !ok || time.Since(time.Unix(0, max(mtime, ctime))) < racyWindow {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil || len(c.entries) >= maxHashCacheEntries {
		c.entries = map[string]hashEntry{}
	}
	c.entries[rel] = hashEntry{size: fi.Size(), mtime: mtime, ctime: ctime, ino: ino, sha: sha}
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
