package doccheck

import (
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host/pluginmgr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// consoleOutput is the output README shows for `$ command` in a console
// block: the lines after it up to the next prompt or the block's end.
func consoleOutput(t *testing.T, lines []docLine, command string) ([]string, docLine) {
	t.Helper()
	for i, l := range lines {
		if l.file != "README.md" || !l.code || strings.TrimSpace(l.text) != "$ "+command {
			continue
		}
		var out []string
		for _, o := range lines[i+1:] {
			if !o.code || o.n != l.n+1+len(out) || strings.HasPrefix(o.text, "$ ") {
				break
			}
			out = append(out, o.text)
		}
		return out, l
	}
	t.Fatalf("README.md has no console example of `%s`", command)
	return nil, docLine{}
}

// TestConsoleExamples: README's console examples of the CLI print what the
// real binary prints: `migrate version` exactly (on a migrated database),
// `plugins check` its header exactly and one row per plugin-configs/ file.
func TestConsoleExamples(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "agenthost")
	build := exec.Command("go", "build", "-o", bin, "github.com/agenthost/agenthost/cmd/agenthost")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	require.NoError(t, build.Run())
	agenthost := func(env []string, args ...string) string {
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), append(env, "DATABASE_URL=", "AGENTHOST_CONFIG=", "AGENTHOST_LOG_LEVEL=error")...)
		out, err := cmd.Output()
		require.NoError(t, err, "agenthost %v", args)
		return string(out)
	}
	lines := readLines(t)

	t.Run("migrate version", func(t *testing.T) {
		env := []string{"AGENTHOST_DATA_DIR=" + t.TempDir()}
		agenthost(env, "migrate", "up")
		want, at := consoleOutput(t, lines, "bin/agenthost migrate version")
		got := strings.TrimRight(agenthost(env, "migrate", "version"), "\n")
		assert.Equal(t, got, strings.Join(want, "\n"), "%s: README's migrate version output", at)
	})

	t.Run("plugins check", func(t *testing.T) {
		// No plugin configs: the binary prints the header alone, which is
		// all that does not depend on the machine.
		env := []string{"AGENTHOST_DATA_DIR=" + t.TempDir(), "AGENTHOST_PLUGIN_CONFIG_DIR=" + t.TempDir()}
		header := strings.TrimRight(agenthost(env, "plugins", "check"), "\n")
		doc, at := consoleOutput(t, lines, "bin/agenthost plugins check")
		require.NotEmpty(t, doc, "%s: README shows the table", at)
		// Columns, not spacing: tabwriter widens them to the rows.
		assert.Equal(t, strings.Fields(header), strings.Fields(doc[0]), "%s: README's plugins check header", at)

		configs, err := pluginmgr.LoadConfigDir(filepath.Join(repoRoot, "plugin-configs"), filepath.Join(repoRoot, "bin", "plugins"))
		require.NoError(t, err)
		var want, got []string
		for _, c := range configs {
			want = append(want, c.Name+" "+string(c.Kind))
		}
		for _, row := range doc[1:] {
			if f := strings.Fields(row); len(f) >= 2 {
				got = append(got, f[0]+" "+f[1])
			}
		}
		sort.Strings(want)
		sort.Strings(got)
		assert.Equal(t, want, got, "%s: README's plugins check rows are the plugins plugin-configs/ loads", at)
	})
}
