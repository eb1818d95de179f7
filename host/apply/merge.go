package apply

import (
	"bytes"
	"slices"
	"sort"
	"strings"

	"github.com/agenthost/agenthost/host/store"
	"github.com/agenthost/agenthost/sdk/sandbox"
)

// FileConflict is a file both sides changed in ways that do not combine.
type FileConflict struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
	// Lines are the 1-based line ranges of the base version where the
	// changes collide (text files only).
	Lines []LineRange `json:"lines,omitempty"`
}

// LineRange is an inclusive range of lines.
type LineRange struct {
	Start int `json:"start"`
	End   int `json:"end"`
}

// Changes counts what a revision changed against its parent.
type Changes struct {
	Added    []string `json:"added"`
	Modified []string `json:"modified"`
	Deleted  []string `json:"deleted"`
}

// Empty reports whether nothing changed.
func (c Changes) Empty() bool { return len(c.Added)+len(c.Modified)+len(c.Deleted) == 0 }

func byPath(files []sandbox.File) map[string]*sandbox.File {
	m := make(map[string]*sandbox.File, len(files))
	for i := range files {
		m[files[i].Path] = &files[i]
	}
	return m
}

func sameFile(a, b *sandbox.File) bool {
	if a == nil || b == nil {
		return a == b
	}
	return normMode(a.Mode) == normMode(b.Mode) && bytes.Equal(a.Data, b.Data)
}

// normMode treats 0 as the default 0644 the store writes for it.
func normMode(m uint32) uint32 {
	if m == 0 {
		return 0o644
	}
	return m & 0o777
}

// diffManifest lists what changed from one manifest to another, comparing
// content by sha256. Manifests come in path order (the store's, a
// result's): one merge pass, nothing per unchanged file but a comparison.
func diffManifest(old, new []store.ManifestEntry) Changes {
	inOrder := func(a, b store.ManifestEntry) int { return strings.Compare(a.Path, b.Path) }
	if !slices.IsSortedFunc(old, inOrder) || !slices.IsSortedFunc(new, inOrder) {
		old, new = slices.Clone(old), slices.Clone(new)
		slices.SortFunc(old, inOrder)
		slices.SortFunc(new, inOrder)
	}
	c := Changes{Added: []string{}, Modified: []string{}, Deleted: []string{}}
	i, j := 0, 0
	for i < len(old) || j < len(new) {
		switch {
		case j == len(new) || (i < len(old) && old[i].Path < new[j].Path):
			c.Deleted = append(c.Deleted, old[i].Path)
			i++
		case i == len(old) || new[j].Path < old[i].Path:
			c.Added = append(c.Added, new[j].Path)
			j++
		default:
			if !sameEntry(&old[i], &new[j]) {
				c.Modified = append(c.Modified, new[j].Path)
			}
			i++
			j++
		}
	}
	return c
}

// diffSets lists what changed from old to new.
func diffSets(old, new []sandbox.File) Changes {
	o, n := byPath(old), byPath(new)
	c := Changes{Added: []string{}, Modified: []string{}, Deleted: []string{}}
	for p, nf := range n {
		of, ok := o[p]
		switch {
		case !ok:
			c.Added = append(c.Added, p)
		case !sameFile(of, nf):
			c.Modified = append(c.Modified, p)
		}
	}
	for p := range o {
		if _, ok := n[p]; !ok {
			c.Deleted = append(c.Deleted, p)
		}
	}
	sort.Strings(c.Added)
	sort.Strings(c.Modified)
	sort.Strings(c.Deleted)
	return c
}

// PathChange is one file that differs between two file sets.
type PathChange struct {
	Path string `json:"path"`
	// Status is added, modified or deleted.
	Status string `json:"status"`
}

// ChangedPaths lists the files that differ from old to new, in path order.
func ChangedPaths(old, new []sandbox.File) []PathChange {
	c := diffSets(old, new)
	out := make([]PathChange, 0, len(c.Added)+len(c.Modified)+len(c.Deleted))
	for _, p := range c.Added {
		out = append(out, PathChange{p, "added"})
	}
	for _, p := range c.Modified {
		out = append(out, PathChange{p, "modified"})
	}
	for _, p := range c.Deleted {
		out = append(out, PathChange{p, "deleted"})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}
