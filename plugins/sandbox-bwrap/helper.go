//go:build linux

package bwrap

import (
	"fmt"
	"os"
	"strconv"
	"syscall"
	"unsafe"

	"github.com/agenthost/agenthost/sdk/workspace/dirfs"
	"golang.org/x/sys/unix"
)

// HelperArg is the first argument that makes the plugin binary act as the
// exec helper instead of serving the plugin: it drops to the sandbox's uid,
// sets the command's rlimits on itself and execs bwrap. A main that serves
// this provider must call MaybeRunHelper first.
//
// The helper exists because Go's os/exec can set neither rlimits nor (with
// the shared dirfs exec machinery) credentials on a child before it execs:
// limits applied afterwards with prlimit race bwrap's own fork, and a limit
// that misses the sandbox's first process misses all of them.
const HelperArg = "__agenthost-bwrap-exec"

// helperPlan is what the plugin tells the helper, as fixed positional
// arguments after HelperArg (no parsing library for a private protocol).
type helperPlan struct {
	// pidFile, when not "-", receives the helper's execRecord (its pid is
	// bwrap's after exec) so the plugin can find the command's namespaces
	// and a relaunched plugin its session.
	pidFile  string
	uid, gid int // -1: keep the plugin's
	// RLIMIT_CPU, _FSIZE, _AS, _DATA and _NPROC; 0 leaves cpuS, memory
	// and data unlimited (a service runs for hours, and Bun reserves far
	// more address space than it uses).
	cpuS, fileSize, memory, data, processes uint64
	bwrap                                   string
	args                                    []string
}

func (p helperPlan) argv(self string) []string {
	u := func(v uint64) string { return strconv.FormatUint(v, 10) }
	if p.pidFile == "" {
		p.pidFile = "-"
	}
	out := []string{self, HelperArg, p.pidFile, strconv.Itoa(p.uid), strconv.Itoa(p.gid),
		u(p.cpuS), u(p.fileSize), u(p.memory), u(p.data), u(p.processes), p.bwrap}
	return append(out, p.args...)
}

const helperFixed = 11 // argv entries before bwrap's own arguments

func parsePlan(argv []string) (helperPlan, error) {
	if len(argv) < helperFixed || argv[1] != HelperArg {
		return helperPlan{}, fmt.Errorf("helper: malformed arguments")
	}
	p := helperPlan{pidFile: argv[2]}
	var err error
	ints := []*int{&p.uid, &p.gid}
	for i, dst := range ints {
		if *dst, err = strconv.Atoi(argv[3+i]); err != nil {
			return p, fmt.Errorf("helper: %w", err)
		}
	}
	uints := []*uint64{&p.cpuS, &p.fileSize, &p.memory, &p.data, &p.processes}
	for i, dst := range uints {
		if *dst, err = strconv.ParseUint(argv[5+i], 10, 64); err != nil {
			return p, fmt.Errorf("helper: %w", err)
		}
	}
	p.bwrap, p.args = argv[helperFixed-1], argv[helperFixed:]
	return p, nil
}

// MaybeRunHelper runs the exec helper and never returns when os.Args says
// so; otherwise it returns at once. Call it first thing in main (and in a
// TestMain that serves the provider in-process).
func MaybeRunHelper() {
	if len(os.Args) < 2 || os.Args[1] != HelperArg {
		return
	}
	err := runHelper(os.Args)
	// Exit 125 like env(1) or a container runtime when the wrapper itself
	// fails, so it is not mistaken for the command's own status.
	fmt.Fprintf(os.Stderr, "agenthost-bwrap: %v\n", err)
	os.Exit(125)
}

func runHelper(argv []string) error {
	p, err := parsePlan(argv)
	if err != nil {
		return err
	}
	// bwrap runs without --new-session (see sandboxArgs) because the exec
	// machinery gives this process a session of its own. Refuse to run a
	// sandbox in the plugin's session, with its controlling terminal, if
	// that ever changes.
	if sid, err := unix.Getsid(0); err != nil || sid != os.Getpid() {
		return fmt.Errorf("the exec helper must lead a session of its own (session %d, pid %d, %v)", sid, os.Getpid(), err)
	}
	// The parent-death signal the exec machinery asked for is cleared by
	// the kernel when the uid changes below; note the parent to re-arm it.
	parent := os.Getppid()
	if p.pidFile != "-" {
		start, ok := dirfs.ProcStart(os.Getpid())
		if !ok {
			return fmt.Errorf("record pid: cannot read this process's start time from /proc")
		}
		if err := os.WriteFile(p.pidFile, []byte(execRecord{pid: os.Getpid(), start: start}.String()), 0o600); err != nil {
			return fmt.Errorf("record pid: %w", err)
		}
	}
	if p.uid >= 0 {
		// Groups first: after setuid the process may no longer change them.
		if err := syscall.Setgroups(nil); err != nil {
			return fmt.Errorf("drop groups: %w", err)
		}
		if err := syscall.Setresgid(p.gid, p.gid, p.gid); err != nil {
			return fmt.Errorf("set gid %d: %w", p.gid, err)
		}
		if err := syscall.Setresuid(p.uid, p.uid, p.uid); err != nil {
			return fmt.Errorf("set uid %d: %w", p.uid, err)
		}
		// Re-arm it (exec keeps it: bwrap is not set-uid), so a plugin
		// dying before bwrap arms its own --die-with-parent still takes
		// this process with it; if the plugin died meanwhile, stop here.
		if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(syscall.SIGKILL), 0, 0, 0); err != nil {
			return fmt.Errorf("set parent-death signal: %w", err)
		}
		if os.Getppid() != parent {
			return fmt.Errorf("the plugin exited while the command started")
		}
	}
	type rlimit struct {
		res int
		v   uint64
	}
	limits := []rlimit{
		{unix.RLIMIT_FSIZE, p.fileSize},
		// RLIMIT_NPROC counts every process of the real uid, which is why
		// the sandbox runs under a uid of its own.
		{unix.RLIMIT_NPROC, p.processes},
		// No core files: they would land in the workspace, past FSIZE's
		// intent, and could hold secrets of the command.
		{unix.RLIMIT_CORE, 0},
	}
	if p.cpuS > 0 {
		limits = append(limits, rlimit{unix.RLIMIT_CPU, p.cpuS})
	}
	if p.data > 0 {
		// Private writable memory: what a process really allocates. Unlike
		// RLIMIT_AS it does not count Bun's (JavaScriptCore's) huge
		// PROT_NONE reservations, so it bounds an agent server.
		limits = append(limits, rlimit{unix.RLIMIT_DATA, p.data})
	}
	for _, l := range limits {
		if err := unix.Setrlimit(l.res, &unix.Rlimit{Cur: l.v, Max: l.v}); err != nil {
			return fmt.Errorf("setrlimit %d: %w", l.res, err)
		}
	}
	// Go raised this process's soft limit on open files to the hard one;
	// syscall.Exec would put back the one it started with, which the raw
	// exec below cannot know. Commands start from the usual 1024 (or the
	// hard limit, when lower) and may raise it themselves.
	var nofile unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &nofile); err == nil && nofile.Cur > defaultOpenFiles {
		nofile.Cur = min(defaultOpenFiles, nofile.Max)
		if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &nofile); err != nil {
			return fmt.Errorf("setrlimit NOFILE: %w", err)
		}
	}
	// Everything exec needs is made before the address-space limit, which
	// goes last and is followed by no allocation: this Go process may be
	// over the limit already, and a heap growth then aborts it ("runtime:
	// cannot allocate memory", seen inside syscall.Exec).
	path, err := syscall.BytePtrFromString(p.bwrap)
	if err != nil {
		return err
	}
	argvp, err := syscall.SlicePtrFromStrings(append([]string{p.bwrap}, p.args...))
	if err != nil {
		return err
	}
	envvp, err := syscall.SlicePtrFromStrings(os.Environ())
	if err != nil {
		return err
	}
	addressSpace := &unix.Rlimit{Cur: p.memory, Max: p.memory}
	if p.memory > 0 {
		if err := unix.Setrlimit(unix.RLIMIT_AS, addressSpace); err != nil {
			return fmt.Errorf("setrlimit AS: %w", err)
		}
	}
	_, _, errno := syscall.RawSyscall(syscall.SYS_EXECVE, uintptr(unsafe.Pointer(path)),
		uintptr(unsafe.Pointer(&argvp[0])), uintptr(unsafe.Pointer(&envvp[0])))
	return fmt.Errorf("exec %s: %w", p.bwrap, errno)
}

// defaultOpenFiles is the soft limit on open files a command starts with.
const defaultOpenFiles = 1024
