package core

import (
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNewIDShape: the prefix, then 28 hex digits whose first 12 are the
// time the id was made, in unix milliseconds.
func TestNewIDShape(t *testing.T) {
	before := time.Now().UnixMilli()
	id := NewID("run")
	after := time.Now().UnixMilli()
	rest, ok := strings.CutPrefix(id, "run_")
	require.True(t, ok, id)
	require.Len(t, rest, 28, id)
	raw, err := hex.DecodeString(rest)
	require.NoError(t, err, id)
	var ms int64
	for _, c := range raw[:6] {
		ms = ms<<8 | int64(c)
	}
	assert.GreaterOrEqual(t, ms, before, id)
	assert.LessOrEqual(t, ms, after, id)
}

// TestNewIDOrderAndUniqueness: ids made in a later millisecond sort after
// earlier ones, and a hundred thousand made at once are all different.
func TestNewIDOrderAndUniqueness(t *testing.T) {
	at := time.Now()
	for _, gap := range []time.Duration{time.Millisecond, time.Second, 1000 * time.Hour} {
		first, later := newIDAt("run", at), newIDAt("run", at.Add(gap))
		assert.Less(t, first, later, "an id made %s later sorts after one made earlier", gap)
	}

	seen := make(map[string]bool, 100_000)
	for range 100_000 {
		id := NewID("ev")
		require.False(t, seen[id], "id %s made twice", id)
		seen[id] = true
	}
}
