package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/alecthomas/kong"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runCLI runs the CLI in-process and returns its exit code and output.
func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run("agenthost", args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// commandPaths is every command and command group of the CLI ("serve",
// "migrate", "migrate down", …), read from kong's model so that a new
// command is covered without touching the tests.
func commandPaths(t *testing.T) []string {
	t.Helper()
	parser, err := kong.New(&cli{})
	require.NoError(t, err)
	var paths []string
	var walk func(n *kong.Node, prefix string)
	walk = func(n *kong.Node, prefix string) {
		for _, c := range n.Children {
			// Names, not kong's Path(), which adds "(alias)" after a name.
			p := strings.TrimSpace(prefix + " " + c.Name)
			paths = append(paths, p)
			walk(c, p)
		}
	}
	walk(parser.Model.Node, "")
	require.Contains(t, paths, "tokens create")
	return paths
}

// TestHelpExitsZero: --help and -h on the application, on every command
// group and on every command print usage to stdout and exit 0, without
// loading any configuration.
func TestHelpExitsZero(t *testing.T) {
	// A broken config must not matter to help.
	t.Setenv("AGENTHOST_CONFIG", "/nonexistent/host.hcl")
	cases := [][]string{{"--help"}, {"-h"}}
	for _, p := range commandPaths(t) {
		cases = append(cases, append(strings.Fields(p), "--help"), append(strings.Fields(p), "-h"))
	}
	for _, args := range cases {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			code, out, errOut := runCLI(t, args...)
			assert.Equal(t, exitOK, code, errOut)
			assert.Empty(t, errOut)
			want := "Usage: agenthost"
			if cmd := strings.Join(args[:len(args)-1], " "); cmd != "" {
				want += " " + cmd
			}
			assert.Contains(t, out, want)
		})
	}
}

// TestHelpListsEnvironment: the application's and serve's help list every
// variable of envVars with its default; the other host commands list what
// every command reads (where the config, data and plugins are); the
// client commands list the client's (clientEnvVars) only, as does the
// application beside the host's.
func TestHelpListsEnvironment(t *testing.T) {
	_, root, _ := runCLI(t, "--help")
	_, serve, _ := runCLI(t, "serve", "--help")
	_, tokens, _ := runCLI(t, "tokens", "create", "--help")
	for _, v := range envVars {
		assert.Contains(t, root, "  "+v.Name+"\n", "agenthost --help")
		assert.Contains(t, serve, "  "+v.Name+"\n", "agenthost serve --help")
		if v.Every {
			assert.Contains(t, tokens, "  "+v.Name+"\n", "agenthost tokens create --help")
		} else {
			assert.NotContains(t, tokens, "  "+v.Name+"\n", "agenthost tokens create --help")
		}
	}
	assert.Contains(t, root, "AGENTHOST_LISTEN\n      HTTP listen address (default: 127.0.0.1:8080)")

	// The client commands read where the host is and the token, nothing
	// of the host's own configuration.
	for _, args := range [][]string{{"run"}, {"apps", "download"}, {"runs", "resume"}, {"diff"}, {"models", "list"}} {
		_, help, _ := runCLI(t, append(args, "--help")...)
		for _, v := range clientEnvVars {
			assert.Contains(t, root, "  "+v.Name+"\n", "agenthost --help")
			assert.Contains(t, help, "  "+v.Name+"\n", "agenthost %v --help", args)
			assert.NotContains(t, serve, "  "+v.Name+"\n", "agenthost serve --help")
		}
		for _, v := range envVars {
			assert.NotContains(t, help, "  "+v.Name+"\n", "agenthost %v --help", args)
		}
	}
	assert.Contains(t, root, "AGENTHOST_URL\n      the host the client commands talk to (same as --url) (default: http://127.0.0.1:8080)")
}

// TestUsageErrors: an unknown command, subcommand or flag, a missing
// required flag and no command at all are usage errors: exit 2, a one-line
// error and a one-line hint naming the --help to read, nothing on stdout.
func TestUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args      []string
		err, hint string
	}{
		{[]string{"bogus"}, "agenthost: error: unexpected argument bogus", "Run 'agenthost --help' for usage."},
		{[]string{"--bogus", "serve"}, "unknown flag --bogus", "Run 'agenthost --help' for usage."},
		{[]string{"serve", "--bogus"}, "unknown flag --bogus", "Run 'agenthost serve --help' for usage."},
		{[]string{"migrate"}, `expected one of "up", "down", "version"`, "Run 'agenthost migrate --help' for usage."},
		{[]string{"migrate", "sideways"}, "unexpected argument sideways", "Run 'agenthost migrate --help' for usage."},
		{[]string{"plugins", "check", "extra"}, "unexpected argument extra", "Run 'agenthost plugins check --help' for usage."},
		{[]string{"tokens", "create"}, "missing flags: --tenant=ID", "Run 'agenthost tokens create --help' for usage."},
		{[]string{"tokens", "create", "--tenant", "acme", "--scopes", "root"}, `unknown scope "root"`, "Run 'agenthost tokens create --help' for usage."},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			t.Setenv("AGENTHOST_DATA_DIR", t.TempDir())
			code, out, errOut := runCLI(t, tc.args...)
			assert.Equal(t, exitUsage, code)
			assert.Empty(t, out)
			lines := strings.Split(strings.TrimSpace(errOut), "\n")
			require.Len(t, lines, 2, errOut)
			assert.Contains(t, lines[0], tc.err)
			assert.Equal(t, tc.hint, lines[1])
		})
	}
	t.Run("no command", func(t *testing.T) {
		code, out, errOut := runCLI(t)
		assert.Equal(t, exitUsage, code)
		assert.Empty(t, out)
		assert.Contains(t, errOut, "Usage: agenthost <command>")
	})
}

// TestMigrateDownAtZero: stepping down from an empty schema is not a
// failure ("file does not exist" from golang-migrate was): it says so and
// exits 0. From a migrated schema it reverts one step.
func TestMigrateDownAtZero(t *testing.T) {
	t.Setenv("AGENTHOST_DATA_DIR", t.TempDir())
	t.Setenv("DATABASE_URL", "")
	code, out, errOut := runCLI(t, "migrate", "down")
	assert.Equal(t, exitOK, code, errOut)
	assert.Equal(t, "nothing to migrate down: the schema is at version 0\n", out)

	code, out, errOut = runCLI(t, "migrate", "up")
	require.Equal(t, exitOK, code, errOut)
	assert.Regexp(t, `^sqlite schema version (\d+) \(this agenthost knows up to \d+\)\n$`, out)
	code, out, errOut = runCLI(t, "migrate", "down")
	assert.Equal(t, exitOK, code, errOut)
	assert.Regexp(t, `^sqlite schema version \d+ \(this agenthost knows up to \d+\)\n$`, out)
}

// TestLegacySingleDashFlags: the flags Go's flag package took with one
// dash keep working; anything after "--" is left alone.
func TestLegacySingleDashFlags(t *testing.T) {
	assert.Equal(t,
		[]string{"--config", "h.hcl", "tokens", "create", "--tenant=a", "--scopes", "admin", "-h", "--", "-name"},
		legacySingleDash([]string{"-config", "h.hcl", "tokens", "create", "-tenant=a", "-scopes", "admin", "-h", "--", "-name"}))
}

// TestVersion: `agenthost version` prints the build's stamped version
// (make build sets it; a plain go build says dev) and needs no config.
func TestVersion(t *testing.T) {
	code, out, _ := runCLI(t, "version")
	assert.Equal(t, 0, code)
	assert.Regexp(t, `^agenthost \S+ \(go1\.\S+ \w+/\w+\)\n$`, out)
}
