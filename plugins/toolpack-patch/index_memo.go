package patch

import "sync"

// lastIndex is the last index with outlines a call of this process built.
// A warm index asks it first: a file it holds with the same path, size and
// hash has the same language and outline, and finding it takes a string
// comparison or two, where the outline cache takes a map lookup keyed by
// the hash. Like the outline cache it may serve any workspace: what it
// gives is a function of what the caller listed.
var lastIndex indexMemo

// indexMemo holds the files of one index, in the order listed (by path),
// and the symbol cap they were outlined with.
type indexMemo struct {
	mu         sync.Mutex
	maxSymbols int
	// files is never modified once kept: calls read it concurrently.
	files []indexedFile
}

// load returns a cursor over the files kept, empty when they were
// outlined with another symbol cap.
func (m *indexMemo) load(maxSymbols int) memoCursor {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.maxSymbols != maxSymbols {
		return memoCursor{}
	}
	return memoCursor{files: m.files}
}

// keep makes files, outlined with maxSymbols, the last index. The caller
// must not modify them afterwards.
func (m *indexMemo) keep(maxSymbols int, files []indexedFile) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.maxSymbols, m.files = maxSymbols, files
}

// memoCursor finds the files of a kept index by path, walking it once
// for paths asked in increasing order (a listing's order). Paths asked out
// of order are not found, which costs their lookup in the outline cache,
// nothing more.
type memoCursor struct {
	files []indexedFile
	next  int
}

// find returns the kept file at path p, or nil. It must not be modified.
func (c *memoCursor) find(p string) *indexedFile {
	for c.next < len(c.files) && c.files[c.next].Path < p {
		c.next++
	}
	if c.next < len(c.files) && c.files[c.next].Path == p {
		return &c.files[c.next]
	}
	return nil
}
