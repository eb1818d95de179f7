package patch

import (
	"sync"

	"github.com/agenthost/agenthost/plugins/toolpack-patch/internal/outline"
)

// outlineKey names one outline by what it is a function of: the content
// (by its sha256), the language it was parsed as and the symbol cap. Being
// content-addressed, an entry needs no invalidation: a changed file has a
// new hash and so a new key. It is also why one cache may serve every
// workspace a toolpack process is lent: a hit needs the exact bytes, and
// gives what the caller would have computed from them itself, so no
// workspace can see anything of another's.
type outlineKey struct {
	sha        string
	language   string
	maxSymbols int
}

// outlineEntry is what the index derives from a file's bytes besides the
// hash. Symbols is shared between calls and must not be modified.
type outlineEntry struct {
	binary  bool
	symbols []outline.Symbol
}

// maxOutlineEntries bounds each generation of the cache: two generations of
// 50,000 hold the outlines of five maxIndexFiles trees, a few tens of MB at
// the outline's cap of a few symbols per typical file.
const maxOutlineEntries = 50_000

// outlineCache is a bounded, approximately least-recently-used map in two
// generations: entries are added to cur, and when cur is full it becomes
// prev and a fresh cur starts, dropping the old prev. A hit in prev moves
// the entry to cur, so what is used each call survives and what no call
// has asked for over two generations is dropped. It costs one map per
// generation, with none of an exact LRU's list bookkeeping per hit.
type outlineCache struct {
	mu        sync.Mutex
	cur, prev map[outlineKey]outlineEntry
	limit     int
}

func newOutlineCache(limit int) *outlineCache {
	return &outlineCache{cur: map[outlineKey]outlineEntry{}, limit: limit}
}

func (c *outlineCache) get(k outlineKey) (outlineEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.getLocked(k)
}

// getLocked is get for a caller holding c.mu (a batch of lookups).
func (c *outlineCache) getLocked(k outlineKey) (outlineEntry, bool) {
	if e, ok := c.cur[k]; ok {
		return e, true
	}
	e, ok := c.prev[k]
	if ok {
		c.addLocked(k, e)
	}
	return e, ok
}

func (c *outlineCache) put(k outlineKey, e outlineEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.addLocked(k, e)
}

func (c *outlineCache) addLocked(k outlineKey, e outlineEntry) {
	if len(c.cur) >= c.limit {
		c.prev, c.cur = c.cur, make(map[outlineKey]outlineEntry, c.limit)
	}
	c.cur[k] = e
}

// len is the number of entries held (for tests).
func (c *outlineCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.cur) + len(c.prev)
}
