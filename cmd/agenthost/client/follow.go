package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/agenthost/agenthost/host/apiclient"
)

// FollowFlags are how `run`, `runs follow` and `runs resume --follow`
// follow a run and answer its questions.
type FollowFlags struct {
	JSON         bool          `name:"json" help:"Print each event as one line of JSON (the API's envelope: event, seq, payload, …) instead of the transcript."`
	ApproveAll   bool          `name:"approve-all" xor:"decide" help:"Allow every permission the run asks for."`
	DenyAll      bool          `name:"deny-all" xor:"decide" help:"Deny every permission the run asks for."`
	Interactive  bool          `help:"Ask permission questions on stdin even when it is not a terminal."`
	ReconnectFor time.Duration `default:"1m" placeholder:"DURATION" help:"How long to keep reconnecting a dropped stream before giving up (exit 5)."`
}

// follower follows one run: it prints its events, answers its
// permission questions as the flags say, and ends with the exit code of
// the run's outcome.
type follower struct {
	o        *IO
	cl       *apiclient.Client
	app, run string
	flags    FollowFlags
	ctx      context.Context
	out      *transcript
	// historyEnd is the newest event when following began: events up to
	// it are the run's past, shown but not acted on, except the question
	// still open at its end.
	historyEnd int64
	last       int64
	tools      map[string]toolStart
	// pending is the open permission question; paused the pause not yet
	// followed by run.resumed.
	pending *permission
	paused  *pause
	// tried holds the questions this command already answered or could
	// not; answered those it answered.
	tried, answered map[string]bool
	end             *apiclient.Event
}

type toolStart struct {
	tool, summary string
	at            time.Time
}

type permission struct {
	ID      string          `json:"permission_id"`
	Action  string          `json:"action"`
	Title   string          `json:"title"`
	Details json.RawMessage `json:"details"`
}

type pause struct {
	Reason       string `json:"reason"`
	PermissionID string `json:"permission_id"`
}

// errLeftPaused stops following a run that stays paused.
var errLeftPaused = errors.New("left paused")

// follow follows the run from event after on (historyEnd: see follower)
// and returns the command's end: nil when the run completed, else an
// *ExitError with the outcome's code.
func follow(o *IO, cl *apiclient.Client, app, run string, after, historyEnd int64, flags FollowFlags) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var spin *spinner
	if o.StderrTerminal && !flags.JSON {
		spin = startSpinner(o.Stderr, o.StdoutTerminal)
		defer spin.Stop()
	}
	fl := &follower{o: o, cl: cl, app: app, run: run, flags: flags, ctx: ctx, historyEnd: historyEnd, last: after,
		out: &transcript{w: o.Stdout, spin: spin, sharedTerminal: o.StdoutTerminal && o.StderrTerminal}, tools: map[string]toolStart{}, tried: map[string]bool{}, answered: map[string]bool{}}
	spin.Set("waiting for the run")
	opts := apiclient.FollowOptions{GiveUp: flags.ReconnectFor, OnRetry: func(last int64, delay time.Duration, cause error) {
		spin.Set("reconnecting")
		fl.out.note(o.Stderr, "agenthost: the stream broke after event %d (%v); reconnecting in %s", last, cause, delay.Round(time.Millisecond))
	}}
	err := cl.Follow(ctx, app, run, after, opts, fl.handle)
	spin.Stop()
	fl.out.endLine()
	return fl.finish(err)
}

// handle is Follow's callback: one event, in order, exactly once.
func (fl *follower) handle(ev apiclient.Event) error {
	fl.last = ev.Seq
	if fl.flags.JSON {
		if err := printRaw(fl.o.Stdout, ev.Raw); err != nil {
			return err
		}
	} else {
		fl.render(ev)
	}
	live := ev.Seq >= fl.historyEnd
	switch ev.Type {
	case "permission.requested":
		var p permission
		_ = json.Unmarshal(ev.Payload, &p)
		fl.pending = &p
		if live {
			return fl.decide(p)
		}
	case "permission.resolved":
		fl.pending = nil
	case "run.paused":
		var p pause
		_ = json.Unmarshal(ev.Payload, &p)
		fl.paused = &p
		if live {
			return fl.onPaused(p)
		}
	case "run.resumed":
		fl.paused = nil
	}
	if apiclient.Terminal(ev.Type) {
		fl.end = &ev
	}
	return nil
}

// decide answers a permission question as the flags say, on the
// terminal, or not at all (the run stays paused; onPaused says how to
// answer later).
func (fl *follower) decide(p permission) error {
	if fl.tried[p.ID] {
		return nil
	}
	fl.tried[p.ID] = true
	decision := ""
	switch {
	case fl.flags.ApproveAll:
		decision = apiclient.DecisionAllow
	case fl.flags.DenyAll:
		decision = apiclient.DecisionDeny
	case fl.o.StdinTerminal || fl.flags.Interactive:
		answer, ok := fl.ask("Allow " + describePermission(p) + "? [y/N] ")
		if !ok {
			return nil
		}
		decision = apiclient.DecisionDeny
		if answer == "y" || answer == "yes" {
			decision = apiclient.DecisionAllow
		}
	default:
		return nil
	}
	return fl.resume(decision, p.ID)
}

// resume sends a decision ("" for a pause without a question).
func (fl *follower) resume(decision, permissionID string) error {
	err := fl.cl.ResumeRun(fl.ctx, fl.app, fl.run, decision, "")
	if apiclient.CodeOf(err) == "RUN_NOT_PAUSED" {
		// Answered by someone else first, or the run ended meanwhile:
		// the stream says what happened.
		fl.out.note(fl.o.Stderr, "agenthost: the run no longer waits for this answer: %v", err)
		return nil
	}
	if err != nil {
		return explain(err)
	}
	if permissionID != "" {
		fl.answered[permissionID] = true
	}
	return nil
}

// ask prints a question on stderr and reads a line of stdin; ok is false
// when stdin ended (or Ctrl-C) without an answer.
func (fl *follower) ask(question string) (string, bool) {
	fl.out.hold(true)
	defer fl.out.hold(false)
	fl.out.endLine()
	fmt.Fprint(fl.o.Stderr, question)
	answer, ok := fl.o.readLine(fl.ctx)
	if !fl.o.StdinTerminal {
		// The answer did not echo: end the question's line.
		fmt.Fprintln(fl.o.Stderr)
	}
	return strings.ToLower(strings.TrimSpace(answer)), ok
}

// onPaused carries on past a pause this command answered, or one its
// host resumes by itself (another host taking the run over); any other
// pause ends following with ExitPaused.
func (fl *follower) onPaused(p pause) error {
	switch p.Reason {
	case "host_lost":
		return nil
	case "permission":
		if fl.pending != nil && fl.pending.ID == p.PermissionID {
			if err := fl.decide(*fl.pending); err != nil {
				return err
			}
		}
		if fl.answered[p.PermissionID] {
			return nil
		}
	default:
		if fl.o.StdinTerminal || fl.flags.Interactive {
			answer, ok := fl.ask(fmt.Sprintf("The run paused (%s). Resume it? [y/N] ", p.Reason))
			if ok && (answer == "y" || answer == "yes") {
				return fl.resume("", "")
			}
		}
	}
	return errLeftPaused
}

// finish turns how following ended into the command's end.
func (fl *follower) finish(err error) error {
	argv0 := fl.o.Argv0
	var lost *apiclient.LostError
	switch {
	case err == nil:
	case errors.Is(err, errLeftPaused):
		how := fmt.Sprintf("%s runs resume %s %s", argv0, fl.app, fl.run)
		what := "paused (" + fl.paused.Reason + ")"
		if fl.paused.Reason == "permission" {
			if fl.pending != nil {
				what = "waiting for permission: " + describePermission(*fl.pending)
			}
			how += " --allow|--deny"
		}
		return &ExitError{Code: ExitPaused, Err: fmt.Errorf("run %s is %s; resume it with:\n  %s --follow", fl.run, what, how)}
	case errors.As(err, &lost):
		return &ExitError{Code: ExitLost, Err: fmt.Errorf("%w; the run goes on in the host: follow it again with\n  %s runs follow %s %s --after %d", explain(err), argv0, fl.app, fl.run, fl.last)}
	case errors.Is(err, context.Canceled) && fl.ctx.Err() != nil:
		return &ExitError{Code: ExitInterrupted, Err: fmt.Errorf("stopped following run %s after event %d; it goes on: %s runs follow %s %s --after %d (or runs cancel)", fl.run, fl.last, argv0, fl.app, fl.run, fl.last)}
	default:
		return explain(err)
	}
	status := ""
	var outcome terminalPayload
	if fl.end != nil {
		_ = json.Unmarshal(fl.end.Payload, &outcome)
		status = strings.TrimPrefix(fl.end.Type, "run.")
	} else {
		// The run had ended before the events followed: its record says how.
		r, err := fl.cl.GetRun(context.Background(), fl.app, fl.run)
		if err != nil {
			return explain(err)
		}
		status, outcome.ErrorCode, outcome.ErrorMessage = r.Status, r.ErrorCode, r.ErrorMessage
		if !fl.flags.JSON {
			fl.out.line("-- the run had already ended: %s", r.Status)
		}
	}
	var why error
	if fl.flags.JSON {
		// The transcript says it otherwise; a script's stderr gets a line.
		why = fmt.Errorf("run %s %s", fl.run, status)
		if outcome.ErrorCode != "" {
			why = fmt.Errorf("run %s %s: %s: %s", fl.run, status, outcome.ErrorCode, outcome.ErrorMessage)
		}
	}
	switch status {
	case apiclient.StatusCompleted:
		return nil
	case apiclient.StatusCancelled:
		return &ExitError{Code: ExitCancelled, Err: why}
	case apiclient.StatusFailed:
		return &ExitError{Code: ExitFailed, Err: why}
	}
	return &ExitError{Code: ExitFailed, Err: fmt.Errorf("run %s ended %q, which this agenthost does not know", fl.run, status)}
}

// describePermission is what a question asks to allow, as one line: its
// title (without "Allow …?" around it), and its action when the title
// does not name it.
func describePermission(p permission) string {
	title := strings.TrimSuffix(strings.TrimSpace(p.Title), "?")
	if rest, ok := strings.CutPrefix(title, "Allow "); ok {
		title = rest
	}
	switch {
	case title == "":
		return p.Action
	case strings.Contains(title, p.Action):
		return title
	}
	return p.Action + ": " + title
}
