package hostapp_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agenthost/agenthost/core"
	"github.com/agenthost/agenthost/host/hostapp"
	"github.com/agenthost/agenthost/host/internal/testenv"
	"github.com/agenthost/agenthost/host/store"
	"github.com/hashicorp/go-hclog"
	"github.com/jmoiron/sqlx"
	_ "github.com/lib/pq"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var binDir string

func TestMain(m *testing.M) {
	testenv.Main(m, &binDir, "cmd/agenthost-engine-mock", "cmd/agenthost-sandbox-local", "host/hostapp/testdata/crashhost",
		"cmd/agenthost", "cmd/agenthost-engine-native", "cmd/agenthost-toolpack-patch")
}

// TestSIGKILLLosesNoCommittedEvent kills the host with SIGKILL while five
// runs stream events, then checks on restart that every event the log had
// acknowledged is there, that no run's seq has a gap, and that the runs are
// settled with a terminal event.
func TestSIGKILLLosesNoCommittedEvent(t *testing.T) {
	for _, dialect := range []string{"sqlite", "postgres"} {
		t.Run(dialect, func(t *testing.T) {
			dataDir := t.TempDir()
			dbURL := filepath.Join(dataDir, "agenthost.db")
			app := ""
			if dialect == "postgres" {
				// The dead host's connections are found by name (see
				// awaitBackendsGone).
				var b [6]byte
				_, _ = rand.Read(b[:])
				app = "crashhost-" + hex.EncodeToString(b[:])
				u, err := url.Parse(testenv.PostgresURL(t))
				require.NoError(t, err)
				q := u.Query()
				q.Set("application_name", app)
				u.RawQuery = q.Encode()
				dbURL = u.String()
			}
			const runs = 5
			cmd := exec.Command(filepath.Join(binDir, "crashhost"), dbURL, dataDir, binDir, testenv.PluginConfigDir(t, "mock", "local"), strconv.Itoa(runs))
			cmd.Stderr = os.Stderr
			out, err := cmd.StdoutPipe()
			require.NoError(t, err)
			require.NoError(t, cmd.Start())
			defer func() { _ = cmd.Process.Kill() }()

			acked := map[string]int64{}
			total := 0
			sc := bufio.NewScanner(out)
			deadline := time.Now().Add(90 * time.Second)
			for total < 3000 && time.Now().Before(deadline) && sc.Scan() {
				f := strings.Fields(sc.Text())
				if len(f) != 3 || f[0] != "ack" {
					continue
				}
				seq, err := strconv.ParseInt(f[2], 10, 64)
				require.NoError(t, err)
				acked[f[1]] = max(acked[f[1]], seq)
				total++
			}
			require.GreaterOrEqual(t, total, 3000, "the host did not stream enough events")
			require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
			_ = cmd.Wait()
			// Keep reading what was already printed: those events were
			// committed before the kill, too.
			for sc.Scan() {
				f := strings.Fields(sc.Text())
				if len(f) == 3 && f[0] == "ack" {
					if seq, err := strconv.ParseInt(f[2], 10, 64); err == nil {
						acked[f[1]] = max(acked[f[1]], seq)
					}
				}
			}
			require.Len(t, acked, runs, "every run streamed")
			if app != "" {
				awaitBackendsGone(t, app)
			}

			ctx := context.Background()
			st, err := store.Open(ctx, dbURL, dataDir)
			require.NoError(t, err)
			defer st.Close()
			lastSeq := map[string]int64{}
			for runID, maxAck := range acked {
				evs, err := st.ListEvents(ctx, runID, "app", 0, 0)
				require.NoError(t, err)
				for i := 0; ; i++ {
					for j, e := range evs {
						require.Equal(t, int64(i*10000+j+1), e.Seq, "run %s: seq gap", runID)
					}
					if len(evs) < 10000 {
						break
					}
					evs, err = st.ListEvents(ctx, runID, "app", int64((i+1)*10000), 0)
					require.NoError(t, err)
				}
				last, err := st.LastEvent(ctx, runID, "app")
				require.NoError(t, err)
				require.NotNil(t, last)
				assert.GreaterOrEqual(t, last.Seq, maxAck, "run %s lost committed events", runID)
				assert.False(t, last.Event.Terminal())
				lastSeq[runID] = last.Seq
			}

			// A new host settles the runs the dead one left behind.
			require.NoError(t, hostapp.RecoverInterrupted(ctx, st, hclog.NewNullLogger()))
			for runID, seq := range lastSeq {
				r, err := st.GetRun(ctx, runID)
				require.NoError(t, err)
				assert.Equal(t, core.RunFailed, r.Status)
				assert.Equal(t, hostapp.CodeHostInterrupted, r.ErrorCode)
				last, err := st.LastEvent(ctx, runID, "app")
				require.NoError(t, err)
				assert.Equal(t, seq+1, last.Seq, "the terminal event follows with no gap")
				assert.Equal(t, core.EventRunFailed, last.Event)
			}
			// The host's plugins died with it.
			assert.Eventually(t, func() bool {
				out, _ := exec.Command("pgrep", "-f", binDir).Output()
				return strings.TrimSpace(string(out)) == ""
			}, 10*time.Second, 50*time.Millisecond, "plugin processes outlived the killed host")
		})
	}
}

// awaitBackendsGone waits until PostgreSQL has no connection left named
// app. A statement the host sent just before it was killed still runs on
// its server process, and one that is its own transaction commits there;
// the process ends only when it finds its client gone. Until then the log
// may still grow, and the checks after a crash would read it too early.
func awaitBackendsGone(t *testing.T, app string) {
	t.Helper()
	admin, err := sqlx.Open("postgres", os.Getenv("TEST_DATABASE_URL"))
	require.NoError(t, err)
	defer admin.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var n int
		require.NoError(t, admin.Get(&n, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1`, app))
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d connections of the killed host are still open", n)
		}
		time.Sleep(10 * time.Millisecond) // polling the server's view; no event to wait on
	}
}
