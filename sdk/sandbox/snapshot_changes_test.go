package sandbox

import (
	"context"
	"fmt"
	"io"
	"testing"

	"github.com/agenthost/agenthost/sdk/internal/pb/sandboxv1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// lister is scripted that also answers snapshots of changes: since "g1"
// it passes changes (its entries) and says so, since anything else it
// passes whole (SnapshotSince).
type lister struct {
	scripted
	asked []string
}

func (l *lister) SnapshotChanges(ctx context.Context, id string, exclude []string, since string, emit func(SnapshotEntry) error) (string, bool, error) {
	l.asked = append(l.asked, since)
	if since != "g1" {
		// Whole, as SnapshotSince: no removals.
		for _, e := range l.entries {
			if e.Removed {
				continue
			}
			if err := emit(e); err != nil {
				return "", false, err
			}
		}
		return "g2", false, nil
	}
	for _, e := range l.entries {
		if err := emit(e); err != nil {
			return "", false, err
		}
	}
	return "", true, nil // no record kept: the end must still say "changes"
}

// TestSnapshotOfChangesOverTheWire: a client asking since a generation
// for changes only gets, from a ChangeLister, the changed file, the
// left-out path and every removed path (several to a message), and the
// end says it was a snapshot of changes even without a generation. A
// request without changes_only, one since a generation the backend no
// longer knows, or one to a backend that is no ChangeLister gets a whole
// snapshot, and the client says so.
func TestSnapshotOfChangesOverTheWire(t *testing.T) {
	entries := []SnapshotEntry{
		{File: File{Path: "b/changed.ts", Mode: 0o600, Data: []byte("new content")}, Size: 11},
		{File: File{Path: "b/link"}, LeftOut: "symlink"},
	}
	for i := range 300 {
		entries = append(entries, SnapshotEntry{File: File{Path: fmt.Sprintf("gone/f%03d", i)}, Removed: true})
	}
	l := &lister{scripted: scripted{entries: entries}}
	conn := serve(t, &server{impl: l})
	c := &Client{conn: conn, c: sandboxv1.NewSandboxClient(conn)}

	var content string
	var leftOut, removed []string
	res, err := c.SnapshotChanges(context.Background(), "sbx", SnapshotOptions{Since: "g1", ChangesOnly: true}, func(f SnapshotFile) error {
		switch {
		case f.Removed:
			removed = append(removed, f.Path)
		case f.LeftOut != "":
			leftOut = append(leftOut, f.Path)
		default:
			require.Equal(t, "b/changed.ts", f.Path)
			require.Equal(t, uint32(0o600), f.Mode)
			b, err := io.ReadAll(f.Content)
			require.NoError(t, err)
			content = string(b)
		}
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, SnapshotResult{ChangesOnly: true}, res)
	assert.Equal(t, "new content", content)
	assert.Equal(t, []string{"b/link"}, leftOut)
	require.Len(t, removed, 300)
	assert.Equal(t, "gone/f000", removed[0])
	assert.Equal(t, "gone/f299", removed[299])

	// On the wire: the removed paths go 256 to a message.
	kinds := onTheWire(t, conn, &sandboxv1.SnapshotRequest{SandboxId: "sbx", Since: "g1", BatchUnchanged: true, ChangesOnly: true})
	assert.Equal(t, []string{"file", "data", "left_out", "removed×256", "removed×44", "end changes_only=true"}, kinds)

	// Not asked for changes only: the whole snapshot, without removals.
	for name, opts := range map[string]SnapshotOptions{"whole": {Since: "g1"}, "unknown generation": {Since: "g0", ChangesOnly: true}} {
		t.Run(name, func(t *testing.T) {
			var paths []string
			res, err := c.SnapshotChanges(context.Background(), "sbx", opts, func(f SnapshotFile) error {
				require.False(t, f.Removed, f.Path)
				paths = append(paths, f.Path)
				return nil
			})
			require.NoError(t, err)
			assert.Equal(t, SnapshotResult{Generation: "g2"}, res)
			assert.Equal(t, []string{"b/changed.ts", "b/link"}, paths)
		})
	}
	assert.Equal(t, []string{"g1", "g1", "g0"}, l.asked, "only a changes_only request reaches SnapshotChanges")

	// A backend that only tracks changes (no ChangeLister) answers a
	// changes_only request whole, and the client says so.
	conn = serve(t, &server{impl: scripted{entries: entries[:2]}})
	c = &Client{conn: conn, c: sandboxv1.NewSandboxClient(conn)}
	res, err = c.SnapshotChanges(context.Background(), "sbx", SnapshotOptions{Since: "g1", ChangesOnly: true}, func(SnapshotFile) error { return nil })
	require.NoError(t, err)
	assert.Equal(t, SnapshotResult{Generation: "g2"}, res)
}

// settler is a lister that vouches for the generations in settled
// (Settler), and records what it was asked.
type settler struct {
	lister
	settled map[string]bool
	askedOf []string
}

func (s *settler) Settled(id, generation string) bool {
	s.askedOf = append(s.askedOf, id+" "+generation)
	return s.settled[generation]
}

// TestSettledOverTheWire: a Settler's word on the generation a snapshot
// returned reaches the client in the snapshot's end; it is not asked when
// there is no generation, and a backend that is no Settler never vouches.
func TestSettledOverTheWire(t *testing.T) {
	entries := []SnapshotEntry{{File: File{Path: "a.txt", Data: []byte("a")}, Size: 1}}
	snapshot := func(c *Client, opts SnapshotOptions) SnapshotResult {
		res, err := c.SnapshotChanges(context.Background(), "sbx", opts, func(SnapshotFile) error { return nil })
		require.NoError(t, err)
		return res
	}
	s := &settler{lister: lister{scripted: scripted{entries: entries}}, settled: map[string]bool{"g2": true}}
	conn := serve(t, &server{impl: s})
	c := &Client{conn: conn, c: sandboxv1.NewSandboxClient(conn)}
	assert.Equal(t, SnapshotResult{Generation: "g2", Settled: true}, snapshot(c, SnapshotOptions{Since: "g0", ChangesOnly: true}))
	assert.Equal(t, []string{"sbx g2"}, s.askedOf)
	kinds := onTheWire(t, conn, &sandboxv1.SnapshotRequest{SandboxId: "sbx", Since: "g0", ChangesOnly: true})
	assert.Equal(t, "end settled=true", kinds[len(kinds)-1])

	// Changes with no generation kept: nothing to vouch for.
	assert.Equal(t, SnapshotResult{ChangesOnly: true}, snapshot(c, SnapshotOptions{Since: "g1", ChangesOnly: true}))
	assert.Len(t, s.askedOf, 2, "not asked without a generation")

	// Not settled: the end says nothing of it.
	s.settled = nil
	assert.Equal(t, SnapshotResult{Generation: "g2"}, snapshot(c, SnapshotOptions{Since: "g0", ChangesOnly: true}))

	// No Settler: never settled.
	conn = serve(t, &server{impl: &lister{scripted: scripted{entries: entries}}})
	c = &Client{conn: conn, c: sandboxv1.NewSandboxClient(conn)}
	assert.Equal(t, SnapshotResult{Generation: "g2"}, snapshot(c, SnapshotOptions{Since: "g0", ChangesOnly: true}))
}
