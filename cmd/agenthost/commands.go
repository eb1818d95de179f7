package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/agenthost/agenthost/core"
	"github.com/agenthost/agenthost/host/config"
	"github.com/agenthost/agenthost/host/pluginmgr"
	"github.com/agenthost/agenthost/host/store"
	"github.com/agenthost/agenthost/sdk/engine"
	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/agenthost/agenthost/sdk/workspace"
	"github.com/hashicorp/go-hclog"
)

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

type pluginsCheckCmd struct{}

// Run loads the plugins and prints the table.
func (pluginsCheckCmd) Run(g *globals) error {
	cfg, err := g.load()
	if err != nil {
		return err
	}
	return pluginsCheck(cfg, g.logger(), g.stdout)
}

func startPlugins(ctx context.Context, cfg config.Host, log hclog.Logger, services engine.HostServices, ws workspace.Resolver) (*pluginmgr.Manager, error) {
	configs, err := pluginmgr.LoadConfigDir(cfg.PluginConfigDir, cfg.PluginDir)
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

type (
	migrateUpCmd      struct{}
	migrateDownCmd    struct{}
	migrateVersionCmd struct{}
)

// Run applies every pending migration.
func (migrateUpCmd) Run(g *globals) error { return migrate(g, "up") }

// Run reverts one migration.
func (migrateDownCmd) Run(g *globals) error { return migrate(g, "down") }

// Run prints the schema version.
func (migrateVersionCmd) Run(g *globals) error { return migrate(g, "version") }

// migrate runs one migrate subcommand and prints the version it leaves.
func migrate(g *globals, what string) error {
	cfg, err := g.load()
	if err != nil {
		return err
	}
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
		v, dirty, err := st.SchemaVersion()
		if err != nil {
			return err
		}
		// golang-migrate answers "file does not exist" when asked to step
		// below version 0; an empty schema is not a failure, just nothing
		// to do.
		if v == 0 && !dirty {
			fmt.Fprintln(g.stdout, "nothing to migrate down: the schema is at version 0")
			return nil
		}
		if err := st.MigrateDown(); err != nil {
			return err
		}
	}
	v, dirty, err := st.SchemaVersion()
	if err != nil {
		return err
	}
	latest, _ := store.LatestVersion(st.Dialect())
	suffix := ""
	if dirty {
		suffix = ", DIRTY"
	}
	fmt.Fprintf(g.stdout, "%s schema version %d (this agenthost knows up to %d)%s\n", st.Dialect(), v, latest, suffix)
	return nil
}

// knownScopes are the scopes a token can be given. platform.admin (global
// models and the global default) is the operator's: only this command,
// run on the host, grants it.
var knownScopes = map[string]bool{"apps.read": true, "apps.write": true, "admin": true, store.ScopePlatformAdmin: true}

// tokensCreateCmd makes a token for a user of a tenant (both created when
// missing) and prints the secret, which is stored only as a hash.
type tokensCreateCmd struct {
	Tenant string   `required:"" placeholder:"ID" help:"Tenant id (created when missing)."`
	Scopes []string `default:"apps.read,apps.write" sep:"," help:"Comma-separated: apps.read, apps.write, admin (the tenant's), platform.admin (the operator's: global models and the global default)."`
	Email  string   `placeholder:"EMAIL" help:"The token's user (default: cli@<tenant>)."`
	Name   string   `default:"cli" help:"A label for the token."`
}

// Run checks the scopes, then makes and prints the token.
func (c tokensCreateCmd) Run(g *globals) error {
	if strings.TrimSpace(c.Tenant) == "" {
		return usageError{fmt.Errorf("tokens create: --tenant must not be empty")}
	}
	var list []string
	for _, sc := range c.Scopes {
		sc = strings.TrimSpace(sc)
		if !knownScopes[sc] {
			return usageError{fmt.Errorf("tokens create: unknown scope %q (want apps.read, apps.write, admin or platform.admin)", sc)}
		}
		list = append(list, sc)
	}
	if c.Email == "" {
		c.Email = "cli@" + c.Tenant
	}
	cfg, err := g.load()
	if err != nil {
		return err
	}
	ctx := context.Background()
	st, err := store.Open(ctx, cfg.DatabaseURL, cfg.DataDir)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.EnsureTenant(ctx, c.Tenant, c.Tenant); err != nil {
		return err
	}
	user, err := st.EnsureUser(ctx, c.Tenant, core.NewID("usr"), c.Email)
	if err != nil {
		return err
	}
	secret := store.NewTokenSecret()
	if _, err := st.CreateToken(ctx, c.Tenant, user, c.Name, secret, list); err != nil {
		return err
	}
	fmt.Fprintln(g.stdout, secret)
	return nil
}
