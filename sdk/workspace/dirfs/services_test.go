package dirfs

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/sdk/workspace"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestServiceOwnSessionWithoutTerminal: a service, like a command, leads a
// session and a process group of its own (stopping it kills the group) and
// has no controlling terminal.
func TestServiceOwnSessionWithoutTerminal(t *testing.T) {
	root := t.TempDir()
	s := NewServices(root, t.TempDir(), nil)
	t.Cleanup(func() { s.Close(time.Second) })
	_, err := s.StartService(context.Background(), workspace.ServiceSpec{Name: "stat", Argv: []string{"sh", "-c",
		// Written whole, then renamed: the test never reads half a line.
		"cat /proc/$$/stat > stat.tmp && mv stat.tmp stat && exec sleep 1000"}})
	require.NoError(t, err)
	var st string
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(filepath.Join(root, "stat"))
		st = string(b)
		return err == nil
	}, 10*time.Second, 10*time.Millisecond, "the service never wrote its stat")
	pid, _, _ := strings.Cut(st, " ")
	// After the command name: state ppid pgrp session tty_nr ...
	fields := strings.Fields(st[strings.LastIndexByte(st, ')')+1:])
	require.GreaterOrEqual(t, len(fields), 5, st)
	assert.Equal(t, pid, fields[2], "process group")
	assert.Equal(t, pid, fields[3], "session")
	assert.Equal(t, "0", fields[4], "controlling terminal")
}

// TestServiceStatusReportsMemory: a running service's status has the
// resident memory of its session, children included (a child holding
// 64 MiB makes the figure at least that); a stopped one's has none.
func TestServiceStatusReportsMemory(t *testing.T) {
	root := t.TempDir()
	s := NewServices(root, t.TempDir(), nil)
	t.Cleanup(func() { s.Close(time.Second) })
	ctx := context.Background()
	// A child (not the leader) holds 64 MiB: dd reads it from /dev/zero
	// into one buffer, then blocks writing it to a pipe nobody reads.
	_, err := s.StartService(ctx, workspace.ServiceSpec{Name: "mem", Argv: []string{"sh", "-c",
		"dd if=/dev/zero bs=64M count=1 2>/dev/null | sleep 1000"}})
	require.NoError(t, err)
	var si workspace.ServiceInfo
	require.Eventually(t, func() bool {
		si, err = s.ServiceStatus(ctx, "mem")
		return err == nil && si.RSSBytes >= 64<<20
	}, 30*time.Second, 20*time.Millisecond, "the session's children count: %+v %v", si.RSSBytes, err)
	assert.True(t, si.Running)
	assert.Less(t, si.RSSBytes, int64(1<<30), "nothing else is counted")

	require.NoError(t, s.StopService(ctx, "mem", time.Second))
	si, err = s.ServiceStatus(ctx, "mem")
	require.NoError(t, err)
	assert.False(t, si.Running)
	assert.Zero(t, si.RSSBytes)
}
