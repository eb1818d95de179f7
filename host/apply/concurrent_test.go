package apply

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agenthost/agenthost/host/store"
	"github.com/agenthost/agenthost/sdk/sandbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestConcurrentResultsAllLand: twenty runs of one app, all started from
// the same revision, each adding a file of its own, finish at once on two
// hosts (two Appliers over one database): every result lands (applied or
// merged, never refused because the draft head kept moving), and the head
// ends with every file.
func TestConcurrentResultsAllLand(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *store.Store) {
		const runs = 20
		ctx := context.Background()
		f := newApp(t, s, []sandbox.File{{Path: "a.ts", Data: lines(nil)}})
		hosts := []*Applier{New(s), New(s)}
		var wg sync.WaitGroup
		errs := make([]error, runs)
		kinds := make([]string, runs)
		for i := range runs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				out, err := hosts[i%2].ApplyFiles(ctx, f.run(fmt.Sprintf("run%d", i)), []sandbox.File{
					{Path: "a.ts", Data: lines(nil)}, {Path: fmt.Sprintf("f%02d.ts", i), Data: []byte(fmt.Sprintf("%d\n", i))}})
				errs[i] = err
				if err == nil {
					kinds[i] = decodeResult(t, out.Result).Kind
				}
			}()
		}
		wg.Wait()
		for i := range runs {
			require.NoError(t, errs[i], "run%d", i)
			assert.Contains(t, []string{KindApplied, KindMerged}, kinds[i], "run%d", i)
		}
		got := f.files(t, f.head(t))
		assert.Len(t, got, runs+1, "every run's file is in the head")
	})
}

// TestAppLockWaitsAndGivesUp: an app's lock is held by one at a time,
// other apps' are not held up by it, a waiter whose context ends gives up,
// and the lock is dropped once nobody holds or waits for it.
func TestAppLockWaitsAndGivesUp(t *testing.T) {
	var l appLocks
	ctx := context.Background()
	unlock, err := l.lock(ctx, "app1")
	require.NoError(t, err)
	other, err := l.lock(ctx, "app2")
	require.NoError(t, err, "another app is not held up")
	other()
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, err = l.lock(cancelled, "app1")
	assert.ErrorIs(t, err, context.Canceled, "held: the waiter gives up")
	unlock()

	// One holder at a time, however many want it.
	var inside, most atomic.Int32
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 200 {
				u, err := l.lock(ctx, "app1")
				if !assert.NoError(t, err) {
					return
				}
				n := inside.Add(1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				runtime.Gosched()
				inside.Add(-1)
				u()
			}
		}()
	}
	wg.Wait()
	assert.Equal(t, int32(1), most.Load(), "held by one at a time")
	l.mu.Lock()
	defer l.mu.Unlock()
	assert.Empty(t, l.byApp, "no lock kept once nobody holds or waits")
}
