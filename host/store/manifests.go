package store

import (
	"context"
	"slices"
	"sync"
)

// manifestCacheEntries bounds the revision manifests kept in memory, in
// manifest entries (about 100 bytes each): a few MB.
const manifestCacheEntries = 50_000

// cachedManifest is a revision's whole manifest and how it is stored.
type cachedManifest struct {
	entries []ManifestEntry
	// base is the revision the stored rows are a delta against ("": the
	// rows are the whole manifest).
	base string
}

// manifestCache keeps revision manifests by revision id. A revision's
// files never change once it is written, so an entry never goes stale, on
// any host; it is dropped only to stay within its bound.
type manifestCache struct {
	mu      sync.Mutex
	byID    map[string]cachedManifest
	order   []string // insertion order, oldest first, for eviction
	entries int
}

func (c *manifestCache) get(id string) ([]ManifestEntry, bool) {
	m, ok := c.getWithBase(id)
	return m.entries, ok
}

func (c *manifestCache) getWithBase(id string) (cachedManifest, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m, ok := c.byID[id]
	return m, ok
}

func (c *manifestCache) put(id string, m []ManifestEntry, base string) {
	if len(m) > manifestCacheEntries/4 {
		return // one huge app must not flush everything else
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byID == nil {
		c.byID = map[string]cachedManifest{}
	}
	if _, ok := c.byID[id]; ok {
		return
	}
	for c.entries+len(m) > manifestCacheEntries && len(c.order) > 0 {
		old := c.order[0]
		c.order = c.order[1:]
		c.entries -= len(c.byID[old].entries)
		delete(c.byID, old)
	}
	c.byID[id] = cachedManifest{entries: m, base: base}
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
	row, m, err := s.getRevision(ctx, id)
	if err != nil {
		return nil, err
	}
	s.manifests.put(id, slices.Clone(m), row.ManifestBase.String)
	return m, nil
}

// Delta manifests. A revision's manifest rows are either the whole manifest
// or, when it differs little from a whole one (its base), only the entries
// new or changed against the base plus the base's paths it dropped. The
// base is always a whole manifest, so a read joins two revisions' rows,
// never a chain. Each delta is against the base, not the parent, so it
// grows as an app's revisions drift from the base; past deltaShare of the
// manifest the next revision is written whole and becomes the next base.

// deltaShare: a delta is written while it holds at most 1/deltaShare of the
// new manifest's entries (changed rows plus dropped paths).
const deltaShare = 4

// revisionDelta is how a new revision's manifest is written.
type revisionDelta struct {
	// base is the whole revision the delta is against; "": write whole.
	base string
	// stored, for a revision written whole, are digests named by
	// manifests already stored (the parent's and the base's), whose
	// contents are therefore stored. A delta needs none: its entries the
	// base does not hold are exactly changed.
	stored map[string]bool
	// changed are the entries new or different from the base's; dropped
	// the base's paths the revision does not have.
	changed []ManifestEntry
	dropped []string
}

// planDelta decides how to write files (sorted by path), a child of
// parentID, from the manifests in memory; it reads nothing. The base is the
// parent's base, or the parent when that is whole. Without the parent's or
// the base's manifest in memory (another host wrote them) the revision is
// written whole. A warm turn that changed one file of a big app costs one
// pass over both manifests and nothing per unchanged file.
func (s *Store) planDelta(parentID string, files []ManifestEntry) revisionDelta {
	if parentID == "" {
		return revisionDelta{}
	}
	parent, ok := s.manifests.getWithBase(parentID)
	if !ok {
		return revisionDelta{}
	}
	baseID, base := parentID, parent.entries
	if parent.base != "" {
		m, ok := s.manifests.get(parent.base)
		if !ok {
			return revisionDelta{stored: storedDigests(parent.entries)}
		}
		baseID, base = parent.base, m
	}
	whole := func() revisionDelta {
		if parent.base == "" {
			return revisionDelta{stored: storedDigests(parent.entries)}
		}
		return revisionDelta{stored: storedDigests(parent.entries, base)}
	}
	var d revisionDelta
	limit := len(files) / deltaShare
	// Both sorted by path: one merge pass.
	i, j := 0, 0
	for i < len(files) || j < len(base) {
		if len(d.changed)+len(d.dropped) > limit {
			return whole() // too different
		}
		switch {
		case j == len(base) || (i < len(files) && files[i].Path < base[j].Path):
			d.changed = append(d.changed, files[i])
			i++
		case i == len(files) || base[j].Path < files[i].Path:
			d.dropped = append(d.dropped, base[j].Path)
			j++
		default:
			if f, b := files[i], base[j]; f.SHA256 != b.SHA256 || storedMode(f.Mode) != b.Mode {
				d.changed = append(d.changed, f)
			}
			i++
			j++
		}
	}
	if len(d.changed)+len(d.dropped) > limit {
		return whole()
	}
	d.base = baseID
	return d
}

// storedDigests is the set of digests the manifests name.
func storedDigests(manifests ...[]ManifestEntry) map[string]bool {
	n := 0
	for _, m := range manifests {
		n += len(m)
	}
	set := make(map[string]bool, n)
	for _, m := range manifests {
		for _, e := range m {
			set[e.SHA256] = true
		}
	}
	return set
}

// unstored narrows what a revision written by d names to what may not be
// stored yet: the digests of byDigest (a manifest whose contents must be
// stored already) to check, and the contents of bySHA (contents that came
// with the files) to store if missing. A delta's entries the base holds are
// stored; of a whole revision, those a stored manifest names.
func (d revisionDelta) unstored(byDigest []ManifestEntry, bySHA map[string][]byte) ([]string, map[string][]byte) {
	var shas []string
	if d.base != "" {
		need := make(map[string]bool, len(d.changed))
		for _, e := range d.changed {
			if !need[e.SHA256] {
				need[e.SHA256] = true
				if byDigest != nil {
					shas = append(shas, e.SHA256)
				}
			}
		}
		if len(bySHA) == 0 {
			return shas, bySHA
		}
		out := make(map[string][]byte, len(need))
		for sha := range need {
			if data, ok := bySHA[sha]; ok {
				out[sha] = data
			}
		}
		return shas, out
	}
	for _, e := range byDigest {
		if !d.stored[e.SHA256] {
			shas = append(shas, e.SHA256)
		}
	}
	if len(d.stored) == 0 || len(bySHA) == 0 {
		return shas, bySHA
	}
	out := make(map[string][]byte, len(bySHA))
	for sha, data := range bySHA {
		if !d.stored[sha] {
			out[sha] = data
		}
	}
	return shas, out
}

// manifestSource is a derived table (alias m: revision_id, path,
// blob_sha256, mode) of one revision's manifest, whole or delta: its own
// rows, and for a delta the base's rows it neither replaced nor dropped.
// onePath narrows both halves to one path (one more argument each). Its
// arguments come from manifestArgs.
func manifestSource(onePath bool) string {
	own, inBase := ``, ``
	if onePath {
		own, inBase = ` AND f.path = ?`, ` AND f.path = ?`
	}
	return `(SELECT f.revision_id, f.path, f.blob_sha256, f.mode FROM revision_files f WHERE f.revision_id = ?` + own + `
 UNION ALL
 SELECT r.id, f.path, f.blob_sha256, f.mode FROM revisions r JOIN revision_files f ON f.revision_id = r.manifest_base` + inBase + `
 WHERE r.id = ?
 AND NOT EXISTS (SELECT 1 FROM revision_files o WHERE o.revision_id = r.id AND o.path = f.path)
 AND NOT EXISTS (SELECT 1 FROM revision_drops d WHERE d.revision_id = r.id AND d.path = f.path)) m`
}

// manifestArgs are manifestSource's arguments for a revision (and path,
// when onePath).
func manifestArgs(revisionID string, path ...string) []any {
	if len(path) == 0 {
		return []any{revisionID, revisionID}
	}
	return []any{revisionID, path[0], path[0], revisionID}
}
