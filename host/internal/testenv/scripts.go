package testenv

import "strings"

// PacedStamps is a mock engine script that gives a client 300 ms to attach,
// then emits n deltas stamped with their emit time (unix ns), one every
// 10 ms: a delivery benchmark then measures latency, not a backlog.
func PacedStamps(n int) string {
	var b strings.Builder
	b.WriteString("sleep 300ms\n")
	for range n {
		b.WriteString("stamps 1\nsleep 10ms\n")
	}
	return b.String()
}
