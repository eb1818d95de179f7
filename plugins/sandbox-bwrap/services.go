//go:build linux

package bwrap

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/agenthost/agenthost/sdk/workspace/dirfs"
	"github.com/agenthost/agenthost/sdk/workspace/owned"
)

// Services (workspace.Services) on bwrap: a long-lived process in a sandbox
// of its own, built as a command's (see sandboxArgs) with these changes:
//
//   - its private state folder is bound read-write at its host path (the
//     {state} placeholder is already that path), and each ReadOnlyPaths
//     entry read-only at its own;
//   - no RLIMIT_CPU (it runs for hours) and no RLIMIT_AS (Bun reserves tens
//     of GiB of address space it never uses): its memory is bounded by
//     RLIMIT_DATA, service_memory_bytes, which counts what it allocates;
//   - with the loopback policy, its network namespace reaches exactly the
//     spec's Connect addresses (relayed by the plugin, see egress) and is
//     reached by plugins through a forwarded port;
//   - bwrap holds the command (--block-fd) until the plugin has set the
//     network up, so the service never sees it half made.
const (
	// servicesDir holds each service's state folder, <root>/<id>/services/<name>.
	servicesDir = "services"
	// setupTimeout bounds bwrap's start (namespaces, mounts) and the
	// plugin's network set-up before the service runs.
	setupTimeout = 10 * time.Second
	// connectTimeout bounds one connection out of a service's sandbox.
	connectTimeout = 10 * time.Second
	// aliasNet is where host names a service connects to live inside its
	// sandbox: 127.77.0.1, .2, ... (all of 127/8 is the loopback).
	aliasNet = "127.77.0."
	// maxConnect bounds a spec's Connect list (one alias address each).
	maxConnect = 64
)

// StatePath is where a service sees its private state folder ({state}).
const StatePath = "/service-state"

// DefaultServiceMemoryBytes is RLIMIT_DATA of a service's processes: an
// OpenCode server uses about 0.5 GiB.
const DefaultServiceMemoryBytes = 4 << 30

// wrapService runs a box's services under bwrap (dirfs.WrapFunc).
func (p *Provider) wrapService(cfg Config, b *box) dirfs.WrapFunc {
	return func(cmd dirfs.ServiceCommand) (dirfs.WrappedService, error) {
		routes, err := parseConnect(cmd.Connect)
		if err != nil {
			return dirfs.WrappedService{}, err
		}
		if cfg.Network == NetworkHost {
			routes = nil // the host's network: everything is reachable already
		} else if len(routes) > 0 || cmd.Port != 0 {
			// Relaying in and out of the service's namespace enters it.
			if err := needRoot(); err != nil {
				return dirfs.WrappedService{}, err
			}
		}
		if err := checkReadOnly(cfg, cmd.ReadOnlyPaths); err != nil {
			return dirfs.WrappedService{}, err
		}
		// The service writes its state as the sandbox uid.
		o := owner(cfg)
		for _, d := range []string{filepath.Dir(cmd.StateDir), cmd.StateDir} {
			if err := owned.Own(d, o); err != nil {
				return dirfs.WrappedService{}, fmt.Errorf("hand the state folder to uid %d: %w", cfg.UID, err)
			}
		}
		rel, err := filepath.Rel(b.ws.Root(), cmd.Dir)
		if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
			return dirfs.WrappedService{}, plugin.Errorf(plugin.CodePathDenied, "dir", "working folder outside the workspace")
		}
		// fd 3: bwrap reports the sandbox's pid; fd 4: bwrap waits for a
		// byte before the service runs; fd 5: EOF when the plugin dies; fd
		// 6: the launcher says the sandbox is up and its watcher armed.
		pipes, err := newPipes(4)
		if err != nil {
			return dirfs.WrappedService{}, err
		}
		name := filepath.Base(cmd.StateDir)
		var hosts string
		if cfg.Network != NetworkHost {
			if hosts, err = writeHosts(b.dir, name, routes); err != nil {
				for _, p := range pipes {
					p[0].Close()
					p[1].Close()
				}
				return dirfs.WrappedService{}, err
			}
		}
		infoR, infoW := pipes[0][0], pipes[0][1]
		blockR, blockW := pipes[1][0], pipes[1][1]
		lifeR, lifeW := pipes[2][0], pipes[2][1]
		upR, upW := pipes[3][0], pipes[3][1]
		pidFile := filepath.Join(b.dir, execsDir, "svc-"+name+"-"+rand.Text()[:8])
		// The service sees its state at StatePath, not at the host path
		// that tells where the sandbox root is.
		inside := strings.NewReplacer(cmd.StateDir, StatePath)
		argv := make([]string, len(cmd.Argv))
		for i, a := range cmd.Argv {
			argv[i] = inside.Replace(a)
		}
		env := make([]string, len(cmd.Env))
		for i, e := range cmd.Env {
			env[i] = inside.Replace(e)
		}
		args := serviceArgs(cfg, serviceMounts{
			workspace: b.ws.Root(), rel: rel, state: cmd.StateDir, readOnly: cmd.ReadOnlyPaths, hosts: hosts,
		}, argv)
		uid, gid := -1, -1
		if os.Geteuid() == 0 {
			uid, gid = cfg.UID, cfg.GID
		}
		helper := helperPlan{
			pidFile: pidFile, uid: uid, gid: gid, fileSize: uint64(cfg.ExecFileSizeBytes),
			data: uint64(cfg.ServiceMemoryBytes), processes: uint64(cfg.MaxProcesses),
			bwrap: cfg.BwrapPath, args: args,
		}.argv(p.opts.Helper)

		var listeners []net.Listener
		ended := func() {
			for _, l := range listeners {
				_ = l.Close()
			}
			infoR.Close()
			blockW.Close()
			lifeW.Close()
			upR.Close()
			_ = os.Remove(pidFile)
			if hosts != "" {
				_ = os.Remove(hosts)
			}
		}
		ready := func(int) (string, error) {
			child, err := readChildPid(infoR)
			if err != nil {
				return "", err
			}
			address := ""
			if cfg.Network != NetworkHost {
				for _, r := range routes {
					l, err := listenWhenUp(b.fwd, child, r.inside)
					if err != nil {
						return "", fmt.Errorf("connect %s from the sandbox: %w", r.target, err)
					}
					listeners = append(listeners, l)
					target := r.target
					if err := b.fwd.relayFrom(l, func() (net.Conn, error) { return dialOut(target) }); err != nil {
						return "", err
					}
				}
				if cmd.Port != 0 {
					l, err := net.Listen("tcp", "127.0.0.1:0")
					if err != nil {
						return "", err
					}
					listeners = append(listeners, l)
					port := cmd.Port
					if err := b.fwd.relayFrom(l, func() (net.Conn, error) { return b.fwd.dialIn(child, port) }); err != nil {
						return "", err
					}
					address = l.Addr().String()
				}
			}
			// Let the command run.
			if _, err := blockW.Write([]byte{1}); err != nil {
				return "", fmt.Errorf("release the sandbox: %w", err)
			}
			// Answer only once the sandbox is up and its watcher armed: until
			// then bwrap's own processes depend on each other, and a plugin
			// killed in between left one waiting forever (the next plugin
			// process clears it, see killLeftovers).
			_ = upR.SetReadDeadline(time.Now().Add(setupTimeout))
			if _, err := upR.Read(make([]byte, 1)); err != nil {
				return "", fmt.Errorf("the sandbox did not come up: %w", err)
			}
			return address, nil
		}
		return dirfs.WrappedService{
			// fds 3 to 6 in the order above.
			Argv: helper, Env: env, ExtraFiles: []*os.File{infoW, blockR, lifeR, upW},
			Ready: ready, Ended: ended,
			// bwrap dies of SIGTERM and would take the service with it.
			SpareLeader: true,
			SignalExit:  true,
		}, nil
	}
}

// listenWhenUp listens on addr in the sandbox's network namespace,
// waiting for bwrap to bring its loopback interface up: the pid bwrap
// reports may come before that, and until then no 127.x address exists.
func listenWhenUp(f *forwarder, pid int, addr string) (net.Listener, error) {
	deadline := time.Now().Add(setupTimeout)
	for {
		l, err := f.listenIn(pid, addr)
		if err == nil || !errors.Is(err, syscall.EADDRNOTAVAIL) || time.Now().After(deadline) {
			return l, err
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// newPipes makes n pipes, [read, write] each; none on error.
func newPipes(n int) ([][2]*os.File, error) {
	var out [][2]*os.File
	for range n {
		r, w, err := os.Pipe()
		if err != nil {
			for _, p := range out {
				p[0].Close()
				p[1].Close()
			}
			return nil, err
		}
		out = append(out, [2]*os.File{r, w})
	}
	return out, nil
}

// dialOut connects to a Connect target for a service, from the plugin's
// network (a variable so tests can stand in for DNS).
var dialOut = func(target string) (net.Conn, error) {
	return net.DialTimeout("tcp", target, connectTimeout)
}

// readChildPid reads bwrap's --info-fd report: the pid of the sandbox's
// init, which lives in its namespaces. EOF first means bwrap failed.
func readChildPid(r *os.File) (int, error) {
	_ = r.SetReadDeadline(time.Now().Add(setupTimeout))
	var info struct {
		ChildPid int `json:"child-pid"`
	}
	if err := json.NewDecoder(r).Decode(&info); err != nil {
		return 0, fmt.Errorf("bubblewrap did not set the sandbox up: %w", err)
	}
	if info.ChildPid <= 1 {
		return 0, fmt.Errorf("bubblewrap reported no sandbox pid")
	}
	return info.ChildPid, nil
}

// route is one Connect entry: inside is where the service connects (the
// same loopback address, or an alias of the host name), target where the
// plugin connects for it.
type route struct {
	host, inside, target string
	alias                string // the name's address inside, "" for an IP
}

// parseConnect checks a spec's Connect list and gives each host name an
// alias address inside the sandbox. An IP must be a loopback one: the
// sandbox has only a loopback interface to listen on.
func parseConnect(list []string) ([]route, error) {
	if len(list) > maxConnect {
		return nil, plugin.Errorf(plugin.CodeInvalidArgument, "connect", "at most %d connect addresses", maxConnect)
	}
	aliases := map[string]string{}
	seen := map[string]bool{}
	var out []route
	for _, a := range list {
		host, port, err := net.SplitHostPort(a)
		if n, perr := strconv.Atoi(port); err != nil || perr != nil || n < 1 || n > 65535 || host == "" {
			return nil, plugin.Errorf(plugin.CodeInvalidArgument, "connect", "connect address %q is not host:port", a)
		}
		if seen[strings.ToLower(a)] {
			continue
		}
		seen[strings.ToLower(a)] = true
		r := route{host: host, target: a}
		ip := net.ParseIP(host)
		if strings.EqualFold(host, "localhost") {
			// Resolved without /etc/hosts by some runtimes: keep its address.
			ip = net.IPv4(127, 0, 0, 1)
			r.inside = net.JoinHostPort("127.0.0.1", port)
		}
		if ip != nil {
			if !ip.IsLoopback() {
				return nil, plugin.Errorf(plugin.CodeInvalidArgument, "connect", "connect address %q: an IP must be a loopback one; name a remote server by its host name", a)
			}
			if r.inside == "" {
				r.inside = a
			}
		} else {
			if strings.ContainsAny(host, " \t\n#") {
				return nil, plugin.Errorf(plugin.CodeInvalidArgument, "connect", "connect address %q has a malformed host name", a)
			}
			key := strings.ToLower(host)
			if aliases[key] == "" {
				aliases[key] = aliasNet + strconv.Itoa(len(aliases)+1)
			}
			r.alias = aliases[key]
			r.inside = net.JoinHostPort(r.alias, port)
		}
		out = append(out, r)
	}
	return out, nil
}

// writeHosts writes the /etc/hosts of one service: the names it connects
// to at their alias addresses (first, so they win over the defaults),
// then localhost. The file is the plugin's (root's, read-only inside).
func writeHosts(boxDir, service string, routes []route) (string, error) {
	var b strings.Builder
	done := map[string]bool{}
	for _, r := range routes {
		if r.alias != "" && !done[r.alias] {
			done[r.alias] = true
			fmt.Fprintf(&b, "%s %s\n", r.alias, r.host)
		}
	}
	b.WriteString("127.0.0.1 localhost\n::1 localhost ip6-localhost ip6-loopback\n")
	file := filepath.Join(boxDir, "hosts-"+service)
	if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
		return "", fmt.Errorf("write the service's hosts file: %w", err)
	}
	return file, nil
}

// checkReadOnly refuses read-only paths that would show a service the
// sandbox root: every sandbox's workspace belongs to the same uid, so a
// bound ancestor of the root would let one read the others.
func checkReadOnly(cfg Config, paths []string) error {
	for _, p := range paths {
		c := filepath.Clean(p)
		if c == "/" || within(cfg.Root, c) || within(c, cfg.Root) {
			return plugin.Errorf(plugin.CodePathDenied, "read_only_paths", "read-only path %s would show the service the sandbox root %s", p, cfg.Root)
		}
	}
	return nil
}

// within reports whether p is dir or lies under it.
func within(p, dir string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}
