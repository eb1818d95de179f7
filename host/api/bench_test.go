package api_test

import (
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host/internal/testenv"
	"github.com/stretchr/testify/require"
)

func percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[min(len(s)-1, int(float64(len(s))*p))]
}

func reportPercentiles(b *testing.B, d []time.Duration, unit string) {
	b.ReportMetric(float64(percentile(d, 0.50).Microseconds()), "p50-µs"+unit)
	b.ReportMetric(float64(percentile(d, 0.99).Microseconds()), "p99-µs"+unit)
}

// BenchmarkCreateRun: POST …/runs until the 201, which the host sends once
// run.accepted is in the log (SQLite, mock engine, real plugins).
func BenchmarkCreateRun(b *testing.B) {
	for _, dialect := range []string{"sqlite", "postgres"} {
		b.Run(dialect, func(b *testing.B) {
			e := startEnv(b, dialect)
			app := e.createApp(e.tokenA)
			path := "/admin/apps/" + app + "/coding-agent/runs"
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				start := time.Now()
				var r runOut
				if code := e.do(e.tokenA, "POST", path, map[string]string{"prompt": "say ok"}, &r); code != http.StatusCreated {
					b.Fatalf("create run: %d", code)
				}
				lat = append(lat, time.Since(start))
			}
			b.StopTimer()
			reportPercentiles(b, lat, "")
		})
	}
}

// BenchmarkEventDelivery: the engine stamps each delta with its emit time;
// an SSE client per run measures emit → read, with `runs` runs streaming at
// once (100 events/s each). One round goes untimed first, so that what is
// measured is a host that has run as many at once before. A fresh host's
// first burst also opens its database connections (on PostgreSQL, 20
// opened at once took up to 460 ms each here) and starts its sandboxes,
// and at 1 s this benchmark is one round: that round was what it measured.
func BenchmarkEventDelivery(b *testing.B) {
	for _, dialect := range []string{"sqlite", "postgres"} {
		for _, runs := range []int{1, 50} {
			b.Run(fmt.Sprintf("%s/runs=%d", dialect, runs), func(b *testing.B) {
				e := startEnv(b, dialect)
				app := e.createApp(e.tokenA)
				const perRun = 50
				var mu sync.Mutex
				var lat []time.Duration
				round := func() {
					var wg sync.WaitGroup
					for r := 0; r < runs; r++ {
						run := e.createRun(e.tokenA, app, testenv.PacedStamps(perRun))
						wg.Add(1)
						go func() {
							defer wg.Done()
							resp := e.openStream(e.tokenA, app, run.ID, "")
							defer resp.Body.Close()
							frames, _ := readSSE(b, resp, nil)
							var local []time.Duration
							for _, f := range frames {
								text, ok := deltaText(b, f)
								if !ok {
									continue
								}
								ns, err := strconv.ParseInt(strings.TrimSpace(text), 10, 64)
								require.NoError(b, err)
								local = append(local, f.at.Sub(time.Unix(0, ns)))
							}
							mu.Lock()
							lat = append(lat, local...)
							mu.Unlock()
						}()
					}
					wg.Wait()
				}
				round()
				lat = nil
				b.ResetTimer()
				for range b.N {
					round()
				}
				b.StopTimer()
				reportPercentiles(b, lat, "/event")
			})
		}
	}
}
