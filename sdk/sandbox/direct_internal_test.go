package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// TestSweepDirectDirs: only the socket folders of plugin processes that
// are gone are removed.
func TestSweepDirectDirs(t *testing.T) {
	done := exec.Command("true")
	if err := done.Run(); err != nil {
		t.Fatal(err)
	}
	dead, alive := strconv.Itoa(done.Process.Pid), strconv.Itoa(os.Getpid())
	dir := t.TempDir()
	for _, name := range []string{directDirPrefix + dead + "-1", directDirPrefix + alive + "-1", directDirPrefix + "x-1", directDirPrefix + "12", "other-" + dead + "-1"} {
		if err := os.MkdirAll(filepath.Join(dir, name, "inside"), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, directDirPrefix+dead+"-file"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	sweepDirectDirs(dir)
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, e := range entries {
		left = append(left, e.Name())
	}
	want := []string{directDirPrefix + dead + "-file", directDirPrefix + alive + "-1", directDirPrefix + "12", directDirPrefix + "x-1", "other-" + dead + "-1"}
	if len(left) != len(want) {
		t.Fatalf("left %v, want %v", left, want)
	}
	for _, w := range want {
		if _, err := os.Stat(filepath.Join(dir, w)); err != nil {
			t.Errorf("%s was removed", w)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, directDirPrefix+dead+"-1")); !os.IsNotExist(err) {
		t.Errorf("the dead process's folder is still there: %v", err)
	}
}
