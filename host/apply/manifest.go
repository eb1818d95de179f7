package apply

import (
	"context"
	"fmt"
	"sort"

	"github.com/agenthost/agenthost/host/linediff"
	"github.com/agenthost/agenthost/host/store"
)

// sameEntry says whether two manifest entries hold the same file (content
// and mode); nil is a missing file.
func sameEntry(a, b *store.ManifestEntry) bool {
	if a == nil || b == nil {
		return a == b
	}
	return normMode(a.Mode) == normMode(b.Mode) && a.SHA256 == b.SHA256
}

func entriesByPath(m []store.ManifestEntry) map[string]*store.ManifestEntry {
	out := make(map[string]*store.ManifestEntry, len(m))
	for i := range m {
		out[m[i].Path] = &m[i]
	}
	return out
}

// mergeManifests merges ours (the run's result) and theirs (the draft head)
// from their common base, file by file: a file only one side changed takes
// that side; a file both changed the same way is kept; a text file both
// changed differently is merged by lines when the changes do not collide.
// Anything else is a conflict, and then merged is nil: a half-merged app is
// never stored. Every decision hashes can make is made by hash; only files
// both sides changed differently are read, and the merged content is stored
// (PutBlob).
func (a *Applier) mergeManifests(ctx context.Context, base, ours, theirs []store.ManifestEntry) ([]store.ManifestEntry, []FileConflict, error) {
	b, o, t := entriesByPath(base), entriesByPath(ours), entriesByPath(theirs)
	paths := map[string]bool{}
	for _, m := range []map[string]*store.ManifestEntry{b, o, t} {
		for p := range m {
			paths[p] = true
		}
	}
	sorted := make([]string, 0, len(paths))
	for p := range paths {
		sorted = append(sorted, p)
	}
	sort.Strings(sorted)
	var merged []store.ManifestEntry
	var conflicts []FileConflict
	for _, p := range sorted {
		bf, of, tf := b[p], o[p], t[p]
		var keep *store.ManifestEntry
		switch {
		case sameEntry(of, bf):
			keep = tf
		case sameEntry(tf, bf), sameEntry(of, tf):
			keep = of
		case of == nil || tf == nil:
			conflicts = append(conflicts, FileConflict{Path: p, Reason: "deleted on one side and changed on the other"})
			continue
		case bf == nil:
			conflicts = append(conflicts, FileConflict{Path: p, Reason: "added on both sides with different content"})
			continue
		default:
			e, fc, err := a.mergeContent(ctx, p, bf, of, tf)
			if err != nil {
				return nil, nil, err
			}
			if fc != nil {
				conflicts = append(conflicts, *fc)
				continue
			}
			keep = e
		}
		if keep != nil {
			merged = append(merged, *keep)
		}
	}
	if len(conflicts) > 0 {
		return nil, conflicts, nil
	}
	return merged, nil, nil
}

// maxMergeBytes bounds each version of a file merged by lines: a merge
// holds all three versions and the result whole, and a line merge of
// bigger files is no text edit a person would want merged unseen. A file
// over it that both sides changed is a conflict, decided without reading.
const maxMergeBytes = 8 << 20

// mergeContent reads one file's three versions and merges them by lines.
func (a *Applier) mergeContent(ctx context.Context, p string, bf, of, tf *store.ManifestEntry) (*store.ManifestEntry, *FileConflict, error) {
	if max(bf.Size, of.Size, tf.Size) > maxMergeBytes {
		return nil, &FileConflict{Path: p, Reason: fmt.Sprintf("changed on both sides and too large to merge by lines (over %d bytes)", maxMergeBytes)}, nil
	}
	data, err := a.st.Blobs(ctx, []string{bf.SHA256, of.SHA256, tf.SHA256})
	if err != nil {
		return nil, nil, fmt.Errorf("read %s to merge: %w", p, err)
	}
	for _, sha := range []string{bf.SHA256, of.SHA256, tf.SHA256} {
		if _, ok := data[sha]; !ok {
			return nil, nil, fmt.Errorf("read %s to merge: content %s is not stored", p, sha)
		}
	}
	bd, od, td := data[bf.SHA256], data[of.SHA256], data[tf.SHA256]
	if linediff.IsBinary(bd) || linediff.IsBinary(od) || linediff.IsBinary(td) {
		return nil, &FileConflict{Path: p, Reason: "a binary file changed on both sides"}, nil
	}
	res := linediff.Merge3(bd, od, td)
	if len(res.Conflicts) > 0 {
		fc := FileConflict{Path: p, Reason: "both sides changed the same lines"}
		for _, c := range res.Conflicts {
			fc.Lines = append(fc.Lines, LineRange{Start: c.BaseStart, End: max(c.BaseEnd, c.BaseStart)})
		}
		return nil, &fc, nil
	}
	mode := of.Mode
	if normMode(of.Mode) == normMode(bf.Mode) {
		mode = tf.Mode
	}
	sha, err := a.st.PutBlob(ctx, res.Merged)
	if err != nil {
		return nil, nil, fmt.Errorf("store merged %s: %w", p, err)
	}
	return &store.ManifestEntry{Path: p, SHA256: sha, Size: int64(len(res.Merged)), Mode: mode}, nil, nil
}
