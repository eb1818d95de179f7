package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/agenthost/agenthost/host/hostapp"
	"github.com/agenthost/agenthost/host/privtmp"
	"github.com/agenthost/agenthost/host/store"
)

// serveCmd starts the host.
type serveCmd struct{}

// shutdownGrace is how long runs get to reach a safe point, and in-flight
// requests to finish, once the host is asked to stop.
const shutdownGrace = 30 * time.Second

// Run serves until SIGINT or SIGTERM.
func (serveCmd) Run(g *globals) error {
	cfg, err := g.load()
	if err != nil {
		return err
	}
	log := g.logger()
	// A temporary folder of this process's own, for the Unix sockets the
	// host and its plugins talk over (and any other temporary file): a
	// crash leaves them there, and the next host to start removes them.
	// Removed after the plugins have stopped (deferred before h.Close).
	tmp, err := privtmp.Open(os.TempDir())
	if err != nil {
		return err
	}
	defer tmp.Close()
	if err := os.Setenv("TMPDIR", tmp.Path()); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	h, err := hostapp.Start(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer func() {
		// Runs get time to reach a safe point; then plugins, then the DB.
		shutdown, cancel := context.WithTimeout(context.Background(), shutdownGrace)
		defer cancel()
		h.Close(shutdown)
	}()
	// Listen before announcing, so the printed URL is one that answers
	// (and names the real port when the address asks for port 0).
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.Listen, err)
	}
	srv := &http.Server{Handler: h.Handler, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	log.Info("agenthost listening", "addr", ln.Addr().String(), "data_dir", cfg.DataDir, "database", h.Store.Dialect(), "plugins", len(h.Plugins.Statuses()))
	announce(g.stdout, g.tokensCreateLine(), listenURL(ln.Addr()), string(h.Store.Dialect()), cfg.DataDir, os.Getenv("AGENTHOST_BOOTSTRAP_TOKEN"))
	select {
	case err := <-errc:
		if !errors.Is(err, http.ErrServerClosed) {
			return err
		}
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	return srv.Shutdown(shutdown)
}

// listenURL is the URL a client on this machine reaches addr at: an
// unspecified address (0.0.0.0, ::) is reachable as localhost.
func listenURL(addr net.Addr) string {
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return "http://" + addr.String()
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "localhost"
	}
	return "http://" + net.JoinHostPort(host, port)
}

// announce prints the start-up lines: where the host answers, and how to
// authenticate. It prints a token only when the operator gave it (in
// AGENTHOST_BOOTSTRAP_TOKEN); otherwise it says how to make one.
func announce(w io.Writer, tokensCreate, url, dialect, dataDir, bootstrap string) {
	fmt.Fprintf(w, "agenthost: listening on %s (%s database, data dir %s)\n", url, dialect, dataDir)
	if bootstrap != "" {
		fmt.Fprintf(w, "agenthost: operator token from $AGENTHOST_BOOTSTRAP_TOKEN (tenant %q, scopes admin and %s); try:\n", hostapp.DefaultTenant, store.ScopePlatformAdmin)
		fmt.Fprintf(w, "  curl -H 'Authorization: Bearer %s' %s/admin/apps\n", bootstrap, url)
		return
	}
	fmt.Fprintln(w, "agenthost: no bootstrap token set (AGENTHOST_BOOTSTRAP_TOKEN); to make an API token:")
	fmt.Fprintf(w, "  %s\n", tokensCreate)
	fmt.Fprintln(w, "  and send it as 'Authorization: Bearer <token>'")
}

// tokensCreateLine is the command that makes a tenant admin's token for
// this host, as the operator can paste it (same binary, same --config).
func (g *globals) tokensCreateLine() string {
	line := g.argv0
	if g.configFile != "" {
		line += " --config " + g.configFile
	}
	return line + " tokens create --tenant " + hostapp.DefaultTenant + " --scopes apps.read,apps.write,admin"
}
