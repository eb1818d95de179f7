package privtmp

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// holderEnv makes the test binary a host process that opens a folder in
// the base the variable names, prints its path and waits to be killed.
const holderEnv = "PRIVTMP_TEST_HOLD_IN"

func TestMain(m *testing.M) {
	if base := os.Getenv(holderEnv); base != "" {
		d, err := Open(base)
		if err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(1)
		}
		os.Stdout.WriteString(d.Path() + "\n")
		select {} // held until killed
	}
	os.Exit(m.Run())
}

// TestFolderOfAKilledProcessIsSwept: a process killed with SIGKILL cannot
// remove its folder; while it lives no sweep touches the folder, and once
// it is dead the next Open removes it with everything in it.
func TestFolderOfAKilledProcessIsSwept(t *testing.T) {
	base := t.TempDir()
	holder := exec.Command(os.Args[0], "-test.run", "^$")
	holder.Env = append(os.Environ(), holderEnv+"="+base)
	holder.Stderr = os.Stderr
	out, err := holder.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, holder.Start())
	t.Cleanup(func() { _ = holder.Process.Kill(); _ = holder.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	held := strings.TrimSpace(line)
	require.Equal(t, base, filepath.Dir(held))
	require.NoError(t, os.WriteFile(filepath.Join(held, "plugin123"), nil, 0o600))

	assert.Empty(t, Sweep(base), "a live process's folder is not swept")
	require.DirExists(t, held)

	require.NoError(t, holder.Process.Signal(syscall.SIGKILL))
	_ = holder.Wait()
	require.DirExists(t, held, "a killed process leaves its folder")

	d, err := Open(base)
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.Close() })
	assert.NoDirExists(t, held, "the next Open swept the dead process's folder")
	assert.DirExists(t, d.Path())
}

// TestSweepTakesOnlyDeadFolders: a sweep leaves alone what is held, what
// is being made, what is not a host's folder, and what a link points at.
func TestSweepTakesOnlyDeadFolders(t *testing.T) {
	base := t.TempDir()
	mk := func(name string) string {
		p := filepath.Join(base, name)
		require.NoError(t, os.Mkdir(p, 0o700))
		require.NoError(t, os.WriteFile(filepath.Join(p, "f"), []byte("x"), 0o600))
		return p
	}
	dead := mk(livePrefix + "dead")
	youngNew := mk(newPrefix + "young")
	oldNew := mk(newPrefix + "old")
	old := time.Now().Add(-2 * newGrace)
	require.NoError(t, os.Chtimes(oldNew, old, old))
	other := mk("someone-elses")
	target := mk("link-target")
	require.NoError(t, os.Symlink(target, filepath.Join(base, livePrefix+"link")))

	live, err := Open(base)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(filepath.Base(live.Path()), livePrefix))
	assert.False(t, strings.HasPrefix(filepath.Base(live.Path()), newPrefix), "renamed live once locked")
	assert.NoDirExists(t, dead)
	assert.NoDirExists(t, oldNew, "made by a process that died before locking it")
	assert.DirExists(t, youngNew, "may be another process's, about to be locked")
	assert.DirExists(t, other)
	assert.FileExists(t, filepath.Join(target, "f"))
	_, err = os.Lstat(filepath.Join(base, livePrefix+"link"))
	assert.NoError(t, err, "a link is not a host's folder")

	second, err := Open(base)
	require.NoError(t, err)
	assert.DirExists(t, live.Path(), "another process's Open does not take a held folder")
	assert.NotEqual(t, live.Path(), second.Path())

	require.NoError(t, live.Close())
	assert.NoDirExists(t, live.Path())
	require.NoError(t, second.Close())
	assert.NoDirExists(t, second.Path())
}
