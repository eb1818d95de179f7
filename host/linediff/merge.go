package linediff

import (
	"bytes"
	"sort"
)

// Conflict is a place where both sides changed base in different ways.
type Conflict struct {
	// BaseStart and BaseEnd are the 1-based inclusive lines of base the
	// changes cover; BaseEnd is BaseStart-1 for two insertions at one point.
	BaseStart, BaseEnd int
	Ours, Theirs       string
}

// MergeResult is a three-way merge.
type MergeResult struct {
	// Merged is the merge. With conflicts it holds conflict markers
	// (<<<<<<< ours, ||||||| base, =======, >>>>>>> theirs) for a human to
	// resolve; it must not be taken as a clean result.
	Merged    []byte
	Conflicts []Conflict
}

// region is one side's change of base lines [start, end) into lines.
type region struct {
	start, end int
	lines      [][]byte
	theirs     bool
}

// regions turns an edit script from base into a side into change regions in
// base coordinates.
func regions(edits []Edit, side [][]byte, theirs bool) []region {
	var out []region
	baseAt := 0
	for i := 0; i < len(edits); {
		if edits[i].Op == Equal {
			baseAt++
			i++
			continue
		}
		r := region{start: baseAt, end: baseAt, theirs: theirs}
		for i < len(edits) && edits[i].Op != Equal {
			if edits[i].Op == Delete {
				r.end++
				baseAt++
			} else {
				r.lines = append(r.lines, side[edits[i].B])
			}
			i++
		}
		out = append(out, r)
	}
	return out
}

// Merge3 merges the changes base→ours and base→theirs. A side equal to base
// yields the other; identical changes are taken once; changes to base lines
// apart from each other merge cleanly. Changes that overlap, insert at the
// same point or touch adjacent lines are conflicts: like git, the merge does
// not guess an order for edits that close together.
func Merge3(base, ours, theirs []byte) MergeResult {
	if bytes.Equal(ours, theirs) || bytes.Equal(theirs, base) {
		return MergeResult{Merged: ours}
	}
	if bytes.Equal(ours, base) {
		return MergeResult{Merged: theirs}
	}
	bl, ol, tl := Lines(base), Lines(ours), Lines(theirs)
	all := append(regions(Diff(bl, ol), ol, false), regions(Diff(bl, tl), tl, true)...)
	sort.SliceStable(all, func(i, j int) bool {
		if all[i].start != all[j].start {
			return all[i].start < all[j].start
		}
		return !all[i].theirs && all[j].theirs
	})
	var out bytes.Buffer
	var conflicts []Conflict
	at := 0
	for i := 0; i < len(all); {
		// A cluster: regions that overlap or touch, from either side.
		start, end := all[i].start, all[i].end
		j := i + 1
		for j < len(all) && all[j].start <= end {
			end = max(end, all[j].end)
			j++
		}
		cluster := all[i:j]
		i = j
		for ; at < start; at++ {
			out.Write(bl[at])
		}
		var sides [2]bool
		for _, r := range cluster {
			sides[btoi(r.theirs)] = true
		}
		ov := apply(bl, start, end, cluster, false)
		tv := apply(bl, start, end, cluster, true)
		switch {
		case !sides[1]:
			out.Write(ov)
		case !sides[0]:
			out.Write(tv)
		case bytes.Equal(ov, tv):
			out.Write(ov)
		default:
			conflicts = append(conflicts, Conflict{BaseStart: start + 1, BaseEnd: end, Ours: string(ov), Theirs: string(tv)})
			writeMarkers(&out, ov, bytes.Join(bl[start:end], nil), tv)
		}
		at = end
	}
	for ; at < len(bl); at++ {
		out.Write(bl[at])
	}
	return MergeResult{Merged: out.Bytes(), Conflicts: conflicts}
}

// apply renders base[start:end) with one side's regions of the cluster.
func apply(base [][]byte, start, end int, cluster []region, theirs bool) []byte {
	var b bytes.Buffer
	at := start
	for _, r := range cluster {
		if r.theirs != theirs {
			continue
		}
		for ; at < r.start; at++ {
			b.Write(base[at])
		}
		for _, l := range r.lines {
			b.Write(l)
		}
		at = r.end
	}
	for ; at < end; at++ {
		b.Write(base[at])
	}
	return b.Bytes()
}

func writeMarkers(out *bytes.Buffer, ours, base, theirs []byte) {
	section := func(marker string, body []byte) {
		out.WriteString(marker)
		out.Write(body)
		if len(body) > 0 && body[len(body)-1] != '\n' {
			out.WriteByte('\n')
		}
	}
	section("<<<<<<< ours\n", ours)
	section("||||||| base\n", base)
	section("=======\n", theirs)
	out.WriteString(">>>>>>> theirs\n")
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
