//go:build linux

package bwrap

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// Paths inside the sandbox.
const (
	// WorkspacePath is where the working copy appears, read-write; it is
	// also HOME and the default working folder.
	WorkspacePath = "/workspace"
	// insideUID and insideGID are the ids commands see. They are not the
	// host ids (those are Config.UID/GID): the user namespace maps one to
	// the other, and nothing else is mapped.
	insideUID = 1000
	insideGID = 1000
)

// systemDirs are bound read-only: the userland commands need. On merged-/usr
// systems all but /usr are symlinks, recreated as symlinks.
var systemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}

// etcAllowList is the part of the host's /etc commands see, read-only:
// what the dynamic loader, name resolution, TLS, time zones and Debian's
// alternatives need. Everything else of /etc (shadow, ssh keys, the host's
// service configs) is absent. passwd, group and hostname are not the host's
// but ones written for the sandbox (see writeEtc).
var etcAllowList = []string{
	"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives",
	"/etc/localtime", "/etc/timezone", "/etc/nsswitch.conf", "/etc/hosts", "/etc/resolv.conf",
	"/etc/ssl/certs", "/etc/ca-certificates", "/etc/mime.types", "/etc/protocols", "/etc/services",
}

// etcFiles are written once per root into etcDir and bound over /etc, so
// commands see a user for their uid (some tools refuse to run without one)
// and nothing of the host's accounts.
var etcFiles = map[string]string{
	"passwd":   fmt.Sprintf("root:x:0:0:root:/root:/usr/sbin/nologin\nsandbox:x:%d:%d:sandbox:%s:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n", insideUID, insideGID, WorkspacePath),
	"group":    fmt.Sprintf("root:x:0:\nsandbox:x:%d:\nnogroup:x:65534:\n", insideGID),
	"hostname": "sandbox\n",
}

// etcDir holds etcFiles under the root; '~' keeps it apart from sandbox ids.
const etcDir = "~etc"

func writeEtc(root string) error {
	dir := filepath.Join(root, etcDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	// The folder must be reachable by bwrap running as the sandbox uid.
	if err := os.Chmod(dir, 0o755); err != nil {
		return err
	}
	for name, body := range etcFiles {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// sandboxArgs builds bwrap's arguments for one command: new user, pid, ipc,
// uts, cgroup and mount namespaces (and net unless the policy is host), no
// capabilities, death with the plugin, system folders and an /etc
// allow-list read-only, the workspace read-write at WorkspacePath, private
// /tmp, /proc and /dev. argv runs through sh so that a missing or
// non-executable command answers 127 / 126 as it does on local.
//
// No --new-session: the exec machinery already starts the helper, and so
// bwrap, in a session of its own without a controlling terminal, which is
// what --new-session is for (TIOCSTI). bwrap's --new-session would make the
// sandbox's pid-namespace init call setsid, leaving the process group a
// cancel, a timeout or Stop kills, and only afterwards arm its parent-death
// signal: a kill landing in between killed bwrap but orphaned the init, and
// with it the whole sandbox (issue 14). Kept in the group, the init dies
// with the group kill, and the kernel then kills everything in its
// namespace.
func sandboxArgs(cfg Config, workspace, rel string, argv []string) []string {
	a := baseArgs(cfg, "")
	a = append(a, "--bind", workspace, WorkspacePath)
	return finishArgs(a, rel, commandLauncher, argv)
}

// commandLauncher runs argv through sh, so that a missing or non-executable
// command answers 127 / 126 as it does on local.
const commandLauncher = `exec "$@"`

// baseArgs are the namespaces, the system folders, /etc, /proc, /dev and
// /tmp every sandbox gets; hosts, when not "", replaces /etc/hosts.
func baseArgs(cfg Config, hosts string) []string {
	a := []string{
		"--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
		"--die-with-parent", "--cap-drop", "ALL",
		"--uid", strconv.Itoa(insideUID), "--gid", strconv.Itoa(insideGID),
		"--hostname", "sandbox",
	}
	if cfg.Network != NetworkHost {
		a = append(a, "--unshare-net")
	}
	for _, d := range systemDirs {
		fi, err := os.Lstat(d)
		switch {
		case err != nil:
		case fi.Mode()&os.ModeSymlink != 0:
			if target, err := os.Readlink(d); err == nil {
				a = append(a, "--symlink", target, d)
			}
		case fi.IsDir():
			a = append(a, "--ro-bind", d, d)
		}
	}
	for _, p := range etcAllowList {
		a = append(a, "--ro-bind-try", p, p)
	}
	for name := range etcFiles {
		a = append(a, "--ro-bind", filepath.Join(cfg.Root, etcDir, name), "/etc/"+name)
	}
	if hosts != "" {
		a = append(a, "--ro-bind", hosts, "/etc/hosts")
	}
	return append(a,
		"--proc", "/proc", "--dev", "/dev",
		// A tmpfs lives in memory that RLIMIT_AS does not count: cap it.
		"--size", strconv.FormatInt(cfg.TmpBytes, 10), "--tmpfs", "/tmp",
		"--symlink", "/tmp", "/var/tmp", "--dir", "/run")
}

// finishArgs makes the root read-only, enters the working folder and runs
// argv through sh -c launcher.
func finishArgs(a []string, rel, launcher string, argv []string) []string {
	chdir := WorkspacePath
	if rel != "." && rel != "" {
		chdir = WorkspacePath + "/" + filepath.ToSlash(rel)
	}
	a = append(a,
		// bwrap builds the tree on a tmpfs; without this a command could
		// fill memory writing into /etc or /.
		"--remount-ro", "/",
		"--chdir", chdir,
		"--", "/bin/sh", "-c", launcher, "sh")
	return append(a, argv...)
}

// serviceMounts is what a service's sandbox binds beyond a command's.
type serviceMounts struct {
	workspace, rel string
	// state is the service's private folder, bound read-write at its own
	// path (the {state} placeholder already is that path).
	state string
	// readOnly are bound read-only at their own paths.
	readOnly []string
	// hosts, when not "", replaces /etc/hosts (see writeHosts).
	hosts string
}

// serviceArgs builds bwrap's arguments for a service: a command's sandbox
// (sandboxArgs) plus its state and read-only folders, reporting the
// sandbox's pid on fd 3 and waiting for a byte on fd 4 before the service
// runs (see wrapService).
//
// fd 5 is a pipe only the plugin writes to: a watcher beside the service
// kills every process of the sandbox when it reads EOF, that is when the
// plugin is gone. bubblewrap 0.8's --die-with-parent does not hold for the
// sandbox's init (its parent-death signal does not survive the switch to
// the sandbox uid), so without it a killed plugin left its services
// running until the next plugin process cleared them.
func serviceArgs(cfg Config, m serviceMounts, argv []string) []string {
	a := baseArgs(cfg, m.hosts)
	a = append(a, "--bind", m.workspace, WorkspacePath, "--bind", m.state, StatePath)
	for _, p := range m.readOnly {
		a = append(a, "--ro-bind", p, p)
	}
	a = append(a, "--info-fd", "3", "--block-fd", "4")
	return finishArgs(a, m.rel, serviceLauncher, argv)
}

// serviceLauncher starts the plugin watcher (see serviceArgs), says so on
// fd 6 and becomes the service, which inherits neither fd. kill -1 from inside reaches
// every process of the sandbox's pid namespace but its init, which exits
// when the service does.
const serviceLauncher = `(exec 6>&-; read -r _ <&5; kill -s KILL -- -1) & echo up >&6; exec "$@" 5<&- 6>&-`
