// Command agenthost is the agenthost host and its CLI.
//
//	agenthost serve            start the host
//	agenthost plugins check    load every configured plugin, print its state
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/agenthost/agenthost/host/config"
	"github.com/agenthost/agenthost/host/hostapp"
	"github.com/agenthost/agenthost/host/orchestrator"
	"github.com/agenthost/agenthost/host/pluginmgr"
	"github.com/agenthost/agenthost/host/store"
	"github.com/agenthost/agenthost/host/version"
	"github.com/agenthost/agenthost/sdk/engine"
	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/agenthost/agenthost/sdk/workspace"
	"github.com/hashicorp/go-hclog"
)

const usage = `agenthost: a self-hosted platform that runs coding agents against an app's files.

usage:
  agenthost [-config host.hcl] serve                    start the host
  agenthost [-config host.hcl] plugins check            load every plugin and report its state
  agenthost [-config host.hcl] migrate up|down|version  manage the database schema
  agenthost [-config host.hcl] tokens create --tenant T --scopes apps.read,apps.write [--email E] [--name N]
                                                        print a new API token (shown once; stored hashed)

The database is embedded SQLite at $AGENTHOST_DATA_DIR/agenthost.db unless
DATABASE_URL=postgres://... is set.
`

func main() {
	fs := flag.NewFlagSet("agenthost", flag.ExitOnError)
	cfgFile := fs.String("config", os.Getenv("AGENTHOST_CONFIG"), "host HCL config file")
	fs.Usage = func() { fmt.Fprint(os.Stderr, usage) }
	_ = fs.Parse(os.Args[1:])
	args := fs.Args()
	if len(args) == 1 && args[0] == "version" { // needs no config
		fmt.Println("agenthost", version.String())
		return
	}
	cfg, err := config.Load(*cfgFile)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	log := hclog.New(&hclog.LoggerOptions{Name: "agenthost", Level: hclog.LevelFromString(envOr("AGENTHOST_LOG_LEVEL", "info")), Output: os.Stderr})
	switch {
	case len(args) == 1 && args[0] == "serve":
		err = serve(cfg, log)
	case len(args) == 2 && args[0] == "plugins" && args[1] == "check":
		err = pluginsCheck(cfg, log, os.Stdout)
	case len(args) == 2 && args[0] == "migrate":
		err = migrateCmd(cfg, args[1])
	case len(args) >= 2 && args[0] == "tokens" && args[1] == "create":
		err = tokensCreate(cfg, args[2:])
	default:
		fs.Usage()
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "agenthost:", err)
		os.Exit(1)
	}
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// noServices answers plugin callbacks while no orchestrator is attached
// (plugins check loads plugins but runs nothing).
type noServices struct{}

func (noServices) CallTool(context.Context, string, engine.ToolCall) (plugin.ToolResult, error) {
	return plugin.ToolResult{}, plugin.Errorf(plugin.CodeUnavailable, "", "no runs are served by this command")
}
func (noServices) SaveState(context.Context, string, []byte) error {
	return plugin.Errorf(plugin.CodeUnavailable, "", "no runs are served by this command")
}
func (noServices) RequestPermission(context.Context, string, engine.PermissionRequest) (engine.PermissionDecision, error) {
	return engine.PermissionDecision{}, plugin.Errorf(plugin.CodeUnavailable, "", "no runs are served by this command")
}
func (noServices) Workspace(context.Context, string) (workspace.Workspace, error) {
	return nil, plugin.Errorf(plugin.CodeNotFound, "", "no workspaces are lent by this command")
}

func startPlugins(ctx context.Context, cfg config.Host, log hclog.Logger, services engine.HostServices, ws workspace.Resolver) (*pluginmgr.Manager, error) {
	configs, err := pluginmgr.LoadConfigDir(cfg.PluginConfigDir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return nil, err
	}
	m := pluginmgr.New(configs, pluginmgr.Options{
		PluginDir: cfg.PluginDir, DataDir: cfg.DataDir, Logger: log,
		EngineServices: services, Workspaces: ws,
	})
	return m, m.Start(ctx)
}

func pluginsCheck(cfg config.Host, log hclog.Logger, out io.Writer) error {
	log.SetLevel(hclog.Warn)
	ctx := context.Background()
	svc := noServices{}
	m, err := startPlugins(ctx, cfg, log, svc, svc.Workspace)
	if err != nil {
		return err
	}
	defer m.Close()
	return writeStatuses(out, m.Statuses())
}

// writeStatuses prints the plugins check table and fails when a plugin is
// not healthy. ISOLATION is a sandbox backend's (none, uid, namespaces), so
// that a backend which does not isolate commands is visible before serving.
func writeStatuses(out io.Writer, statuses []pluginmgr.Status) error {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tKIND\tVERSION\tSTATE\tISOLATION\tDETAIL")
	bad := 0
	for _, s := range statuses {
		detail := s.Reason
		if len(s.Tools) > 0 && detail == "" {
			detail = fmt.Sprintf("tools: %v", s.Tools)
		}
		isolation := "-"
		if s.Kind == plugin.KindSandbox {
			isolation = plugin.IsolationOf(s.Capabilities)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", s.Name, s.Kind, s.Version, s.State, isolation, detail)
		if s.State != pluginmgr.StateHealthy && s.State != pluginmgr.StateDisabled {
			bad++
		}
	}
	_ = tw.Flush()
	if bad > 0 {
		return fmt.Errorf("%d plugin(s) not healthy", bad)
	}
	return nil
}

func serve(cfg config.Host, log hclog.Logger) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	h, err := hostapp.Start(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer func() {
		// Runs get time to reach a safe point; then plugins, then the DB.
		shutdown, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		h.Close(shutdown)
	}()
	srv := &http.Server{Addr: cfg.Listen, Handler: h.Handler, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	log.Info("agenthost listening", "addr", cfg.Listen, "data_dir", cfg.DataDir, "database", h.Store.Dialect(), "plugins", len(h.Plugins.Statuses()))
	select {
	case err := <-errc:
		if !errors.Is(err, http.ErrServerClosed) {
			return err
		}
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return srv.Shutdown(shutdown)
}

func migrateCmd(cfg config.Host, what string) error {
	ctx := context.Background()
	st, err := store.OpenNoMigrate(ctx, cfg.DatabaseURL, cfg.DataDir)
	if err != nil {
		return err
	}
	defer st.Close()
	switch what {
	case "up":
		if err := st.MigrateUp(); err != nil {
			return err
		}
	case "down":
		if err := st.MigrateDown(); err != nil {
			return err
		}
	case "version":
	default:
		return fmt.Errorf("migrate %q: want up, down or version", what)
	}
	v, dirty, err := st.SchemaVersion()
	if err != nil {
		return err
	}
	latest, _ := store.LatestVersion(st.Dialect())
	fmt.Printf("%s schema version %d (this agenthost knows up to %d)%s\n", st.Dialect(), v, latest, map[bool]string{true: ", DIRTY", false: ""}[dirty])
	return nil
}

// knownScopes are the scopes a token can be given. platform.admin (global
// models and the global default) is the operator's: only this command,
// run on the host, grants it.
var knownScopes = map[string]bool{"apps.read": true, "apps.write": true, "admin": true, store.ScopePlatformAdmin: true}

// tokensCreate makes a token for a user of a tenant (both created when
// missing) and prints the secret, which is stored only as a hash.
func tokensCreate(cfg config.Host, args []string) error {
	fs := flag.NewFlagSet("tokens create", flag.ContinueOnError)
	tenant := fs.String("tenant", "", "tenant id (created when missing)")
	scopes := fs.String("scopes", "apps.read,apps.write", "comma-separated: apps.read, apps.write, admin (the tenant's), platform.admin (the operator's: global models)")
	email := fs.String("email", "", "the token's user (default: cli@<tenant>)")
	name := fs.String("name", "cli", "a label for the token")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *tenant == "" {
		return fmt.Errorf("tokens create: --tenant is required")
	}
	var list []string
	for _, sc := range strings.Split(*scopes, ",") {
		sc = strings.TrimSpace(sc)
		if !knownScopes[sc] {
			return fmt.Errorf("tokens create: unknown scope %q (want apps.read, apps.write, admin or platform.admin)", sc)
		}
		list = append(list, sc)
	}
	if *email == "" {
		*email = "cli@" + *tenant
	}
	ctx := context.Background()
	st, err := store.Open(ctx, cfg.DatabaseURL, cfg.DataDir)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.EnsureTenant(ctx, *tenant, *tenant); err != nil {
		return err
	}
	user, err := st.EnsureUser(ctx, *tenant, orchestrator.NewID("usr"), *email)
	if err != nil {
		return err
	}
	secret := store.NewTokenSecret()
	if _, err := st.CreateToken(ctx, *tenant, user, *name, secret, list); err != nil {
		return err
	}
	fmt.Println(secret)
	return nil
}
