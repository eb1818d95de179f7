// Package pgserver runs a private, throwaway PostgreSQL server that one test
// starts and owns, so the test can stop, restart or crash it without
// disturbing the shared server (TEST_DATABASE_URL) that other tests use.
// Only tests import it.
package pgserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

const (
	// superuser is the role initdb creates; the URL connects as it.
	superuser = "postgres"
	// database is the database Start creates for the test to use.
	database = "test"

	// waitSeconds bounds pg_ctl -w and pg_isready: a cold start with crash
	// recovery takes a second or two here, a loaded CI machine more.
	waitSeconds = 60
	// cmdTimeout kills a command that outlives its own wait by a margin,
	// so a wedged pg_ctl fails the test instead of hanging it.
	cmdTimeout = 2 * waitSeconds * time.Second
	// portAttempts is how often Start picks a new port when another process
	// took the free one between our probe and the server's bind.
	portAttempts = 5
	// reapWait bounds how long Kill waits for init to reap the dead server
	// processes, which takes well under a second where init reaps at all.
	reapWait = 5 * time.Second
	// logTailBytes is how much of the server log a failure message quotes.
	logTailBytes = 4 << 10
)

// settings make the server fast and disposable: without fsync an OS crash
// would lose data, which does not matter since the data dies with the test.
// A killed server (Kill) still keeps every commit, because a commit still
// writes its WAL to the kernel. synchronous_commit stays on for that reason:
// off would lose the last commits in a Kill, and with fsync off it saves
// nothing (pgbench here: single-row inserts as fast or faster with it on).
const settings = `# Written by pgserver, included from postgresql.conf.
fsync = off
full_page_writes = off
listen_addresses = '127.0.0.1'
max_connections = 100
# 16MB instead of the default 128MB: tests hold little data, and several
# servers may run at once.
shared_buffers = 16MB
`

// confFile is the file, inside the data folder, that holds settings and
// the port; postgresql.conf includes it.
const confFile = "pgserver.conf"

// Server is one private PostgreSQL server, its data and its socket in a
// temporary folder that goes away after the test.
type Server struct {
	bindir string
	dir    string // the temporary folder, owned by the server's OS user
	data   string
	sock   string
	log    string
	port   int
	// cred runs the server's commands as the postgres OS user when the
	// test runs as root, since initdb and postgres refuse to run as root;
	// nil otherwise (they run as the test's user).
	cred *syscall.Credential
}

// Start creates, starts and returns a server with an empty database
// "test", stopped and removed when the test ends. Without PostgreSQL
// binaries the test is skipped, or fails when CI or TEST_DATABASE_URL is
// set (such runs must not skip silently).
func Start(t testing.TB) *Server {
	t.Helper()
	begin := time.Now()
	bindir, err := findBindir()
	if err != nil {
		unavailable(t, err.Error())
	}
	cred, err := serverCredential()
	if err != nil {
		unavailable(t, err.Error())
	}
	// Not t.TempDir: its parents are 0700 (the postgres user could not
	// reach them) and its long, test-named path may pass the 107-byte
	// limit of a Unix socket path.
	dir, err := os.MkdirTemp(tempBase(cred), "pgserver-")
	if err != nil {
		t.Fatalf("pgserver: %v", err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	s := &Server{
		bindir: bindir,
		dir:    dir,
		data:   filepath.Join(dir, "data"),
		sock:   filepath.Join(dir, "sock"),
		log:    filepath.Join(dir, "server.log"),
		cred:   cred,
	}
	if err := s.prepareDir(); err != nil {
		t.Fatalf("pgserver: %v", err)
	}
	// initdb: --no-sync since the files die with the test; --locale=C
	// because containers often lack other locales, and C sorts fastest.
	initStart := time.Now()
	if out, err := s.run("initdb", "-D", s.data, "-U", superuser, "-A", "trust",
		"-E", "UTF8", "--locale=C", "--no-sync"); err != nil {
		t.Fatalf("pgserver: initdb: %v\n%s", err, out)
	}
	initTime := time.Since(initStart)
	if err := s.appendFile(filepath.Join(s.data, "postgresql.conf"), "\ninclude '"+confFile+"'\n"); err != nil {
		t.Fatalf("pgserver: %v", err)
	}
	// Registered before the first start, so a start that fails half-way
	// still stops whatever did come up. Runs before the RemoveAll above.
	t.Cleanup(func() { s.shutdown(t) })
	if err := s.startOnFreePort(); err != nil {
		t.Fatalf("pgserver: %v%s", err, s.logTail())
	}
	if out, err := s.run("createdb", "-h", s.sock, "-p", strconv.Itoa(s.port), "-U", superuser, database); err != nil {
		t.Fatalf("pgserver: createdb: %v\n%s%s", err, out, s.logTail())
	}
	t.Logf("pgserver: PostgreSQL from %s on 127.0.0.1:%d started in %s (initdb %s)",
		bindir, s.port, time.Since(begin).Round(time.Millisecond), initTime.Round(time.Millisecond))
	return s
}

// URL is the server's "test" database for database/sql with lib/pq.
func (s *Server) URL() string {
	return fmt.Sprintf("postgres://%s@127.0.0.1:%d/%s?sslmode=disable", superuser, s.port, database)
}

// Port is the server's TCP port on 127.0.0.1; it stays the same across
// Stop and Start.
func (s *Server) Port() int { return s.port }

// Stop shuts the server down in fast mode, as a managed restart does:
// open sessions are terminated, their clients get an admin-shutdown error.
func (s *Server) Stop(t testing.TB) {
	t.Helper()
	if out, err := s.pgctl("stop", "-m", "fast"); err != nil {
		t.Fatalf("pgserver: stop: %v\n%s%s", err, out, s.logTail())
	}
}

// Start starts a stopped (or killed) server again, on the same port and
// data, and returns once it accepts connections on that port.
func (s *Server) Start(t testing.TB) {
	t.Helper()
	if err := s.start(); err != nil {
		t.Fatalf("pgserver: %v%s", err, s.logTail())
	}
}

// Restart stops and starts the server, logging how long it was down.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	begin := time.Now()
	s.Stop(t)
	s.Start(t)
	t.Logf("pgserver: restarted 127.0.0.1:%d in %s", s.port, time.Since(begin).Round(time.Millisecond))
}

// Kill crashes the server: SIGKILL to the postmaster, as the OOM killer
// would. It returns once the postmaster and its children are gone, so that
// Start, which then runs crash recovery, finds neither a live pid in
// postmaster.pid nor processes still holding the shared memory.
func (s *Server) Kill(t testing.TB) {
	t.Helper()
	pid, err := s.postmasterPID()
	if err != nil {
		t.Fatalf("pgserver: kill: %v", err)
	}
	// Find the children by parent pid now, before they are orphaned: each
	// runs in a session of its own, so no process group holds them all.
	// They exit by themselves once they notice the postmaster died.
	pids := append(children(pid), pid)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("pgserver: kill %d: %v", pid, err)
	}
	// The dead processes are now init's to reap. A zombie postmaster still
	// counts as running for the next postmaster's lock-file check, so wait
	// for the reaping (about 0.6s here) ...
	deadline := time.Now().Add(reapWait)
	for _, p := range pids {
		for !reaped(p) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
	}
	for _, p := range pids {
		if !reaped(p) && !zombie(p) {
			t.Fatalf("pgserver: process %d still runs %s after killing postmaster %d", p, reapWait, pid)
		}
	}
	// ... but a container whose pid 1 is not an init never reaps. A zombie
	// holds no memory or files, so the lock file is stale: remove it.
	if !reaped(pid) {
		if err := os.Remove(filepath.Join(s.data, "postmaster.pid")); err != nil {
			t.Fatalf("pgserver: remove the lock file of zombie postmaster %d: %v", pid, err)
		}
	}
}

// LogPath is the server's log file, for a test that wants to read it.
func (s *Server) LogPath() string { return s.log }

// startOnFreePort writes a fresh free port into the config and starts the
// server, trying again with another port when that one was taken in the
// meantime (the probe has to close its listener before postgres binds).
func (s *Server) startOnFreePort() error {
	var err error
	for range portAttempts {
		if s.port, err = freePort(); err != nil {
			return err
		}
		conf := settings + fmt.Sprintf("port = %d\nunix_socket_directories = '%s'\n", s.port, s.sock)
		if err = s.writeFile(filepath.Join(s.data, confFile), conf); err != nil {
			return err
		}
		logStart := fileSize(s.log)
		if err = s.start(); err == nil || !s.logSince(logStart, "could not bind") {
			return err
		}
	}
	return fmt.Errorf("no free port after %d attempts: %w", portAttempts, err)
}

// start starts the server with pg_ctl -w and checks with pg_isready that
// it answers on TCP, which is how tests reach it (pg_ctl -w watches the
// Unix socket and postmaster.pid).
func (s *Server) start() error {
	if out, err := s.pgctl("start", "-l", s.log); err != nil {
		return fmt.Errorf("start: %w\n%s", err, out)
	}
	if out, err := s.run("pg_isready", "-h", "127.0.0.1", "-p", strconv.Itoa(s.port),
		"-U", superuser, "-d", "postgres", "-t", strconv.Itoa(waitSeconds)); err != nil {
		return fmt.Errorf("pg_isready: %w\n%s", err, out)
	}
	return nil
}

// shutdown is Start's cleanup: an immediate stop, since the data is thrown
// away and needs no checkpoint. A server the test left stopped or killed
// is fine.
func (s *Server) shutdown(t testing.TB) {
	pid, err := s.postmasterPID()
	if err != nil || reaped(pid) || zombie(pid) {
		return // stopped or killed
	}
	if out, err := s.pgctl("stop", "-m", "immediate"); err != nil {
		t.Errorf("pgserver: stop at cleanup: %v\n%s%s", err, out, s.logTail())
	}
}

// pgctl runs a pg_ctl command on the data folder and waits for it.
func (s *Server) pgctl(action string, args ...string) ([]byte, error) {
	return s.run("pg_ctl", append([]string{action, "-D", s.data, "-w", "-t", strconv.Itoa(waitSeconds)}, args...)...)
}

// run runs one of the PostgreSQL binaries as the server's OS user, from
// the temporary folder (the postgres user may not be allowed to enter the
// test's working folder, and pg_ctl needs a current folder it can reach).
func (s *Server) run(name string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(s.bindir, name), args...)
	cmd.Dir = s.dir
	cmd.Env = serverEnv()
	// The postmaster pg_ctl leaves behind writes to the log, not to our
	// pipe; should one ever keep the pipe open, do not wait on it forever.
	cmd.WaitDelay = 5 * time.Second
	if s.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.Bytes(), err
}

// prepareDir makes the temporary folder and the socket folder the server
// user's, after checking that user can reach the temporary folder.
func (s *Server) prepareDir() error {
	if err := os.Mkdir(s.sock, 0o700); err != nil {
		return err
	}
	if s.cred == nil {
		return nil
	}
	if err := reachable(filepath.Dir(s.dir), s.cred); err != nil {
		return fmt.Errorf("%w (no temporary folder that user can enter: $TMPDIR, /tmp, /var/tmp, /dev/shm)", err)
	}
	for _, p := range []string{s.dir, s.sock} {
		if err := os.Chown(p, int(s.cred.Uid), int(s.cred.Gid)); err != nil {
			return err
		}
	}
	return nil
}

// writeFile writes a file the server user owns.
func (s *Server) writeFile(path, body string) error {
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		return err
	}
	if s.cred != nil {
		return os.Chown(path, int(s.cred.Uid), int(s.cred.Gid))
	}
	return nil
}

// appendFile appends to an existing file, keeping its owner.
func (s *Server) appendFile(path, text string) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(text)
	return errors.Join(err, f.Close())
}

// postmasterPID reads the pid from the first line of postmaster.pid.
func (s *Server) postmasterPID() (int, error) {
	b, err := os.ReadFile(filepath.Join(s.data, "postmaster.pid"))
	if err != nil {
		return 0, fmt.Errorf("server not running: %w", err)
	}
	first, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(first))
	if err != nil {
		return 0, fmt.Errorf("postmaster.pid: %w", err)
	}
	return pid, nil
}

// logTail is the end of the server log, formatted to follow an error.
func (s *Server) logTail() string {
	f, err := os.Open(s.log)
	if err != nil {
		return ""
	}
	defer f.Close()
	if size := fileSize(s.log); size > logTailBytes {
		_, _ = f.Seek(size-logTailBytes, 0)
	}
	var b bytes.Buffer
	_, _ = b.ReadFrom(f)
	return fmt.Sprintf("\n--- tail of %s ---\n%s", s.log, b.String())
}

// logSince reports whether the log, from byte offset on, contains text.
func (s *Server) logSince(offset int64, text string) bool {
	b, err := os.ReadFile(s.log)
	if err != nil || int64(len(b)) < offset {
		return false
	}
	return bytes.Contains(b[offset:], []byte(text))
}

func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// unavailable skips the test, or fails it where skipping would hide a
// broken setup: CI, or a run that was given a PostgreSQL server.
func unavailable(t testing.TB, reason string) {
	t.Helper()
	if os.Getenv("CI") != "" || os.Getenv("TEST_DATABASE_URL") != "" {
		t.Fatalf("pgserver: %s (CI or TEST_DATABASE_URL is set, so this must not skip)", reason)
	}
	t.Skipf("pgserver: %s: install the PostgreSQL server (apt-get install postgresql)", reason)
}

// findBindir finds the folder with initdb and pg_ctl: the newest Debian
// /usr/lib/postgresql/N/bin, else pg_config --bindir, else $PATH.
func findBindir() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	// Newest first, by number: a string sort puts 9.6 after 15.
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		dirs = append(dirs, strings.TrimSpace(string(out)))
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		dirs = append(dirs, filepath.Dir(p))
	}
	for _, d := range dirs {
		if hasAll(d, "initdb", "pg_ctl", "postgres", "pg_isready", "createdb") {
			return d, nil
		}
	}
	return "", errors.New("no PostgreSQL server binaries (initdb, pg_ctl, postgres) in /usr/lib/postgresql/*/bin, pg_config --bindir or $PATH")
}

// version is N of /usr/lib/postgresql/N/bin as a number, 0 if none.
func version(bindir string) float64 {
	v, _ := strconv.ParseFloat(filepath.Base(filepath.Dir(bindir)), 64)
	return v
}

func hasAll(dir string, names ...string) bool {
	for _, n := range names {
		if fi, err := os.Stat(filepath.Join(dir, n)); err != nil || fi.IsDir() {
			return false
		}
	}
	return true
}

// serverCredential is the postgres OS user when the test runs as root
// (initdb and postgres refuse root), nil otherwise.
func serverCredential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup(superuser)
	if err != nil {
		return nil, fmt.Errorf("running as root needs a %q OS user to run the server as: %w", superuser, err)
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, err
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, err
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// maxBaseLen keeps the socket path (base, "/pgserver-NNNNNNNNN/sock/",
// ".s.PGSQL.NNNNN") inside the 107 bytes a Unix socket path may have.
const maxBaseLen = 60

// tempBase is the folder the server's temporary folder goes in: $TMPDIR
// when the server's user can enter it and its path is short enough, else
// the first of /tmp, /var/tmp and /dev/shm that qualifies. A CI job or a
// sandboxed shell often points TMPDIR into a private (0700) folder, which
// the postgres user cannot reach. With no cred (not root) or no candidate,
// it is os.TempDir(), and prepareDir reports what is wrong.
func tempBase(cred *syscall.Credential) string {
	first := os.TempDir()
	for _, d := range []string{first, "/tmp", "/var/tmp", "/dev/shm"} {
		if len(d) > maxBaseLen {
			continue
		}
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
			continue
		}
		if cred == nil || reachable(d, cred) == nil {
			return d
		}
	}
	return first
}

// reachable checks that the user can enter dir and every folder above it.
func reachable(dir string, cred *syscall.Credential) error {
	for d := dir; ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			return err
		}
		mode := fi.Mode().Perm()
		ok := mode&0o001 != 0
		if st, isUnix := fi.Sys().(*syscall.Stat_t); isUnix {
			ok = ok || st.Uid == cred.Uid && mode&0o100 != 0 || st.Gid == cred.Gid && mode&0o010 != 0
		}
		if !ok {
			return fmt.Errorf("uid %d cannot enter %s (mode %v)", cred.Uid, d, mode)
		}
		if parent := filepath.Dir(d); parent == d {
			return nil
		}
	}
}

// serverEnv is the environment without PG* variables, which would point
// the client tools at another server.
func serverEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PG") {
			env = append(env, kv)
		}
	}
	return env
}

// freePort asks the kernel for a free port on 127.0.0.1 and releases it
// for the server to bind.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// children lists the processes whose parent is pid, from /proc; empty
// where there is no /proc.
func children(pid int) []int {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var pids []int
	for _, f := range stats {
		if ppid, _, ok := procStat(f); ok && ppid == pid {
			p, _ := strconv.Atoi(filepath.Base(filepath.Dir(f)))
			pids = append(pids, p)
		}
	}
	return pids
}

// reaped reports whether pid no longer exists, not even as a zombie.
func reaped(pid int) bool {
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

// zombie reports whether pid has exited but was not reaped; false where
// there is no /proc.
func zombie(pid int) bool {
	_, state, ok := procStat(fmt.Sprintf("/proc/%d/stat", pid))
	return ok && state == "Z"
}

// procStat reads the parent pid and state from a /proc/PID/stat file.
func procStat(path string) (ppid int, state string, ok bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, "", false
	}
	// The command name in parentheses may contain spaces; the fields after
	// its closing parenthesis are "state ppid ...".
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, "", false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 2 {
		return 0, "", false
	}
	ppid, err = strconv.Atoi(f[1])
	return ppid, f[0], err == nil
}
