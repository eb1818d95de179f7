package testenv

import (
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestTreeCPUCountsChildren: a child's CPU time shows in TreeCPU while the
// child lives.
func TestTreeCPUCountsChildren(t *testing.T) {
	before := childrenCPU()
	// Busy until killed: the loop costs CPU, and the child stays alive to
	// be counted.
	cmd := exec.Command("sh", "-c", "while :; do :; done")
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	deadline := time.Now().Add(20 * time.Second)
	for childrenCPU() <= before {
		require.True(t, time.Now().Before(deadline), "the busy child's CPU time never showed")
		time.Sleep(10 * time.Millisecond)
	}
	// The children's time is read first: the busy child goes on spending
	// CPU, so a reading taken after TreeCPU's could pass it.
	children := childrenCPU()
	require.Greater(t, TreeCPU(), children, "TreeCPU adds this process's own time")
}
