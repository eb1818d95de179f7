package apply

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/agenthost/agenthost/host/orchestrator"
	"github.com/agenthost/agenthost/host/store"
	"github.com/stretchr/testify/assert"
)

// diffByMap is diffManifest as first written: by map lookups, for manifests
// in any order.
func diffByMap(old, new []store.ManifestEntry) Changes {
	o := map[string]store.ManifestEntry{}
	for _, m := range old {
		o[m.Path] = m
	}
	c := Changes{Added: []string{}, Modified: []string{}, Deleted: []string{}}
	seen := map[string]bool{}
	for _, f := range new {
		seen[f.Path] = true
		m, ok := o[f.Path]
		switch {
		case !ok:
			c.Added = append(c.Added, f.Path)
		case !sameEntry(&m, &f):
			c.Modified = append(c.Modified, f.Path)
		}
	}
	for _, m := range old {
		if !seen[m.Path] {
			c.Deleted = append(c.Deleted, m.Path)
		}
	}
	slices.Sort(c.Added)
	slices.Sort(c.Modified)
	slices.Sort(c.Deleted)
	return c
}

// randomManifest is up to n entries over a small set of paths, digests and
// modes, so that two of them share, change and drop paths.
func randomManifest(r *rand.Rand, n int) []store.ManifestEntry {
	var m []store.ManifestEntry
	for i := range n {
		if r.IntN(3) == 0 {
			continue
		}
		m = append(m, store.ManifestEntry{Path: fmt.Sprintf("src/%c/f%d", 'a'+r.IntN(3), i), SHA256: fmt.Sprint(r.IntN(3)), Mode: []uint32{0, 0o644, 0o755}[r.IntN(3)]})
	}
	return m
}

// TestDiffManifestMerges: the merge pass answers as map lookups do, for
// manifests in path order and, sorted first, in any other.
func TestDiffManifestMerges(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 500 {
		old, new := randomManifest(r, 12), randomManifest(r, 12)
		want := diffByMap(old, new)
		assert.Equal(t, want, diffManifest(old, new), "in order: %v → %v", old, new)
		r.Shuffle(len(old), func(i, j int) { old[i], old[j] = old[j], old[i] })
		r.Shuffle(len(new), func(i, j int) { new[i], new[j] = new[j], new[i] })
		shuffled := slices.Clone(new)
		assert.Equal(t, want, diffManifest(old, new), "shuffled: %v → %v", old, new)
		assert.Equal(t, shuffled, new, "the caller's manifest is not reordered")
	}
}

// TestResultManifestOrder: a result becomes a manifest in path order with
// the base files kept out of the sandbox, whatever order it came in.
func TestResultManifestOrder(t *testing.T) {
	base := []store.ManifestEntry{{Path: "a", SHA256: "1"}, {Path: "big.bin", SHA256: "2"}, {Path: "z", SHA256: "3"}}
	res := orchestrator.RunResult{Files: []orchestrator.ResultFile{{Path: "z", SHA256: "9"}, {Path: "a", SHA256: "1"}}, KeptOut: []string{"big.bin", "z"}}
	got := resultManifest(res, base)
	assert.Equal(t, []store.ManifestEntry{{Path: "a", SHA256: "1"}, {Path: "big.bin", SHA256: "2"}, {Path: "z", SHA256: "9"}}, got)
	res.KeptOut = nil
	assert.Equal(t, []store.ManifestEntry{{Path: "a", SHA256: "1"}, {Path: "z", SHA256: "9"}}, resultManifest(res, base))
}
