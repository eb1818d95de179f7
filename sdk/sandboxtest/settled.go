package sandboxtest

import (
	"context"
	"testing"
	"time"

	"github.com/agenthost/agenthost/sdk/sandbox"
	"github.com/agenthost/agenthost/sdk/workspace"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// snapSettled takes a snapshot of changes since gen and returns its
// generation and whether the backend vouched that it began settled.
func (k *kit) snapSettled(t *testing.T, id, gen string) (string, bool) {
	t.Helper()
	res, err := k.c.SnapshotChanges(context.Background(), id, sandbox.SnapshotOptions{Since: gen, ChangesOnly: true}, func(sandbox.SnapshotFile) error {
		return nil
	})
	require.NoError(t, err)
	return res.Generation, res.Settled
}

// testSettled: a backend never vouches that a sandbox is settled
// (sandbox.Settler) while a process a command left behind still runs in
// it: the host would then take its files as final and miss what that
// process writes. With Options.Settles, it does vouch when nothing ran or
// what ran has ended.
func (k *kit) testSettled(t *testing.T) {
	ctx := context.Background()
	id, info := k.createWith(t, map[string]string{"a.txt": "alpha\n"})
	ws := k.c.Workspace(id)
	gen, settled := k.snapSettled(t, id, info.SnapshotGeneration)
	if k.opts.Settles {
		assert.True(t, settled, "nothing ever ran in the sandbox")
	}
	res, err := ws.Exec(ctx, workspace.ExecRequest{Argv: []string{"sh", "-c", "echo done > ran.txt"}})
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode, string(res.Stderr))
	if k.opts.Settles {
		// A backend may see the command's last processes go a moment
		// after it answered.
		assert.Eventually(t, func() bool {
			gen, settled = k.snapSettled(t, id, gen)
			return settled
		}, promptly, 20*time.Millisecond, "the command ended and left nothing")
	}

	// A process left behind, waiting for a file before it writes (a
	// backend whose processes die with their command kills it first).
	res, err = ws.Exec(ctx, workspace.ExecRequest{Argv: []string{"sh", "-c",
		"(sleep 0.3; echo up > up.part; mv up.part up; while [ ! -f go ]; do sleep 0.05; done; echo late > late.txt) >/dev/null 2>&1 &"}})
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode, string(res.Stderr))
	outlived := within(3*time.Second, exists(ws, "up"))
	if outlived {
		// It outlived its command, and cannot end before "go" is written:
		// no snapshot may vouch for the sandbox now.
		for range 3 {
			gen, settled = k.snapSettled(t, id, gen)
			require.False(t, settled, "a process left behind still runs in the sandbox")
		}
	}
	_, err = ws.WriteFile(ctx, "go", nil, 0)
	require.NoError(t, err)
	if !k.opts.Settles {
		return
	}
	// Once it wrote and ended (or was killed with its command), the
	// backend vouches again.
	require.Eventually(t, func() bool {
		gen, settled = k.snapSettled(t, id, gen)
		return settled
	}, promptly, 50*time.Millisecond, "the sandbox never settled after its last process ended")
	if outlived {
		_, err = ws.Stat(ctx, "late.txt")
		assert.NoError(t, err, "settled after what the process wrote")
	}
}
