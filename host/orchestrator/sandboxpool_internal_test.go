package orchestrator

import (
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
