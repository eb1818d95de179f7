//go:build linux

package bwrap

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/sdk/workspace"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRelaunchKillsWhatACrashLeft: a plugin killed while a command runs
// may leave part of the command running (bwrap's pid-namespace init arms
// its parent-death signal some time after bwrap creates it); the plugin
// launched next on the same root kills it.
//
// The real window cannot be hit on purpose every time, so a stand-in for
// bwrap makes it: it starts a process that, like such an init, is in the
// command's session but does not die with the plugin, then execs the real
// bwrap. The process's name carries the test's marker. (The test kills the
// plugin early in the command's start, so the real init often escapes too:
// bubblewrap 0.8 arms its parent-death signal only once the sandbox is
// set up.)
func TestRelaunchKillsWhatACrashLeft(t *testing.T) {
	if testing.Short() {
		t.Skip("starts, kills and relaunches a plugin")
	}
	dir := reachableDir(t) // the sandbox uid runs the stand-in from here
	root := filepath.Join(dir, "sandboxes")
	marker := fmt.Sprintf("escapee-%d", time.Now().UnixNano())
	escapee := filepath.Join(dir, marker)
	require.NoError(t, os.Symlink("/usr/bin/sleep", escapee))
	standIn := filepath.Join(dir, "bwrap")
	// Only the test's command (whose argv has the marker) gets an escapee,
	// not the plugin's self-test.
	script := fmt.Sprintf("#!/bin/sh\ncase \"$*\" in *%s*) %s 3600 </dev/null >/dev/null 2>&1 & ;; esac\nexec %s \"$@\"\n",
		marker, escapee, DefaultBwrapPath)
	require.NoError(t, os.WriteFile(standIn, []byte(script), 0o755))
	// Whatever the outcome, nothing of the test outlives it.
	t.Cleanup(func() { killMarked(marker) })
	cfg := Config{Root: root, BwrapPath: standIn}
	args := []string{"-network=" + NetworkNone}

	first, proc := launchProcess(t, "agenthost-sandbox-bwrap", args, nil, cfg)
	_, ws := create(t, first)
	execDone := make(chan error, 1)
	go func() {
		_, err := ws.Exec(context.Background(), workspace.ExecRequest{Argv: []string{"sh", "-c", "sleep 3600 # " + marker}})
		execDone <- err
	}()
	require.Eventually(t, func() bool { return len(escapees(escapee)) > 0 }, 30*time.Second, 20*time.Millisecond,
		"the command never started")
	sid := session(escapees(escapee)[0])

	require.NoError(t, proc.Kill()) // SIGKILL, as a crash or the OOM killer ends it
	select {
	case err := <-execDone:
		assert.Error(t, err, "an exec cannot succeed once its plugin is dead")
	case <-time.After(30 * time.Second):
		t.Fatal("exec did not return after the plugin died")
	}
	// bwrap died with the plugin (its parent-death signal); the escapee
	// lives on in the command's session. (So may bwrap's init, when the
	// kill came early enough.)
	require.Len(t, escapees(escapee), 1, "the stand-in's escapee should survive the plugin")
	require.Equal(t, sid, session(escapees(escapee)[0]))

	launchProcess(t, "agenthost-sandbox-bwrap", args, nil, cfg)
	assert.Eventually(t, func() bool { return markerGone(marker) }, 30*time.Second, 20*time.Millisecond,
		"a process of the crashed plugin's command survived its relaunch")
}

// escapees lists the live processes running path.
func escapees(path string) []int {
	return matching(func(cmdline string) bool { return strings.HasPrefix(cmdline, path+"\x00") })
}

// matching lists the live (not zombie) processes whose NUL-separated
// command line match accepts.
func matching(match func(cmdline string) bool) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || len(b) == 0 || !match(string(b)) {
			continue
		}
		out = append(out, pid)
	}
	return out
}
