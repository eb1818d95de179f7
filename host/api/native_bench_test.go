package api_test

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/plugins/engine-native/fakellm"
	"github.com/stretchr/testify/require"
)

// BenchmarkNativeTokenOverhead is the host's cost per model token: the fake
// provider writes each chunk with its write time in it; the native engine
// streams it to the host, the host logs it and an SSE client reads the
// delta. Latency is chunk written → delta read (p50, p99), on each wire
// format and database; chunks are paced 5 ms apart, as a fast model would.
func BenchmarkNativeTokenOverhead(b *testing.B) {
	srv := fakellm.New()
	defer srv.Close()
	for _, dialect := range []string{"sqlite", "postgres"} {
		for _, provider := range []string{"openai", "anthropic"} {
			b.Run(dialect+"/"+provider, func(b *testing.B) {
				model := fmt.Sprintf("bench-%s-%s", dialect, provider)
				e, ids := startNativeEnv(b, dialect, srv, map[string]string{provider: model})
				const chunks = 100
				srv.Script(model, fakellm.Turn{Stamps: chunks, StampEvery: 5 * time.Millisecond})
				app := e.createApp(e.tokenA)
				var lat []time.Duration
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					var run struct{ ID string }
					require.Equal(b, http.StatusCreated, e.do(e.tokenA, "POST", "/admin/apps/"+app+"/coding-agent/runs",
						map[string]any{"engine": "native", "model_id": ids[provider], "prompt": "stream"}, &run))
					resp := e.openStream(e.tokenA, app, run.ID, "")
					frames, _ := readSSE(b, resp, nil)
					resp.Body.Close()
					for _, f := range frames {
						text, ok := deltaText(b, f)
						if !ok {
							continue
						}
						for _, stamp := range strings.Split(text, ";") {
							if stamp == "" {
								continue
							}
							ns, err := strconv.ParseInt(stamp, 10, 64)
							require.NoError(b, err)
							lat = append(lat, f.at.Sub(time.Unix(0, ns)))
						}
					}
				}
				b.StopTimer()
				require.GreaterOrEqual(b, len(lat), b.N*chunks, "every chunk reached the client")
				reportPercentiles(b, lat, "/token")
			})
		}
	}
}
