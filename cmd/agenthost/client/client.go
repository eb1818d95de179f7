// Package client is the agenthost command-line client: `agenthost apps`,
// `run`, `runs`, `checkpoints`, `diff`, `models` and `chats`. Every command
// speaks the host's public HTTP API through host/apiclient, and nothing
// else (host/archtest holds it to that), so a script can do the same with
// curl. The commands are kong command structs; cmd/agenthost mounts them
// and binds an *IO for their Run methods.
package client

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agenthost/agenthost/host/apiclient"
)

// The environment variables the client commands read (kong reads them
// through the flags' env tags; these name them for messages and help).
const (
	EnvURL   = "AGENTHOST_URL"
	EnvToken = "AGENTHOST_TOKEN"
	// DefaultURL is where a host started by `agenthost serve` with no
	// configuration listens.
	DefaultURL = "http://127.0.0.1:8080"
)

// Exit codes of the client commands. 0–2 are every agenthost command's
// (done, failed, usage); `run`, `runs follow` and `runs resume --follow`
// add the outcomes of the run they follow.
const (
	ExitOK = 0
	// ExitFailed: the run failed, or the command did (an API error, the
	// host unreachable).
	ExitFailed = 1
	// ExitUsage: the command line or the configuration (no token) is
	// wrong.
	ExitUsage = 2
	// ExitCancelled: the run was cancelled.
	ExitCancelled = 3
	// ExitPaused: the run is paused and this command left it so (a
	// permission nobody here may answer, a spent token budget).
	ExitPaused = 4
	// ExitLost: the stream could not be resumed for the reconnect time;
	// the run goes on in the host.
	ExitLost = 5
	// ExitInterrupted: Ctrl-C stopped following; the run goes on.
	ExitInterrupted = 130
)

// ExitError ends a command with a code; Err, when set, is printed first.
type ExitError struct {
	Code int
	Err  error
}

// Error is Err's message.
func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit %d", e.Code)
	}
	return e.Err.Error()
}

// Unwrap is Err.
func (e *ExitError) Unwrap() error { return e.Err }

// IO is what the commands read and write; cmd/agenthost binds it.
type IO struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// StdinTerminal and StderrTerminal say whether those are terminals:
	// permission questions are asked only on a terminal (or with
	// --interactive), the spinner drawn only on one. StdoutTerminal keeps
	// the spinner off a line of text being written there.
	StdinTerminal, StdoutTerminal, StderrTerminal bool
	// Argv0 is how the user invoked agenthost, for the commands printed
	// as hints.
	Argv0 string

	lines *lineReader
}

// Conn is the flags every client command takes: which host, which token.
type Conn struct {
	URL   string `name:"url" env:"AGENTHOST_URL" default:"http://127.0.0.1:8080" placeholder:"URL" help:"The host's base URL."`
	Token string `name:"token" env:"AGENTHOST_TOKEN" placeholder:"TOKEN" help:"API token (agenthost tokens create makes one)."`
}

// client is the API client of the flags; no token is a usage error that
// says how to get one.
func (c *Conn) client() (*apiclient.Client, error) {
	if strings.TrimSpace(c.Token) == "" {
		return nil, &ExitError{Code: ExitUsage, Err: fmt.Errorf("no API token: set %s or pass --token (an operator makes one with: agenthost tokens create --tenant default --scopes apps.read,apps.write)", EnvToken)}
	}
	cl := apiclient.New(c.URL, strings.TrimSpace(c.Token))
	cl.UserAgent = "agenthost-cli"
	return cl, nil
}

// forApp connects and resolves the app argument (an id or a unique name):
// how every command about one app starts.
func (c *Conn) forApp(arg string) (context.Context, *apiclient.Client, string, error) {
	cl, err := c.client()
	if err != nil {
		return nil, nil, "", err
	}
	ctx := context.Background()
	app, err := resolveApp(ctx, cl, arg)
	return ctx, cl, app, err
}

// explain adds to an error what the user can do about it: a host that
// does not answer is named with the way to point at another.
func explain(err error) error {
	var ce *apiclient.ConnError
	if errors.As(err, &ce) {
		return fmt.Errorf("%w (is agenthost serve running there? set %s or pass --url)", err, EnvURL)
	}
	return err
}

// Listing is the paging flags of a list command.
type Listing struct {
	Limit  int    `default:"50" help:"Items per page (1-200)."`
	Cursor string `placeholder:"CURSOR" help:"Where the previous page ended (its next cursor)."`
	JSON   bool   `name:"json" help:"Print the API's JSON page as it is."`
}

func (l Listing) options() apiclient.ListOptions {
	return apiclient.ListOptions{Limit: l.Limit, Cursor: l.Cursor}
}

// printPage prints a list page: the raw JSON with --json, else a table
// whose header and rows row gives, and a note on stderr when more follow.
func printPage[T any](o *IO, l Listing, p apiclient.Page[T], header string, row func(T) string) error {
	if l.JSON {
		return printRaw(o.Stdout, p.Raw)
	}
	tw := tabwriter.NewWriter(o.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	for _, it := range p.Items {
		fmt.Fprintln(tw, row(it))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if p.NextCursor != "" {
		fmt.Fprintf(o.Stderr, "more: --cursor %s\n", p.NextCursor)
	}
	return nil
}

// printRaw prints a JSON answer on one line.
func printRaw(w io.Writer, raw json.RawMessage) error {
	_, err := fmt.Fprintf(w, "%s\n", strings.TrimSpace(string(raw)))
	return err
}

// when is a time for a table: local, to the second.
func when(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04:05")
}

// plural is "1 file", "2 files".
func plural[N int | int64](n N, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// orDash is s, or "-" for a table cell left empty.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// resolveApp takes an app id (app_…) as it is and looks any other word up
// as an app name among the tenant's apps: exactly one must have it.
func resolveApp(ctx context.Context, cl *apiclient.Client, arg string) (string, error) {
	if strings.HasPrefix(arg, "app_") {
		return arg, nil
	}
	var ids []string
	o := apiclient.ListOptions{Limit: 200}
	for {
		p, err := cl.ListApps(ctx, o)
		if err != nil {
			return "", explain(err)
		}
		for _, a := range p.Items {
			if a.Name == arg {
				ids = append(ids, a.ID)
			}
		}
		if p.NextCursor == "" {
			break
		}
		o.Cursor = p.NextCursor
	}
	switch len(ids) {
	case 0:
		return "", fmt.Errorf("no app is named %q (give its id, app_…: agenthost apps list)", arg)
	case 1:
		return ids[0], nil
	}
	return "", fmt.Errorf("%d apps are named %q: %s; give the id", len(ids), arg, strings.Join(ids, ", "))
}

// lineReader reads stdin a line at a time on its own goroutine, when
// asked, so that a question waiting for an answer still notices Ctrl-C.
// IO.Close ends the goroutine; one blocked in a read of a terminal ends
// after that read, or with the process.
type lineReader struct {
	ask     chan struct{}
	answers chan lineResult
}

type lineResult struct {
	line string
	ok   bool
}

func (o *IO) lineReader() *lineReader {
	if o.lines == nil {
		lr := &lineReader{ask: make(chan struct{}), answers: make(chan lineResult, 1)}
		sc := bufio.NewScanner(o.Stdin)
		go func() {
			for range lr.ask {
				ok := sc.Scan()
				lr.answers <- lineResult{sc.Text(), ok}
			}
		}()
		o.lines = lr
	}
	return o.lines
}

// readLine is stdin's next line; ok is false at its end or when ctx ends.
func (o *IO) readLine(ctx context.Context) (string, bool) {
	lr := o.lineReader()
	select {
	case lr.ask <- struct{}{}:
	case <-ctx.Done():
		return "", false
	}
	select {
	case r := <-lr.answers:
		return r.line, r.ok
	case <-ctx.Done():
		// The read goes on; its answer waits in the buffer, unread: a
		// cancelled command asks nothing more.
		return "", false
	}
}

// Close ends the stdin reader, if a question started one.
func (o *IO) Close() {
	if o.lines != nil {
		close(o.lines.ask)
		o.lines = nil
	}
}
