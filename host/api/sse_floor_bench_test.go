package api_test

import (
	"bufio"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// bareFrame writes one SSE frame the size and shape of our stream's
// assistant.delta frames (a ~170-byte envelope); text goes in the payload.
func bareFrame(w *bufio.Writer, seq int, text string) error {
	_, err := fmt.Fprintf(w, "id: %d\nevent: assistant.delta\ndata: {\"event\":\"assistant.delta\",\"run_id\":\"run_01JD8Q7ZK3M4N5P6Q7R8S9T0VW\",\"app_id\":\"app_01JD8Q7ZK3M4N5P6Q7R8S9T0VX\",\"seq\":%d,\"ts\":\"%s\",\"payload\":{\"text\":%q}}\n\n",
		seq, seq, time.Now().UTC().Format(time.RFC3339Nano), text)
	return err
}

// bareSSEServer serves GET /?n=N&every=D: N frames, each flushed on its
// own, D apart (0: back to back); paced frames carry their write time in
// Unix nanoseconds as their text. Plain net/http on loopback: no Gin, no
// log, no hub.
func bareSSEServer(b *testing.B) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		every, _ := time.ParseDuration(r.URL.Query().Get("every"))
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		w.WriteHeader(http.StatusOK)
		fl := w.(http.Flusher)
		bw := bufio.NewWriter(w)
		for i := 1; i <= n; i++ {
			if every > 0 {
				time.Sleep(every)
			}
			text := "hello from the agent, a delta "
			if every > 0 {
				text = strconv.FormatInt(time.Now().UnixNano(), 10)
			}
			if bareFrame(bw, i, text) != nil || bw.Flush() != nil {
				return
			}
			fl.Flush()
		}
	}))
	b.Cleanup(srv.Close)
	return srv
}

// readBareSSE reads a bare stream to its end, calling fn with each
// frame's data line as it completes; it returns the frames read. It may
// run off the benchmark's goroutine, so it reports errors with Error.
func readBareSSE(b *testing.B, url string, fn func(data string)) int {
	resp, err := http.Get(url)
	if err != nil {
		b.Error(err)
		return 0
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	n := 0
	var data string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if data != "" {
				n++
				if fn != nil {
					fn(data)
				}
			}
			data = ""
		case strings.HasPrefix(line, "data: "):
			data = line[len("data: "):]
		}
	}
	if err := sc.Err(); err != nil {
		b.Error(err)
	}
	return n
}

// BenchmarkBareSSE is the floor of our event stream: a net/http SSE writer
// flushing each frame on its own and a reader on loopback, frames the size
// of ours. throughput: b.N frames back to back on one stream (events/s);
// paced/runs=N: N streams at once, each 50 frames 10 ms apart, as
// BenchmarkEventDelivery paces them (write → read latency per frame).
func BenchmarkBareSSE(b *testing.B) {
	b.Run("throughput", func(b *testing.B) {
		srv := bareSSEServer(b)
		readBareSSE(b, srv.URL+"/?n=100", nil) // a warm connection
		b.ResetTimer()
		if got := readBareSSE(b, fmt.Sprintf("%s/?n=%d", srv.URL, b.N), nil); got != b.N {
			b.Fatalf("read %d of %d frames", got, b.N)
		}
		b.StopTimer()
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
	})
	for _, runs := range []int{1, 50} {
		b.Run(fmt.Sprintf("paced/runs=%d", runs), func(b *testing.B) {
			srv := bareSSEServer(b)
			const perRun = 50
			url := fmt.Sprintf("%s/?n=%d&every=10ms", srv.URL, perRun)
			var mu sync.Mutex
			var lat []time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				var wg sync.WaitGroup
				for r := 0; r < runs; r++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						local := make([]time.Duration, 0, perRun)
						readBareSSE(b, url, func(data string) {
							at := time.Now()
							_, stamp, ok := strings.Cut(data, `"text":"`)
							ns, err := strconv.ParseInt(strings.TrimSuffix(stamp, `"}}`), 10, 64)
							if !ok || err != nil {
								b.Errorf("frame without a stamp: %s", data)
								return
							}
							local = append(local, at.Sub(time.Unix(0, ns)))
						})
						mu.Lock()
						lat = append(lat, local...)
						mu.Unlock()
					}()
				}
				wg.Wait()
			}
			b.StopTimer()
			reportPercentiles(b, lat, "/event")
		})
	}
}
