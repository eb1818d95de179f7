package heapfloor

import (
	"runtime"
	"runtime/metrics"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPercentFor(t *testing.T) {
	const mb = 1 << 20
	for _, c := range []struct {
		live, floor uint64
		base, want  int
	}{
		{10 * mb, 64 * mb, 100, 540},  // a cycle at 64 MB of heap
		{40 * mb, 64 * mb, 100, 100},  // past half the floor: the usual percentage
		{100 * mb, 64 * mb, 100, 100}, // past the floor
		{0, 64 * mb, 100, 100},        // no collection yet: nothing known
		{1024, 64 * mb, 100, 10_000},  // bounded
		{10 * mb, 64 * mb, 800, 800},  // never under the process's own
		{16 * mb, 64 * mb, 100, 300},  // 16 MB live, 64 MB goal
		{2 * mb, 16 * mb, 100, 700},   // a smaller floor
		{12 * mb, 16 * mb, 100, 100},  // past half of it
	} {
		assert.Equal(t, c.want, PercentFor(c.live, c.floor, c.base), "live %d floor %d base %d", c.live, c.floor, c.base)
	}
}

// runtimePercent is the GC percentage the runtime has now.
func runtimePercent() int {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return int(s[0].Value.Uint64())
}

// collectUntil runs collections until ok holds (the floor is retuned from
// a finalizer after a collection) or 100 have run.
func collectUntil(t *testing.T, ok func() bool) {
	t.Helper()
	for range 100 {
		if ok() {
			return
		}
		runtime.GC()
		runtime.Gosched()
	}
	require.True(t, ok(), "not after 100 collections")
}

// TestHoldRaisesThePercentageWhileHeld: a held floor over the live heap
// raises the runtime's GC percentage so that a cycle starts at the floor,
// is retuned after collections, follows the highest floor held, and gives
// the process its own percentage back once the last hold is released.
func TestHoldRaisesThePercentageWhileHeld(t *testing.T) {
	if t.Setenv("GOGC", ""); runtimePercent() != 100 {
		t.Fatalf("the test process runs with GC percentage %d, not Go's default", runtimePercent())
	}
	runtime.GC()
	// Floors of about 40 and 4 times the live heap: percentages of about
	// 3,900 and 300 (the test's own garbage moves the live heap a little).
	big, small := 40*liveHeap(), 4*liveHeap()
	releaseBig := Hold(big)
	t.Cleanup(releaseBig)
	collectUntil(t, func() bool { return runtimePercent() > 2000 })
	assert.Equal(t, runtimePercent(), Percent())
	assert.InDelta(t, PercentFor(liveHeap(), big, 100), runtimePercent(), float64(runtimePercent())/4, "a cycle at the floor")

	// The live heap grows tenfold: after a collection the floor is retuned
	// (from the collection's finalizer), to about 260.
	keep := make([]byte, 10*liveHeap())
	collectUntil(t, func() bool { return runtimePercent() < 1000 })
	assert.InDelta(t, PercentFor(liveHeap(), big, 100), runtimePercent(), float64(runtimePercent())/4, "retuned to the live heap")
	runtime.KeepAlive(keep)
	collectUntil(t, func() bool { return runtimePercent() > 2000 })

	releaseSmall := Hold(small)
	t.Cleanup(releaseSmall)
	assert.Greater(t, runtimePercent(), 2000, "the highest floor held applies")
	releaseBig()
	releaseBig() // a second release changes nothing
	collectUntil(t, func() bool { return runtimePercent() < 1000 && runtimePercent() > 100 })
	assert.InDelta(t, PercentFor(liveHeap(), small, 100), runtimePercent(), float64(runtimePercent())/4)

	releaseSmall()
	assert.Equal(t, 100, runtimePercent(), "the process's own percentage is back")
	runtime.GC()
	runtime.GC()
	assert.Equal(t, 100, runtimePercent(), "and stays")
}

// TestHoldLeavesAnOperatorsGOGC: with GOGC set in the environment, or a
// floor of 0, Hold changes nothing.
func TestHoldLeavesAnOperatorsGOGC(t *testing.T) {
	t.Setenv("GOGC", "150")
	release := Hold(1 << 30)
	t.Cleanup(release)
	runtime.GC()
	runtime.GC()
	assert.Equal(t, 100, runtimePercent(), "GOGC is read at start: this process still has 100, and Hold kept it")
	release()
	t.Setenv("GOGC", "")
	release = Hold(0)
	runtime.GC()
	assert.Equal(t, 100, runtimePercent())
	release()
}

func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}
