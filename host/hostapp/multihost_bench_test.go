package hostapp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host/internal/testenv"
)

// BenchmarkCrossHostDelivery: 50 runs at once on one host, each emitting
// 50 time-stamped deltas 10 ms apart (testenv.PacedStamps), streamed from
// the same host ("same_host") or from another host sharing the database
// ("other_host"). It reports the delivery latency from the engine's emit
// to the client's read, p50 and p99, over every event of the iteration.
// Two real hosts on PostgreSQL.
func BenchmarkCrossHostDelivery(b *testing.B) {
	hosts, appID := startClusterB(b, 2)
	for _, bc := range []struct {
		name   string
		stream *hostProc
	}{{"same_host", hosts[0]}, {"other_host", hosts[1]}} {
		b.Run(bc.name, func(b *testing.B) {
			var lat []float64
			for range b.N {
				lat = append(lat, deliveryRound(b, hosts[0], bc.stream, appID, 50, 50)...)
			}
			slices.Sort(lat)
			b.ReportMetric(lat[len(lat)/2], "p50_ms")
			b.ReportMetric(lat[len(lat)*99/100], "p99_ms")
		})
	}
}

// deliveryRound runs `runs` paced stamping runs on owner, streamed from
// reader, and returns every event's delivery latency in ms.
func deliveryRound(b *testing.B, owner, reader *hostProc, appID string, runs, stamps int) []float64 {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var mu sync.Mutex
	var lat []float64
	var wg sync.WaitGroup
	for range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runID := createRunB(b, owner, appID, testenv.PacedStamps(stamps))
			_, err := streamFrom(ctx, reader, appID, runID, 0, func(e sseEvent) {
				if e.Type != "assistant.delta" {
					return
				}
				now := time.Now().UnixNano()
				var p struct {
					Text string `json:"text"`
				}
				_ = json.Unmarshal(e.Payload, &p)
				ns, err := strconv.ParseInt(strings.TrimSpace(p.Text), 10, 64)
				if err != nil {
					return
				}
				mu.Lock()
				lat = append(lat, float64(now-ns)/1e6)
				mu.Unlock()
			})
			if err != nil {
				b.Error(err)
			}
		}()
	}
	wg.Wait()
	return lat
}

// BenchmarkClusterThroughput: 50 runs per host at once, each saying 500
// deltas, streamed from the next host: events/s delivered to clients by 1
// and by 3 hosts on one PostgreSQL database (the hosts share this
// machine's cores, so this measures the cost of sharing, not the gain of
// more machines).
func BenchmarkClusterThroughput(b *testing.B) {
	for _, n := range []int{1, 3} {
		b.Run(fmt.Sprintf("hosts=%d", n), func(b *testing.B) {
			hosts, appID := startClusterB(b, n)
			const perHost, deltas = 50, 500
			b.ResetTimer()
			start := time.Now()
			for range b.N {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
				for _, err := range streamLoad(ctx, b, hosts, appID, perHost*n, deltas, false) {
					b.Error(err)
				}
				cancel()
			}
			b.ReportMetric(float64(b.N*perHost*n*deltas)/time.Since(start).Seconds(), "events/s")
		})
	}
}

// BenchmarkTakeover: with the default lease (5 s), the time from SIGKILL of
// a host running 5 runs to the first event its successor writes for the
// last of them (the slowest), in seconds.
func BenchmarkTakeover(b *testing.B) {
	var worst time.Duration
	for range b.N {
		hosts, appID := startClusterLease(b, 2, 5*time.Second)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		var wg sync.WaitGroup
		fs := make([]*follower, 5)
		for i := range fs {
			fs[i] = &follower{}
			runID := createRunB(b, hosts[0], appID, "say before\nsleep 60s\nsay never")
			wg.Add(1)
			go func() {
				defer wg.Done()
				_ = fs[i].follow(ctx, []*hostProc{hosts[1]}, appID, runID)
			}()
		}
		for _, f := range fs {
			for len(f.snapshot()) < 3 && ctx.Err() == nil {
				time.Sleep(10 * time.Millisecond)
			}
			f.mu.Lock()
			f.markSeq = f.events[len(f.events)-1].Seq
			f.mu.Unlock()
		}
		killed := time.Now()
		hosts[0].kill()
		wg.Wait()
		cancel()
		for _, f := range fs {
			if f.markedAt.IsZero() {
				b.Fatal("a run was not taken over")
			}
			worst = max(worst, f.markedAt.Sub(killed))
		}
		hosts[1].kill()
	}
	b.ReportMetric(worst.Seconds(), "s_to_takeover")
}
