package linediff

import (
	"bytes"
	"fmt"
	"strings"
)

// Unified renders the change from a to b as a git-style unified diff with
// context lines of context: "--- a/old", "+++ b/new" ("/dev/null" for an
// empty path: a created or deleted file), "@@ -l,s +l,s @@" hunks and
// "\ No newline at end of file" markers, which git apply accepts. Equal
// inputs give "".
func Unified(oldPath, newPath string, a, b []byte, context int) string {
	if bytes.Equal(a, b) && oldPath == newPath {
		return ""
	}
	al, bl := Lines(a), Lines(b)
	edits := Diff(al, bl)
	var sb strings.Builder
	from, to := "/dev/null", "/dev/null"
	if oldPath != "" {
		from = "a/" + oldPath
	}
	if newPath != "" {
		to = "b/" + newPath
	}
	fmt.Fprintf(&sb, "--- %s\n+++ %s\n", from, to)
	for _, r := range hunks(edits, context) {
		writeHunk(&sb, edits, r[0], r[1], al, bl)
	}
	return sb.String()
}

// hunks groups edits into hunks: each change with up to context equal lines
// around it, changes closer than 2*context lines sharing one hunk.
func hunks(edits []Edit, context int) [][2]int {
	var out [][2]int
	i := 0
	for i < len(edits) {
		for i < len(edits) && edits[i].Op == Equal {
			i++
		}
		if i == len(edits) {
			break
		}
		start := max(0, i-context)
		end := i
		for end < len(edits) {
			if edits[end].Op != Equal {
				end++
				continue
			}
			run := end
			for run < len(edits) && edits[run].Op == Equal {
				run++
			}
			if run == len(edits) || run-end > 2*context {
				end = min(end+context, len(edits))
				break
			}
			end = run
		}
		out = append(out, [2]int{start, end})
		i = end
	}
	return out
}

func writeHunk(sb *strings.Builder, edits []Edit, start, end int, a, b [][]byte) {
	// Lines of each side before the hunk: an empty side is numbered by the
	// line it follows (git's convention, 0 at the top).
	aBefore, bBefore := 0, 0
	for _, e := range edits[:start] {
		if e.Op != Insert {
			aBefore++
		}
		if e.Op != Delete {
			bBefore++
		}
	}
	aN, bN := 0, 0
	for _, e := range edits[start:end] {
		if e.Op != Insert {
			aN++
		}
		if e.Op != Delete {
			bN++
		}
	}
	fmt.Fprintf(sb, "@@ -%s +%s @@\n", rangeOf(aBefore, aN), rangeOf(bBefore, bN))
	for _, e := range edits[start:end] {
		var line []byte
		if e.Op == Insert {
			line = b[e.B]
		} else {
			line = a[e.A]
		}
		sb.WriteByte(byte(e.Op))
		sb.Write(line)
		if len(line) == 0 || line[len(line)-1] != '\n' {
			sb.WriteString("\n\\ No newline at end of file\n")
		}
	}
}

// rangeOf renders a hunk side: before lines precede it, n lines long.
func rangeOf(before, n int) string {
	switch n {
	case 0:
		return fmt.Sprintf("%d,0", before)
	case 1:
		return fmt.Sprintf("%d", before+1)
	}
	return fmt.Sprintf("%d,%d", before+1, n)
}
