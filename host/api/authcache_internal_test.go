package api

import (
	"testing"
	"time"

	"github.com/agenthost/agenthost/host/store"
	"github.com/stretchr/testify/assert"
)

func TestPrincipalCache(t *testing.T) {
	var pc principalCache
	_, ok := pc.get("h1")
	assert.False(t, ok)
	p := store.Principal{TenantID: "t1", UserID: "u1", Scopes: []string{"admin"}}
	pc.put("h1", p)
	got, ok := pc.get("h1")
	assert.True(t, ok)
	assert.Equal(t, p, got)

	// Past its TTL an entry is not used: the database is asked again.
	pc.mu.Lock()
	e := pc.entries["h1"]
	e.until = time.Now().Add(-time.Millisecond)
	pc.entries["h1"] = e
	pc.mu.Unlock()
	_, ok = pc.get("h1")
	assert.False(t, ok)

	// Bounded: a full cache starts over instead of growing.
	for i := range maxCachedPrincipals + 1 {
		pc.put(string(rune(i)), p)
	}
	assert.LessOrEqual(t, len(pc.entries), maxCachedPrincipals)
}
