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
