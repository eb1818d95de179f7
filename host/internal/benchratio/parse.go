package main

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// module is stripped from package paths: benchmarks are named by the
// package path inside the module ("host/api.BenchmarkMockTurn/sqlite").
const module = "github.com/agenthost/agenthost/"

// results holds every value each benchmark reported, by benchmark (package
// path inside the module, ".", name without the GOMAXPROCS suffix) and
// unit, one value per run (-count).
type results map[string]map[string][]float64

// procsSuffix is the "-N" go test appends to a benchmark's name when
// GOMAXPROCS is not 1.
var procsSuffix = regexp.MustCompile(`-\d+$`)

// resultLine is a benchmark's measurements: the iterations, then value and
// unit pairs.
var resultLine = regexp.MustCompile(`^\s*\d+(\s+[-+0-9.eE]+\s+\S+)+\s*$`)

// parse reads `go test -bench` output (several packages, any -count). A
// benchmark's name and its measurements may be split across lines when
// something else wrote to stdout between them; other lines are ignored.
func parse(r io.Reader) (results, error) {
	out := results{}
	pkg, pending := "", ""
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if p, ok := strings.CutPrefix(line, "pkg: "); ok {
			pkg, pending = strings.TrimPrefix(strings.TrimSpace(p), module), ""
			continue
		}
		if strings.HasPrefix(line, "Benchmark") {
			name, rest, _ := strings.Cut(line, "\t")
			name = strings.TrimSpace(name)
			if f := strings.Fields(name); len(f) > 1 { // "BenchmarkX-2  100  5 ns/op" with spaces only
				name, rest = f[0], strings.TrimPrefix(strings.TrimSpace(line), f[0])
			}
			pending = pkg + "." + procsSuffix.ReplaceAllString(name, "")
			line = rest
		}
		if pending == "" || !resultLine.MatchString(line) {
			continue
		}
		f := strings.Fields(line)
		for i := 1; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return nil, fmt.Errorf("%s: value %q: %w", pending, f[i], err)
			}
			if out[pending] == nil {
				out[pending] = map[string][]float64{}
			}
			out[pending][f[i+1]] = append(out[pending][f[i+1]], v)
		}
		pending = ""
	}
	return out, sc.Err()
}

// median is the median of a benchmark's values of unit over its runs, and
// whether it reported any.
func (r results) median(bench, unit string) (float64, bool) {
	vs := r[bench][unit]
	if len(vs) == 0 {
		return 0, false
	}
	s := append([]float64(nil), vs...)
	sort.Float64s(s)
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2, true
	}
	return s[len(s)/2], true
}

// runs is how many runs of bench reported unit.
func (r results) runs(bench, unit string) int { return len(r[bench][unit]) }
