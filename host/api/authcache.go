package api

import (
	"sync"
	"time"

	"github.com/agenthost/agenthost/host/store"
)

// principalTTL is how long a token's principal is remembered. Every request
// authenticates; without the cache each one costs a database query (a
// statement prepared anew on SQLite). The price: a token revoked or expired
// in the database keeps working for at most this long.
const principalTTL = 5 * time.Second

// maxCachedPrincipals bounds the cache; past it, it starts over.
const maxCachedPrincipals = 10_000

// principalCache remembers principals by token hash (never the secret).
type principalCache struct {
	mu      sync.Mutex
	entries map[string]cachedPrincipal
}

type cachedPrincipal struct {
	p     store.Principal
	until time.Time
}

func (pc *principalCache) get(hash string) (store.Principal, bool) {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	e, ok := pc.entries[hash]
	if !ok || time.Now().After(e.until) {
		return store.Principal{}, false
	}
	return e.p, true
}

func (pc *principalCache) put(hash string, p store.Principal) {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if pc.entries == nil || len(pc.entries) >= maxCachedPrincipals {
		pc.entries = map[string]cachedPrincipal{}
	}
	pc.entries[hash] = cachedPrincipal{p: p, until: time.Now().Add(principalTTL)}
}
