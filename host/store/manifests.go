package store

import (
	"context"
	"slices"
	"sync"
)

// manifestCacheEntries bounds the revision manifests kept in memory, in
// manifest entries (about 100 bytes each): a few MB.
const manifestCacheEntries = 50_000

// manifestCache keeps revision manifests by revision id. A revision's
// files never change once it is written, so an entry never goes stale, on
// any host; it is dropped only to stay within its bound.
type manifestCache struct {
	mu      sync.Mutex
	byID    map[string][]ManifestEntry
	order   []string // insertion order, oldest first, for eviction
	entries int
}

func (c *manifestCache) get(id string) ([]ManifestEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m, ok := c.byID[id]
	return m, ok
}

func (c *manifestCache) put(id string, m []ManifestEntry) {
	if len(m) > manifestCacheEntries/4 {
		return // one huge app must not flush everything else
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byID == nil {
		c.byID = map[string][]ManifestEntry{}
	}
	if _, ok := c.byID[id]; ok {
		return
	}
	for c.entries+len(m) > manifestCacheEntries && len(c.order) > 0 {
		old := c.order[0]
		c.order = c.order[1:]
		c.entries -= len(c.byID[old])
		delete(c.byID, old)
	}
	c.byID[id] = m
	c.order = append(c.order, id)
	c.entries += len(m)
}

// RevisionManifest returns a revision's files by digest, in path order,
// as GetRevision does, without the revision's row. Manifests are immutable,
// so they are served from memory after the first read: applying a run's
// result against its base costs no query.
func (s *Store) RevisionManifest(ctx context.Context, id string) ([]ManifestEntry, error) {
	if m, ok := s.manifests.get(id); ok {
		return slices.Clone(m), nil
	}
	_, m, err := s.GetRevision(ctx, id)
	if err != nil {
		return nil, err
	}
	s.manifests.put(id, slices.Clone(m))
	return m, nil
}
