// Package linediff compares and merges text line by line: a Myers diff, its
// unified (git-style) rendering, and a three-way merge that never resolves
// colliding changes by guessing. Line endings are kept byte for byte.
package linediff

import "bytes"

// Lines splits text into lines, each keeping its "\n"; a last line without
// one is kept as it is.
func Lines(text []byte) [][]byte {
	var out [][]byte
	for len(text) > 0 {
		i := bytes.IndexByte(text, '\n')
		if i < 0 {
			out = append(out, text)
			break
		}
		out = append(out, text[:i+1])
		text = text[i+1:]
	}
	return out
}

// IsBinary reports whether data looks binary: a NUL byte in its first 8000
// bytes, the test git uses.
func IsBinary(data []byte) bool {
	return bytes.IndexByte(data[:min(len(data), 8000)], 0) >= 0
}

// Op is the kind of an edit.
type Op byte

// The edit kinds.
const (
	Equal  Op = ' '
	Delete Op = '-'
	Insert Op = '+'
)

// Edit is one step of a line diff. A is the line's index in a (Equal and
// Delete), B its index in b (Equal and Insert); the other is -1.
type Edit struct {
	Op   Op
	A, B int
}

// maxCost bounds the Myers search: past this many differing lines the
// region is treated as one block replaced, which bounds the time (O(N·D))
// and the memory kept for the trace-back (O(D²), 8 MB at the bound) of a
// diff of two unrelated files; the script is then correct but not minimal.
const maxCost = 1000

// Diff returns an edit script turning a into b, minimal up to maxCost
// differences (Myers' O(ND) algorithm, with the common prefix and suffix
// trimmed first since edits are usually local).
func Diff(a, b [][]byte) []Edit {
	pre := 0
	for pre < len(a) && pre < len(b) && bytes.Equal(a[pre], b[pre]) {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && bytes.Equal(a[len(a)-1-suf], b[len(b)-1-suf]) {
		suf++
	}
	out := make([]Edit, 0, len(a)+len(b))
	for i := 0; i < pre; i++ {
		out = append(out, Edit{Equal, i, i})
	}
	out = append(out, middle(a[pre:len(a)-suf], b[pre:len(b)-suf], pre, pre)...)
	for i := 0; i < suf; i++ {
		out = append(out, Edit{Equal, len(a) - suf + i, len(b) - suf + i})
	}
	return out
}

// middle diffs a and b (offsets aOff, bOff into the originals) with Myers'
// greedy forward search, keeping each round's frontier to trace the path back.
func middle(a, b [][]byte, aOff, bOff int) []Edit {
	n, m := len(a), len(b)
	if n == 0 || m == 0 {
		return replaceAll(n, m, aOff, bOff)
	}
	limit := min(n+m, maxCost)
	offset := limit + 1
	v := make([]int, 2*limit+3)
	// trace[d] holds v[-d..d] as it was before round d: all the trace-back
	// needs, and a triangle rather than a square of memory.
	var trace [][]int
	found := false
	for d := 0; d <= limit && !found; d++ {
		trace = append(trace, append([]int(nil), v[offset-d:offset+d+1]...))
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || (k != d && v[offset+k-1] < v[offset+k+1]) {
				x = v[offset+k+1] // down: an insertion
			} else {
				x = v[offset+k-1] + 1 // right: a deletion
			}
			y := x - k
			for x < n && y < m && bytes.Equal(a[x], b[y]) {
				x++
				y++
			}
			v[offset+k] = x
			if x >= n && y >= m {
				found = true
				break
			}
		}
	}
	if !found {
		return replaceAll(n, m, aOff, bOff)
	}
	// Walk back from (n, m) through the saved frontiers.
	var rev []Edit
	x, y := n, m
	for d := len(trace) - 1; d > 0; d-- {
		vd := trace[d] // vd[i] is v[i-d]
		at := func(k int) int { return vd[k+d] }
		k := x - y
		var prevK int
		if k == -d || (k != d && at(k-1) < at(k+1)) {
			prevK = k + 1
		} else {
			prevK = k - 1
		}
		prevX := at(prevK)
		prevY := prevX - prevK
		for x > prevX && y > prevY {
			x--
			y--
			rev = append(rev, Edit{Equal, aOff + x, bOff + y})
		}
		if x == prevX {
			y--
			rev = append(rev, Edit{Insert, -1, bOff + y})
		} else {
			x--
			rev = append(rev, Edit{Delete, aOff + x, -1})
		}
	}
	for x > 0 && y > 0 {
		x--
		y--
		rev = append(rev, Edit{Equal, aOff + x, bOff + y})
	}
	out := make([]Edit, len(rev))
	for i, e := range rev {
		out[len(rev)-1-i] = e
	}
	return out
}

func replaceAll(n, m, aOff, bOff int) []Edit {
	out := make([]Edit, 0, n+m)
	for i := 0; i < n; i++ {
		out = append(out, Edit{Delete, aOff + i, -1})
	}
	for j := 0; j < m; j++ {
		out = append(out, Edit{Insert, -1, bOff + j})
	}
	return out
}
