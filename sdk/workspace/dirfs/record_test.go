package dirfs

import (
	"bufio"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestKillSession: what a session's leader left behind is killed by the
// session's number once the leader is gone, but not under a start time or
// a uid that is not the recorded one.
func TestKillSession(t *testing.T) {
	// A session like a command's: a leader (sh, then sleep) and a member
	// it left in the background, whose pid it prints.
	leader := exec.Command("sh", "-c", "sleep 1000 & echo $!; exec sleep 1000")
	leader.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	out, err := leader.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, leader.Start())
	t.Cleanup(func() { _ = syscall.Kill(leader.Process.Pid, syscall.SIGKILL); _ = leader.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	member, err := strconv.Atoi(strings.TrimSpace(line))
	require.NoError(t, err)
	t.Cleanup(func() { _ = syscall.Kill(member, syscall.SIGKILL) })
	sid := leader.Process.Pid
	st, ok := procStat(member)
	require.True(t, ok)
	require.Equal(t, sid, st.sid, "the background process is in the leader's session")
	start, ok := ProcStart(sid)
	require.True(t, ok)

	assert.Zero(t, KillSession(sid, start+1, os.Getuid()), "a living leader with another start time is another process")
	assert.False(t, gone(strconv.Itoa(member)))

	require.NoError(t, leader.Process.Kill())
	_ = leader.Wait()
	require.False(t, gone(strconv.Itoa(member)), "the member outlives its leader, as after a crash")
	assert.Zero(t, KillSession(sid, start, os.Getuid()+1), "with the leader gone, only the given uid's processes")
	assert.False(t, gone(strconv.Itoa(member)))
	assert.Equal(t, 1, KillSession(sid, start, os.Getuid()))
	assert.Eventually(t, func() bool { return gone(strconv.Itoa(member)) }, 10*time.Second, 10*time.Millisecond)
}
