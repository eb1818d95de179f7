package apply

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"sort"

	"github.com/agenthost/agenthost/host/linediff"
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

// diffManifest lists what changed from a stored revision's manifest to a
// file set, comparing content by sha256.
func diffManifest(old []store.ManifestEntry, new []sandbox.File) Changes {
	o := make(map[string]store.ManifestEntry, len(old))
	for _, m := range old {
		o[m.Path] = m
	}
	c := Changes{Added: []string{}, Modified: []string{}, Deleted: []string{}}
	seen := make(map[string]bool, len(new))
	for _, f := range new {
		seen[f.Path] = true
		m, ok := o[f.Path]
		if !ok {
			c.Added = append(c.Added, f.Path)
			continue
		}
		sum := sha256.Sum256(f.Data)
		if normMode(m.Mode) != normMode(f.Mode) || hex.EncodeToString(sum[:]) != m.SHA256 {
			c.Modified = append(c.Modified, f.Path)
		}
	}
	for _, m := range old {
		if !seen[m.Path] {
			c.Deleted = append(c.Deleted, m.Path)
		}
	}
	sort.Strings(c.Added)
	sort.Strings(c.Modified)
	sort.Strings(c.Deleted)
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

// mergeFiles merges ours (the run's result) and theirs (the draft head) from
// their common base, file by file: a file only one side changed takes that
// side; a file both changed the same way is kept; a text file both changed
// differently is merged by lines when the changes do not collide. Anything
// else is a conflict, and then merged is nil: a half-merged app is never
// stored.
func mergeFiles(base, ours, theirs []sandbox.File) (merged []sandbox.File, conflicts []FileConflict) {
	b, o, t := byPath(base), byPath(ours), byPath(theirs)
	paths := map[string]bool{}
	for _, m := range []map[string]*sandbox.File{b, o, t} {
		for p := range m {
			paths[p] = true
		}
	}
	sorted := make([]string, 0, len(paths))
	for p := range paths {
		sorted = append(sorted, p)
	}
	sort.Strings(sorted)
	for _, p := range sorted {
		bf, of, tf := b[p], o[p], t[p]
		var keep *sandbox.File
		switch {
		case sameFile(of, bf):
			keep = tf
		case sameFile(tf, bf), sameFile(of, tf):
			keep = of
		case of == nil || tf == nil:
			conflicts = append(conflicts, FileConflict{Path: p, Reason: "deleted on one side and changed on the other"})
			continue
		case bf == nil:
			conflicts = append(conflicts, FileConflict{Path: p, Reason: "added on both sides with different content"})
			continue
		case linediff.IsBinary(bf.Data) || linediff.IsBinary(of.Data) || linediff.IsBinary(tf.Data):
			conflicts = append(conflicts, FileConflict{Path: p, Reason: "a binary file changed on both sides"})
			continue
		default:
			res := linediff.Merge3(bf.Data, of.Data, tf.Data)
			if len(res.Conflicts) > 0 {
				fc := FileConflict{Path: p, Reason: "both sides changed the same lines"}
				for _, c := range res.Conflicts {
					fc.Lines = append(fc.Lines, LineRange{Start: c.BaseStart, End: max(c.BaseEnd, c.BaseStart)})
				}
				conflicts = append(conflicts, fc)
				continue
			}
			mode := of.Mode
			if normMode(of.Mode) == normMode(bf.Mode) {
				mode = tf.Mode
			}
			keep = &sandbox.File{Path: p, Mode: mode, Data: res.Merged}
		}
		if keep != nil {
			merged = append(merged, *keep)
		}
	}
	if len(conflicts) > 0 {
		return nil, conflicts
	}
	return merged, nil
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
