// Command agenthost is the agenthost host and its CLI.
//
//	agenthost serve                      start the host
//	agenthost plugins check              load every configured plugin, print its state
//	agenthost migrate up|down|version    manage the database schema
//	agenthost tokens create --tenant T   print a new API token
//
// and the client, which speaks a host's HTTP API only (package client;
// AGENTHOST_URL, AGENTHOST_TOKEN):
//
//	agenthost apps create|list|get|download
//	agenthost run APP PROMPT             start a run and follow it
//	agenthost runs list|get|follow|cancel|resume
//	agenthost checkpoints list|restore, diff, models list, chats list|get
//
// Every command and subcommand takes --help (exit 0). Exit codes: 0 done,
// 1 the command failed, 2 the command line or the configuration is wrong
// (with a one-line hint on stderr); a command that follows a run adds 3
// cancelled, 4 left paused, 5 stream lost (client.Exit…).
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/agenthost/agenthost/cmd/agenthost/client"
	"github.com/agenthost/agenthost/host/config"
	"github.com/agenthost/agenthost/host/version"
	"github.com/alecthomas/kong"
	"github.com/hashicorp/go-hclog"
	"github.com/mattn/go-isatty"
)

// Exit codes (see the package comment).
const (
	exitOK      = 0
	exitFailed  = 1
	exitUsage   = 2
	programName = "agenthost"
)

// cli is the command tree; kong builds parsing and help from its tags.
type cli struct {
	Config string `name:"config" env:"AGENTHOST_CONFIG" placeholder:"FILE" help:"Host HCL config file (listen, data_dir, plugin_dir, provider blocks, …)."`

	Serve   serveCmd   `cmd:"" help:"Start the host: HTTP API on the listen address, plugins, database."`
	Plugins pluginsCmd `cmd:"" help:"Inspect the configured plugins, or start a new one."`
	// Plugin takes the singular too (agenthost plugin new ...) without a
	// kong alias, which would print as "plugins (plugin)" in every usage.
	Plugin  pluginsCmd `cmd:"" hidden:"" help:"Same as plugins."`
	Migrate migrateCmd `cmd:"" help:"Manage the database schema (the host migrates up by itself at start)."`
	Tokens  tokensCmd  `cmd:"" help:"Manage API tokens."`
	Version versionCmd `cmd:"" help:"Print this agenthost's version (stamped at build time by make)."`

	// The client: commands that speak a host's HTTP API (AGENTHOST_URL,
	// AGENTHOST_TOKEN), from the client package.
	Apps        client.AppsCmd        `cmd:"" group:"client" help:"Create, list, show and download apps."`
	RunAgent    client.RunCmd         `cmd:"" name:"run" group:"client" help:"Run the coding agent on an app and follow it (exit code: its outcome)."`
	Runs        client.RunsCmd        `cmd:"" group:"client" help:"List, show, follow, cancel and resume runs."`
	Checkpoints client.CheckpointsCmd `cmd:"" group:"client" help:"List an app's checkpoints, restore one."`
	Diff        client.DiffCmd        `cmd:"" group:"client" help:"Print a revision's unified diff (default: the draft's, from its parent)."`
	Models      client.ModelsCmd      `cmd:"" group:"client" help:"List the models runs may use."`
	Chats       client.ChatsCmd       `cmd:"" group:"client" help:"List and show chat sessions."`
}

// clientCommands are the top-level commands of the client (the group
// "client" above); their help lists the client's variables.
var clientCommands = map[string]bool{"apps": true, "run": true, "runs": true, "checkpoints": true, "diff": true, "models": true, "chats": true}

// versionCmd prints the build's version; it needs no configuration.
type versionCmd struct{}

// Run prints the version.
func (versionCmd) Run(g *globals) error {
	_, err := fmt.Fprintln(g.stdout, "agenthost "+version.String())
	return err
}

type pluginsCmd struct {
	Check pluginsCheckCmd `cmd:"" help:"Load every configured plugin and print its state; exits 1 when one is not healthy."`
	New   pluginsNewCmd   `cmd:"" help:"Write a new plugin module (engine, sandbox or toolpack) that builds and passes its conformance kit."`
}

type migrateCmd struct {
	Up      migrateUpCmd      `cmd:"" help:"Apply every pending migration."`
	Down    migrateDownCmd    `cmd:"" help:"Revert one migration (at version 0 there is nothing to revert: says so and exits 0)."`
	Version migrateVersionCmd `cmd:"" help:"Print the schema version and the newest this agenthost knows."`
}

type tokensCmd struct {
	Create tokensCreateCmd `cmd:"" help:"Print a new API token for a tenant (shown once, stored hashed)."`
}

// globals is what every command's Run receives: where to write, and the
// configuration, loaded only by commands that need it.
type globals struct {
	stdout, stderr io.Writer
	// argv0 is how the operator invoked us, so that printed commands can
	// be pasted back as they are.
	argv0      string
	configFile string
}

// load reads the host configuration; a bad one is a usage error (exit 2),
// as it was before the CLI moved to kong.
func (g *globals) load() (config.Host, error) {
	cfg, err := config.Load(g.configFile)
	if err != nil {
		return config.Host{}, usageError{err}
	}
	return cfg, nil
}

// logger is the host's logger, on stderr so that stdout stays the
// command's output (tables, tokens).
func (g *globals) logger() hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Name: programName, Level: hclog.LevelFromString(envOr("AGENTHOST_LOG_LEVEL", "info")), Output: g.stderr})
}

// usageError marks an error the operator fixes by changing the command
// line or the configuration: it exits 2 like kong's own parse errors.
type usageError struct{ error }

func (e usageError) Unwrap() error { return e.error }

// exitRequest is what kong's Exit hook panics with: kong calls Exit(0)
// right after printing --help, and run must return that code rather than
// end the process (tests call run in-process).
type exitRequest int

func main() {
	os.Exit(runWithInput(os.Args[0], os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run parses args, runs the chosen command and returns the exit code;
// stdin is the process's.
func run(argv0 string, args []string, stdout, stderr io.Writer) int {
	return runWithInput(argv0, args, os.Stdin, stdout, stderr)
}

// isTerminal reports whether a stream is a terminal (only a real file
// can be).
func isTerminal(s any) bool {
	f, ok := s.(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}

// runWithInput is run with stdin given: the client commands read answers
// to permission questions (and a prompt given as -) from it.
func runWithInput(argv0 string, args []string, stdin io.Reader, stdout, stderr io.Writer) (code int) {
	// No command at all: the full help, on stderr since it is a usage
	// error (a script that forgot its command must not look successful).
	noCommand := len(args) == 0
	helpOut := stdout
	if noCommand {
		helpOut, args = stderr, []string{"--help"}
	}
	defer func() {
		if r := recover(); r != nil {
			e, ok := r.(exitRequest)
			if !ok {
				panic(r)
			}
			code = int(e)
			if noCommand {
				code = exitUsage
			}
		}
	}()
	var c cli
	parser, err := kong.New(&c,
		kong.Name(programName),
		kong.Description("agenthost: a self-hosted platform that runs coding agents against an app's files.\n\nThe database is embedded SQLite at $AGENTHOST_DATA_DIR/agenthost.db unless DATABASE_URL=postgres://... is set."),
		kong.Writers(helpOut, stderr),
		kong.Exit(func(code int) { panic(exitRequest(code)) }),
		kong.Help(helpWithEnv),
		kong.ConfigureHelp(kong.HelpOptions{Compact: true}),
		kong.ExplicitGroups([]kong.Group{{Key: "client", Title: "Client commands (speak a host's HTTP API; --url, --token):"}}),
	)
	if err != nil {
		// The command tree is static: this is a programming error.
		fmt.Fprintln(stderr, "agenthost: internal error:", err)
		return exitFailed
	}
	kctx, err := parser.Parse(legacySingleDash(args))
	if err != nil {
		fmt.Fprintf(stderr, "%s: error: %v\n", programName, err)
		fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", helpPath(err))
		return exitUsage
	}
	g := &globals{stdout: stdout, stderr: stderr, argv0: argv0, configFile: c.Config}
	cio := &client.IO{Stdin: stdin, Stdout: stdout, Stderr: stderr, Argv0: argv0,
		StdinTerminal: isTerminal(stdin), StdoutTerminal: isTerminal(stdout), StderrTerminal: isTerminal(stderr)}
	defer cio.Close()
	if err := kctx.Run(g, cio); err != nil {
		var exit *client.ExitError
		if errors.As(err, &exit) {
			// The client's ends: a run's outcome, a missing token.
			if exit.Err != nil {
				fmt.Fprintf(stderr, "%s: %v\n", programName, exit.Err)
			}
			return exit.Code
		}
		fmt.Fprintf(stderr, "%s: %v\n", programName, err)
		var ue usageError
		if errors.As(err, &ue) {
			fmt.Fprintf(stderr, "Run '%s %s --help' for usage.\n", programName, kctx.Command())
			return exitUsage
		}
		return exitFailed
	}
	return exitOK
}

// helpPath is the command whose --help answers a parse error: the deepest
// command the parser had reached, else the application.
func helpPath(err error) string {
	var pe *kong.ParseError
	if errors.As(err, &pe) && pe.Context != nil {
		if sel := pe.Context.Selected(); sel != nil {
			return sel.FullPath()
		}
	}
	return programName
}

// helpWithEnv is kong's help plus the environment variables the command
// reads: every one for the application and serve, the ones about where
// things are for the other host commands, and the client's (host URL,
// token) for the client commands.
func helpWithEnv(options kong.HelpOptions, ctx *kong.Context) error {
	if err := kong.DefaultHelpPrinter(options, ctx); err != nil {
		return err
	}
	sel := ctx.Selected()
	all := sel == nil || sel.Name == "serve"
	// A command group (plugins, migrate, tokens) only lists its commands.
	if sel != nil && len(sel.Children) > 0 {
		return nil
	}
	top := sel
	for top != nil && top.Parent != nil && top.Parent.Type != kong.ApplicationNode {
		top = top.Parent
	}
	if top != nil && clientCommands[top.Name] {
		writeClientEnvHelp(ctx.Stdout)
		return nil
	}
	writeEnvHelp(ctx.Stdout, all)
	if sel == nil {
		writeClientEnvHelp(ctx.Stdout)
	}
	return nil
}

// legacyLongFlags are the long flags Go's flag package accepted with one
// dash before the CLI moved to kong (`-config host.hcl`, `tokens create
// -tenant acme`); kong reads "-config" as short flags, so they are
// rewritten to two dashes to keep old scripts working.
var legacyLongFlags = map[string]bool{"config": true, "tenant": true, "scopes": true, "email": true, "name": true}

func legacySingleDash(args []string) []string {
	out := make([]string, 0, len(args))
	for i, a := range args {
		if a == "--" {
			return append(out, args[i:]...)
		}
		if name, _, _ := strings.Cut(strings.TrimPrefix(a, "-"), "="); strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && legacyLongFlags[name] {
			a = "-" + a
		}
		out = append(out, a)
	}
	return out
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
