package client

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/agenthost/agenthost/host/apiclient"
)

// RunCmd is `agenthost run APP PROMPT`: start a run and follow it.
type RunCmd struct {
	Conn
	App    string `arg:"" help:"The app's id, or its name."`
	Prompt string `arg:"" help:"What to ask the agent; - reads it from stdin. (The mock engine's prompt is a script: plugins/engine-mock/README.md.)"`
	Engine string `placeholder:"NAME" help:"Engine (default: the host's: mock unless its operator set another)."`
	Model  string `placeholder:"MODEL_ID" help:"Model (default: the tenant's, else the global default; agenthost models list)."`
	Chat   string `placeholder:"CHAT_ID" help:"Continue this chat session: its turns are the run's history (default: a new chat)."`
	Budget int64  `placeholder:"TOKENS" help:"Token budget: the run pauses when its model has used this many tokens."`
	Follow bool   `default:"true" negatable:"" help:"Follow the run to its end (the default, also in scripts); --no-follow prints its id and returns."`
	FollowFlags
}

// Run creates the run and, unless --no-follow, follows it; the exit code
// is the run's outcome.
func (c *RunCmd) Run(o *IO) error {
	cl, err := c.client()
	if err != nil {
		return err
	}
	ctx := context.Background()
	prompt := c.Prompt
	if prompt == "-" {
		b, err := io.ReadAll(o.Stdin)
		if err != nil {
			return fmt.Errorf("read the prompt from stdin: %w", err)
		}
		// Stdin held the prompt: it cannot answer questions too.
		prompt, o.StdinTerminal, c.Interactive = string(b), false, false
	}
	app, err := resolveApp(ctx, cl, c.App)
	if err != nil {
		return err
	}
	req := apiclient.RunRequest{Prompt: prompt, Engine: c.Engine, ChatSessionID: c.Chat}
	if c.Model != "" {
		req.ModelID = &c.Model
	}
	if c.Budget != 0 {
		req.TokenBudget = &c.Budget
	}
	r, err := cl.CreateRun(ctx, app, req)
	if err != nil {
		return explain(err)
	}
	if !c.Follow {
		if c.JSON {
			return printRaw(o.Stdout, r.Raw)
		}
		_, err := fmt.Fprintln(o.Stdout, r.ID)
		return err
	}
	return follow(o, cl, app, r.ID, 0, 0, c.FollowFlags)
}

// RunsCmd is `agenthost runs`.
type RunsCmd struct {
	List   RunsListCmd   `cmd:"" help:"List an app's runs, newest first."`
	Get    RunsGetCmd    `cmd:"" help:"Show a run."`
	Follow RunsFollowCmd `cmd:"" help:"Follow a run's events (from its first, or after --after) to its end."`
	Cancel RunsCancelCmd `cmd:"" help:"Cancel a run."`
	Resume RunsResumeCmd `cmd:"" help:"Resume a paused run: answer its permission question (--allow or --deny), or continue it."`
}

// RunsListCmd lists runs.
type RunsListCmd struct {
	Conn
	App    string `arg:"" help:"The app's id, or its name."`
	Status string `enum:"queued,running,paused,completed,failed,cancelled," default:"" help:"Only runs in this status."`
	Listing
}

// Run prints a page of runs.
func (c *RunsListCmd) Run(o *IO) error {
	ctx, cl, app, err := c.forApp(c.App)
	if err != nil {
		return err
	}
	p, err := cl.ListRuns(ctx, app, c.Status, c.options())
	if err != nil {
		return explain(err)
	}
	return printPage(o, c.Listing, p, "ID\tSTATUS\tENGINE\tCREATED\tRESULT\tERROR", func(r apiclient.Run) string {
		return fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s", r.ID, r.Status, r.ExecutionEngine, when(r.CreatedAt), orDash(r.ResultRevisionID), orDash(r.ErrorCode))
	})
}

// RunsGetCmd shows a run.
type RunsGetCmd struct {
	Conn
	App   string `arg:"" help:"The app's id, or its name."`
	RunID string `arg:"" name:"run" help:"The run's id."`
	JSON  bool   `name:"json" help:"Print the API's run as it is."`
}

// Run prints the run.
func (c *RunsGetCmd) Run(o *IO) error {
	ctx, cl, app, err := c.forApp(c.App)
	if err != nil {
		return err
	}
	r, err := cl.GetRun(ctx, app, c.RunID)
	if err != nil {
		return explain(err)
	}
	if c.JSON {
		return printRaw(o.Stdout, r.Raw)
	}
	tw := tabwriter.NewWriter(o.Stdout, 0, 4, 2, ' ', 0)
	status := r.Status
	if r.PauseReason != "" {
		status += " (" + r.PauseReason + ")"
	}
	fmt.Fprintf(tw, "id\t%s\nstatus\t%s\nengine\t%s\nmodel\t%s\nchat\t%s\n", r.ID, status, r.ExecutionEngine, orDash(r.ResolvedModelID), orDash(r.ChatSessionID))
	fmt.Fprintf(tw, "base\t%s\nresult\t%s\n", r.BaseRevisionID, orDash(r.ResultRevisionID))
	if r.ErrorCode != "" {
		fmt.Fprintf(tw, "error\t%s: %s\n", r.ErrorCode, r.ErrorMessage)
	}
	fmt.Fprintf(tw, "tokens\t%d in, %d out\ncreated\t%s\n", r.InputTokens, r.OutputTokens, when(r.CreatedAt))
	if r.FinishedAt != nil {
		fmt.Fprintf(tw, "finished\t%s\n", when(*r.FinishedAt))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if r.OutputText != "" {
		fmt.Fprintf(o.Stdout, "output:\n%s\n", strings.TrimRight(r.OutputText, "\n"))
	}
	return nil
}

// RunsFollowCmd follows a run that exists already.
type RunsFollowCmd struct {
	Conn
	App   string `arg:"" help:"The app's id, or its name."`
	RunID string `arg:"" name:"run" help:"The run's id."`
	After int64  `placeholder:"SEQ" help:"Start after this event (as a lost stream's message says); default: from the first."`
	FollowFlags
}

// Run follows the run; its past is shown, and only a question still open
// at its end is answered.
func (c *RunsFollowCmd) Run(o *IO) error {
	ctx, cl, app, err := c.forApp(c.App)
	if err != nil {
		return err
	}
	history, err := cl.LastSeq(ctx, app, c.RunID)
	if err != nil {
		return explain(err)
	}
	return follow(o, cl, app, c.RunID, c.After, history, c.FollowFlags)
}

// RunsCancelCmd cancels a run.
type RunsCancelCmd struct {
	Conn
	App   string `arg:"" help:"The app's id, or its name."`
	RunID string `arg:"" name:"run" help:"The run's id."`
}

// Run asks the host to cancel the run.
func (c *RunsCancelCmd) Run(o *IO) error {
	ctx, cl, app, err := c.forApp(c.App)
	if err != nil {
		return err
	}
	if err := cl.CancelRun(ctx, app, c.RunID); err != nil {
		return explain(err)
	}
	_, err = fmt.Fprintf(o.Stdout, "cancelling run %s\n", c.RunID)
	return err
}

// RunsResumeCmd resumes a paused run.
type RunsResumeCmd struct {
	Conn
	App    string `arg:"" help:"The app's id, or its name."`
	RunID  string `arg:"" name:"run" help:"The run's id."`
	Allow  bool   `xor:"decision" help:"Allow what the run asks permission for."`
	Deny   bool   `xor:"decision" help:"Deny it."`
	Reason string `placeholder:"TEXT" help:"Why (the engine is told)."`
	// FollowRun is --follow: the run's events from the resume on.
	FollowRun bool `name:"follow" help:"Then follow the run to its end (exit code: its outcome)."`
	FollowFlags
}

// Run sends the decision (none for a run paused for its budget or a host
// restart) and, with --follow, follows the run from its newest event on.
func (c *RunsResumeCmd) Run(o *IO) error {
	ctx, cl, app, err := c.forApp(c.App)
	if err != nil {
		return err
	}
	decision := ""
	switch {
	case c.Allow:
		decision = apiclient.DecisionAllow
	case c.Deny:
		decision = apiclient.DecisionDeny
	}
	var after int64
	if c.FollowRun {
		// Read before resuming: every event the resume causes comes after.
		if after, err = cl.LastSeq(ctx, app, c.RunID); err != nil {
			return explain(err)
		}
	}
	if err := cl.ResumeRun(ctx, app, c.RunID, decision, c.Reason); err != nil {
		return explain(err)
	}
	if !c.FollowRun {
		_, err = fmt.Fprintf(o.Stdout, "resuming run %s\n", c.RunID)
		return err
	}
	return follow(o, cl, app, c.RunID, after, after, c.FollowFlags)
}
