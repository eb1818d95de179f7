package soak_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// token is the bootstrap (operator) token the soak hosts are started with.
const token = "soak-token"

// stopGrace is how long a host gets to exit after SIGTERM: the host's own
// shutdown grace (cmd/agenthost's shutdownGrace, 30 s) plus a margin.
const stopGrace = 40 * time.Second

// hostProc is a real `agenthost serve` process, in a process group of its
// own so that whatever it leaves behind can be killed at once.
type hostProc struct {
	cmd    *exec.Cmd
	url    string
	log    *logWatch
	client *http.Client
	// exited is closed once cmd.Wait returned; waitErr is its answer.
	exited  chan struct{}
	waitErr error
}

// startHost launches `agenthost serve` from binDir with env added to a
// cleaned copy of the test's environment, and waits until it is ready.
func startHost(t *testing.T, env []string) *hostProc {
	t.Helper()
	addr := freeAddr(t)
	cmd := exec.Command(filepath.Join(binDir, "agenthost"), "serve")
	cmd.Env = append(append(cleanEnv(), env...), "AGENTHOST_LISTEN="+addr, "AGENTHOST_BOOTSTRAP_TOKEN="+token)
	lw := &logWatch{}
	cmd.Stdout, cmd.Stderr = lw, lw
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, cmd.Start())
	h := &hostProc{cmd: cmd, url: "http://" + addr, log: lw, exited: make(chan struct{}),
		// Connections are kept alive across turns, as a browser does; the
		// pool is large enough for every session's request and stream, and
		// is emptied before each measurement (quiesce) so that the host's
		// connection count does not depend on how many happened to be idle.
		client: &http.Client{Transport: &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 256, IdleConnTimeout: time.Minute}}}
	go func() { h.waitErr = cmd.Wait(); close(h.exited) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-h.exited
	})
	deadline := time.Now().Add(60 * time.Second)
	for {
		code, err := h.call(context.Background(), "GET", "/readyz", nil, nil)
		if err == nil && code == http.StatusOK {
			return h
		}
		select {
		case <-h.exited:
			t.Fatalf("the host exited before it was ready (%v); its log:\n%s", h.waitErr, lw.tail())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("the host did not become ready; its log:\n%s", lw.tail())
		}
	}
}

// cleanEnv is the test's environment without the variables that configure
// a host: the soak decides its hosts' database, folders and policies.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if name == "DATABASE_URL" || strings.HasPrefix(name, "AGENTHOST_") || strings.HasPrefix(name, "APPS_CODING_AGENT_") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().String()
}

// pid is the host process's id.
func (h *hostProc) pid() int { return h.cmd.Process.Pid }

// call sends a request with the operator token (body as JSON when not nil)
// and decodes a 2xx answer into out when not nil. It returns the status; a
// transport failure or an undecodable answer is an error.
func (h *hostProc) call(ctx context.Context, method, path string, body, out any) (int, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, h.url+path, rd)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := h.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, fmt.Errorf("%s %s: read answer: %w", method, path, err)
	}
	if resp.StatusCode/100 != 2 {
		return resp.StatusCode, fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, bytes.TrimSpace(raw))
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return resp.StatusCode, fmt.Errorf("%s %s: decode %q: %w", method, path, raw, err)
		}
	}
	return resp.StatusCode, nil
}

// stop asks the host to shut down (SIGTERM) and waits for it: a host that
// does not exit, or exits with an error, is an error.
func (h *hostProc) stop() error {
	if err := h.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return fmt.Errorf("signal the host: %w", err)
	}
	select {
	case <-h.exited:
		if h.waitErr != nil {
			return fmt.Errorf("the host exited with %w after SIGTERM", h.waitErr)
		}
		return nil
	case <-time.After(stopGrace):
		return errors.New("the host did not exit within " + stopGrace.String() + " of SIGTERM")
	}
}

// logTail is how many of the host's last log lines a logWatch keeps, to
// show when something goes wrong.
const logTail = 200

// maxErrorLines is how many ERROR lines a logWatch keeps in full.
const maxErrorLines = 20

// logWatch takes the host's output (its hclog lines, and its plugins'
// relayed through it), counting ERROR and WARN lines and keeping the last
// few lines, without holding an hour of log in memory.
type logWatch struct {
	mu      sync.Mutex
	partial []byte
	lines   []string // ring of the last logTail lines
	next    int
	errs    []string
	nErrors int
	nWarns  int
}

func (w *logWatch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.partial = append(w.partial, p...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			break
		}
		w.line(string(w.partial[:i]))
		w.partial = w.partial[i+1:]
	}
	return len(p), nil
}

func (w *logWatch) line(l string) {
	switch {
	// hclog's text format puts the level in brackets; a Go panic or a
	// fatal runtime error is as bad as an ERROR line.
	case strings.Contains(l, "[ERROR]"), strings.HasPrefix(l, "panic:"), strings.HasPrefix(l, "fatal error:"):
		w.nErrors++
		if len(w.errs) < maxErrorLines {
			w.errs = append(w.errs, l)
		}
	case strings.Contains(l, "[WARN]"):
		w.nWarns++
	}
	if len(w.lines) < logTail {
		w.lines = append(w.lines, l)
		return
	}
	w.lines[w.next] = l
	w.next = (w.next + 1) % logTail
}

// errors returns how many ERROR lines there were, and the first few.
func (w *logWatch) errors() (int, []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.nErrors, append([]string(nil), w.errs...)
}

func (w *logWatch) warnings() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.nWarns
}

// tail returns the last lines, oldest first.
func (w *logWatch) tail() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := append(append([]string(nil), w.lines[w.next:]...), w.lines[:w.next]...)
	return strings.Join(out, "\n")
}
