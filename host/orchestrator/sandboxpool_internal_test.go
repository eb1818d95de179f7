package orchestrator

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestPoolNeverDisplacesASandboxInUse: runs A and B of one chat ran at once
// (B in a fresh sandbox); A came back, C took A's sandbox, then B comes
// back. B's return must not stop A's sandbox under C; when C ends, B's idle
// one is the one to stop.
func TestPoolNeverDisplacesASandboxInUse(t *testing.T) {
	p := sandboxPool{byKey: map[string]*warmSandbox{}}
	now := time.Now()
	a := &warmSandbox{ref: &sandboxRef{id: "sbx_a"}, inUse: true}
	b := &warmSandbox{ref: &sandboxRef{id: "sbx_b"}, inUse: true}

	assert.Nil(t, p.put("chat-1", a, now), "A comes back to an empty pool")
	a.inUse = true // C takes it (takeWarm)
	assert.Nil(t, p.put("chat-1", b, now), "B comes back while C uses A's sandbox: nothing is stopped")
	assert.Same(t, b, p.put("chat-1", a, now), "C ends: now the idle one, B's, is displaced")
	assert.Nil(t, p.put("chat-1", a, now), "putting back the kept one displaces nothing")
	assert.False(t, a.inUse)
	assert.Same(t, a, p.byKey["chat-1"])
}

// TestPoolEvictsLeastRecentlyUsedServers: past the cap, the idle sandboxes
// holding an agent server that went idle first are taken out; ones in use
// and ones without a server are neither taken nor counted.
func TestPoolEvictsLeastRecentlyUsedServers(t *testing.T) {
	p := sandboxPool{byKey: map[string]*warmSandbox{}}
	now := time.Now()
	server := func(id string) *warmSandbox { return &warmSandbox{ref: &sandboxRef{id: id}, server: true} }
	oldest, middle, newest := server("sbx_old"), server("sbx_mid"), server("sbx_new")
	plain := &warmSandbox{ref: &sandboxRef{id: "sbx_plain"}}
	busy := server("sbx_busy")
	p.put("chat-plain", plain, now.Add(-time.Hour))
	p.put("chat-old", oldest, now.Add(-3*time.Minute))
	p.put("chat-mid", middle, now.Add(-2*time.Minute))
	p.put("chat-new", newest, now.Add(-time.Minute))
	p.put("chat-busy", busy, now.Add(-time.Hour))
	busy.inUse = true // a run took it

	assert.Empty(t, p.evictServers(3, 0), "three idle servers fit a cap of three")
	assert.Equal(t, []*warmSandbox{oldest, middle}, p.evictServers(1, 0), "least recently used first")
	assert.Len(t, p.byKey, 3, "the plain, the busy and the newest stay")
	assert.Same(t, newest, p.byKey["chat-new"])
	assert.Equal(t, []*warmSandbox{newest}, p.evictServers(0, 0))
	assert.Same(t, plain, p.byKey["chat-plain"])
	assert.Same(t, busy, p.byKey["chat-busy"])
	// A run planned on an evicted sandbox must not reuse its id.
	for _, id := range []string{"sbx_old", "sbx_mid", "sbx_new"} {
		assert.Contains(t, p.retired, id)
	}
	assert.NotContains(t, p.retired, "sbx_plain")
}

// TestPoolRetiresDisplacedSandboxes: a sandbox displaced from the pool is
// remembered as retired (for a while), so no fresh sandbox takes its id.
func TestPoolRetiresDisplacedSandboxes(t *testing.T) {
	p := sandboxPool{byKey: map[string]*warmSandbox{}}
	now := time.Now()
	a := &warmSandbox{ref: &sandboxRef{id: "sbx_a"}}
	b := &warmSandbox{ref: &sandboxRef{id: "sbx_b"}}
	p.put("chat-1", a, now)
	assert.Same(t, a, p.put("chat-1", b, now))
	assert.Contains(t, p.retired, "sbx_a")
	assert.NotContains(t, p.retired, "sbx_b")
	// Old entries are forgotten when new ones come.
	p.retire(&warmSandbox{ref: &sandboxRef{id: "sbx_c"}}, now.Add(retiredFor+time.Minute))
	assert.NotContains(t, p.retired, "sbx_a")
	assert.Contains(t, p.retired, "sbx_c")
}

// TestPoolEvictsServersOverTheMemoryBudget: while the idle agent servers'
// memory passes the budget, the least recently used go; servers in use
// neither count nor go.
func TestPoolEvictsServersOverTheMemoryBudget(t *testing.T) {
	p := sandboxPool{byKey: map[string]*warmSandbox{}}
	now := time.Now()
	server := func(id string, rss int64) *warmSandbox {
		return &warmSandbox{ref: &sandboxRef{id: id}, server: true, rss: rss}
	}
	old, mid, fresh, busy := server("sbx_old", 300), server("sbx_mid", 300), server("sbx_new", 300), server("sbx_busy", 5000)
	p.put("chat-old", old, now.Add(-3*time.Minute))
	p.put("chat-mid", mid, now.Add(-2*time.Minute))
	p.put("chat-new", fresh, now.Add(-time.Minute))
	p.put("chat-busy", busy, now)
	busy.inUse = true

	assert.Empty(t, p.evictServers(math.MaxInt, 900), "900 bytes fit a 900-byte budget")
	assert.Equal(t, []*warmSandbox{old, mid}, p.evictServers(math.MaxInt, 400), "the oldest go until the rest fit")
	assert.Same(t, fresh, p.byKey["chat-new"])
	assert.Same(t, busy, p.byKey["chat-busy"])
	assert.Contains(t, p.retired, "sbx_old")
}
