package main

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testdata/bench.txt is real `go test -bench -count 3` output of this
// project (short runs on a loaded machine), plugin warnings interleaved
// with the results as go test writes them.
func sample(t *testing.T) results {
	t.Helper()
	f, err := os.Open("testdata/bench.txt")
	require.NoError(t, err)
	defer f.Close()
	r, err := parse(f)
	require.NoError(t, err)
	return r
}

func TestParseRealOutput(t *testing.T) {
	r := sample(t)
	for _, tc := range []struct {
		bench, unit string
		runs        int
		median      float64
	}{
		{"host/pluginmgr.BenchmarkBareGoPluginHop", "ns/op", 3, 222189},
		{"host/pluginmgr.BenchmarkBareGoPluginHop", "allocs/op", 3, 106},
		// name and measurements split by the plugins' warnings
		{"host/orchestrator.BenchmarkToolCallRoundTrip/memory", "ns/op", 3, 3687232},
		{"host/orchestrator.BenchmarkToolCallRoundTrip/postgres", "ns/op", 3, 14202541},
		{"host/api.BenchmarkMockTurn/postgres", "xacts/turn", 3, 23},
		{"host/api.BenchmarkMockTurn/sqlite", "p50-µs", 3, 37860},
		// "runs=50" is part of the name; only the GOMAXPROCS "-2" goes
		{"host/api.BenchmarkEventDelivery/sqlite/runs=50", "p99-µs/event", 3, 412378},
		{"host/api.BenchmarkBareSSE/paced/runs=50", "p99-µs/event", 3, 3153},
		{"plugins/toolpack-patch/internal/diffpatch.BenchmarkApply1MB200Hunks", "MB/s", 3, 171.86},
	} {
		t.Run(tc.bench+" "+tc.unit, func(t *testing.T) {
			assert.Equal(t, tc.runs, r.runs(tc.bench, tc.unit))
			m, ok := r.median(tc.bench, tc.unit)
			assert.True(t, ok)
			assert.InDelta(t, tc.median, m, 1e-9)
		})
	}
	_, ok := r.median("host/api.BenchmarkMockTurn/sqlite", "xacts/turn")
	assert.False(t, ok, "a unit the benchmark never reported")
	assert.NotContains(t, r, "host/api.BenchmarkMockTurn/sqlite-2")
	assert.Equal(t, 18, len(r), "benchmarks: %v", keys(r))
}

func keys(r results) []string {
	var out []string
	for k := range r {
		out = append(out, k)
	}
	return out
}

func TestParseShapes(t *testing.T) {
	in := strings.Join([]string{
		"pkg: github.com/agenthost/agenthost/host/x",
		"BenchmarkA-8   \t     100\t  10 ns/op",
		"BenchmarkA-8   \t     100\t  30 ns/op",
		"BenchmarkA-8   \t     100\t  20 ns/op",
		"BenchmarkA-8   \t     100\t  40 ns/op",
		"BenchmarkSpaces   100   7 ns/op   2.5 things/s", // GOMAXPROCS=1: no suffix
		"BenchmarkSkipped-8",
		"--- SKIP: BenchmarkSkipped",
		"    bench_test.go:12: TEST_DATABASE_URL not set",
		"pkg: other/module/y", // outside the module: the full path
		"BenchmarkB-8   \tsome log line",
		"another log line 12 words",
		"       5\t  1.5e+06 ns/op\t       3 B/op",
		"PASS",
	}, "\n")
	r, err := parse(strings.NewReader(in))
	require.NoError(t, err)
	m, _ := r.median("host/x.BenchmarkA", "ns/op")
	assert.Equal(t, 25.0, m, "median of an even count: the mean of the middle two")
	m, _ = r.median("host/x.BenchmarkSpaces", "things/s")
	assert.Equal(t, 2.5, m)
	m, _ = r.median("other/module/y.BenchmarkB", "ns/op")
	assert.Equal(t, 1.5e6, m)
	assert.NotContains(t, r, "host/x.BenchmarkSkipped")
	assert.Len(t, r, 3)
}

func TestEvaluate(t *testing.T) {
	r := results{
		"a.Ours":  {"ns/op": {300, 500, 400}, "events/s": {9000}},
		"a.Floor": {"ns/op": {100}, "events/s": {20000}},
		"a.Zero":  {"ns/op": {0}},
	}
	ours, floor := metric{"a.Ours", "ns/op"}, &metric{"a.Floor", "ns/op"}
	for _, tc := range []struct {
		name         string
		f            figure
		ratio, oursS string
		mark         string
	}{
		{"ratio within", figure{ours: ours, floor: floor, atMost: true, target: 4}, "4.00×", "400 ns", markPass},
		{"ratio over", figure{ours: ours, floor: floor, atMost: true, target: 3.9}, "4.00×", "400 ns", markFail},
		{"floor taken times", figure{ours: ours, floor: floor, times: 4, atMost: true, target: 1.25}, "1.00×", "400 ns", markPass},
		{"absolute, floor for information", figure{ours: ours, floor: floor, atMost: true, target: 300, absolute: true}, "4.00×", "400 ns", markFail},
		{"absolute lower bound", figure{ours: metric{"a.Ours", "events/s"}, target: 8000}, "-", "9.0k events/s", markPass},
		{"absolute lower bound missed", figure{ours: metric{"a.Ours", "events/s"}, target: 10000}, "-", "9.0k events/s", markFail},
		{"no target", figure{ours: ours, floor: floor, atMost: true}, "4.00×", "400 ns", markInfo},
		{"ours missing", figure{ours: metric{"a.Nope", "ns/op"}, floor: floor, atMost: true, target: 2}, "-", "-", markNotMeasured},
		{"floor missing", figure{ours: ours, floor: &metric{"a.Nope", "ns/op"}, atMost: true, target: 2}, "-", "400 ns", markNotMeasured},
		{"floor zero", figure{ours: ours, floor: &metric{"a.Zero", "ns/op"}, atMost: true, target: 2}, "-", "400 ns", markNotMeasured},
		{"floor missing, absolute", figure{ours: ours, floor: &metric{"a.Nope", "ns/op"}, atMost: true, target: 500, absolute: true}, "-", "400 ns", markPass},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := evaluate(tc.f, r)
			assert.Equal(t, tc.ratio, got.ratio)
			assert.Equal(t, tc.oursS, got.ours)
			assert.Equal(t, tc.mark, got.mark)
		})
	}
}

func TestFormat(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		unit string
		want string
	}{
		{999, "ns/op", "999 ns"},
		{222189, "ns/op", "222.2 µs"},
		{3687232, "ns/op", "3.69 ms"},
		{2.5e9, "ns/op", "2.50 s"},
		{1730, "p50-µs", "1.73 ms"},
		{3153, "p99-µs/event", "3.15 ms"},
		{72745, "events/s", "72.7k events/s"},
		{23, "xacts/turn", "23 xacts/turn"},
		{1820, "pg-cpu-µs/turn", "1.82 ms CPU/turn"},
		{395, "cpu-µs/op", "0.40 ms CPU/op"},
		{38.25, "rss-idle-MB", "38.2 MB"},
		{180, "rss-per-paused-run-KB", "180 KB"},
	} {
		assert.Equal(t, tc.want, format(tc.v, tc.unit))
	}
}

// TestReportRealOutput prints the table for the sample: every figure a
// line, the measured ones held against their targets, the rest not
// measured, and the FAIL count returned.
func TestReportRealOutput(t *testing.T) {
	var out bytes.Buffer
	failed, err := run("testdata/bench.txt", &out)
	require.NoError(t, err)
	t.Log("\n" + out.String())
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, lines, 1+len(figures)+2, "header, a line per figure, a blank line, the summary")
	line := func(prefix string) string {
		for _, l := range lines {
			if strings.HasPrefix(l, prefix) {
				return l
			}
		}
		t.Fatalf("no line %q", prefix)
		return ""
	}
	tool := line("tool call round trip, in-memory log")
	assert.Contains(t, tool, "3.69 ms")
	assert.Contains(t, tool, "4 × 222.2 µs")
	assert.Contains(t, tool, "4.15×")
	assert.True(t, strings.HasSuffix(tool, markFail), tool)
	idle := line("tool call round trip, in-memory log vs the 3 hops")
	assert.Contains(t, idle, "3 × 307.2 µs")
	assert.Contains(t, idle, "4.00×")
	assert.True(t, strings.HasSuffix(idle, markInfo), idle)
	assert.True(t, strings.HasSuffix(line("patch apply"), markInfo))
	assert.True(t, strings.HasSuffix(line("host RSS idle"), markNotMeasured))
	assert.Contains(t, line("20 sessions of mock turns, events/s (SQLite)"), "≥ 10.0k events/s")
	assert.Equal(t, 9, failed)
	assert.Equal(t, "0 pass, 9 FAIL, 2 info, 14 not measured (medians over each benchmark's runs)", lines[len(lines)-1])
}

func TestRunMissingFile(t *testing.T) {
	_, err := run("testdata/nope.txt", &bytes.Buffer{})
	assert.Error(t, err)
}
