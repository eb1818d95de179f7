package client

import (
	"context"
	"fmt"
	"strings"

	"github.com/agenthost/agenthost/host/apiclient"
)

// CheckpointsCmd is `agenthost checkpoints`.
type CheckpointsCmd struct {
	List    CheckpointsListCmd    `cmd:"" help:"List an app's checkpoints, newest first."`
	Restore CheckpointsRestoreCmd `cmd:"" help:"Make a checkpoint's files the app's draft again (a new revision: nothing is lost)."`
}

// CheckpointsListCmd lists checkpoints.
type CheckpointsListCmd struct {
	Conn
	App string `arg:"" help:"The app's id, or its name."`
	Listing
}

// Run prints a page of checkpoints; * marks the draft's.
func (c *CheckpointsListCmd) Run(o *IO) error {
	ctx, cl, app, err := c.forApp(c.App)
	if err != nil {
		return err
	}
	p, err := cl.ListCheckpoints(ctx, app, c.options())
	if err != nil {
		return explain(err)
	}
	return printPage(o, c.Listing, p, "ID\tKIND\tREVISION\tDRAFT\tCREATED\tLABEL", func(cp apiclient.Checkpoint) string {
		draft := ""
		if cp.IsDraft {
			draft = "*"
		}
		return fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s", cp.ID, cp.Kind, cp.RevisionID, draft, when(cp.CreatedAt), clip(cp.Label, 60))
	})
}

// CheckpointsRestoreCmd restores a checkpoint.
type CheckpointsRestoreCmd struct {
	Conn
	App        string `arg:"" help:"The app's id, or its name."`
	Checkpoint string `arg:"" help:"The checkpoint's id."`
	JSON       bool   `name:"json" help:"Print the API's answer as it is."`
}

// Run restores and says which revision is the draft now.
func (c *CheckpointsRestoreCmd) Run(o *IO) error {
	ctx, cl, app, err := c.forApp(c.App)
	if err != nil {
		return err
	}
	r, err := cl.RestoreCheckpoint(ctx, app, c.Checkpoint)
	if err != nil {
		return explain(err)
	}
	if c.JSON {
		return printRaw(o.Stdout, r.Raw)
	}
	_, err = fmt.Fprintf(o.Stdout, "restored %s: the draft is revision %s (checkpoint %s)\n", c.Checkpoint, r.DraftRevisionID, r.Checkpoint.ID)
	return err
}

// DiffCmd is `agenthost diff APP [REV]`.
type DiffCmd struct {
	Conn
	App      string `arg:"" help:"The app's id, or its name."`
	Revision string `arg:"" optional:"" default:"draft" help:"The revision (default: the draft)."`
	From     string `placeholder:"REV" help:"Diff from this revision (default: the revision's parent)."`
}

// Run prints the unified diff.
func (c *DiffCmd) Run(o *IO) error {
	ctx, cl, app, err := c.forApp(c.App)
	if err != nil {
		return err
	}
	d, err := cl.Diff(ctx, app, c.Revision, c.From)
	if err != nil {
		return explain(err)
	}
	_, err = fmt.Fprint(o.Stdout, d)
	return err
}

// ModelsCmd is `agenthost models`.
type ModelsCmd struct {
	List ModelsListCmd `cmd:"" help:"List the models runs may use; * marks the default."`
}

// ModelsListCmd lists models.
type ModelsListCmd struct {
	Conn
	JSON bool `name:"json" help:"Print the API's list as it is."`
}

// Run prints the models.
func (c *ModelsListCmd) Run(o *IO) error {
	cl, err := c.client()
	if err != nil {
		return err
	}
	p, err := cl.ListModels(context.Background())
	if err != nil {
		return explain(err)
	}
	return printPage(o, Listing{JSON: c.JSON}, p, "ID\tNAME\tPROVIDER\tMODEL\tSCOPE\tDEFAULT\tENDPOINT", func(m apiclient.Model) string {
		def := ""
		if m.IsDefault {
			def = "*"
		}
		return fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s\t%s", m.ID, m.Name, m.Provider, m.ProviderModel, m.Scope, def, m.EndpointHost)
	})
}

// ChatsCmd is `agenthost chats`.
type ChatsCmd struct {
	List ChatsListCmd `cmd:"" help:"List your chat sessions on an app, newest first."`
	Get  ChatsGetCmd  `cmd:"" help:"Show a chat session's messages."`
}

// ChatsListCmd lists chat sessions.
type ChatsListCmd struct {
	Conn
	App string `arg:"" help:"The app's id, or its name."`
	Listing
}

// Run prints a page of chats.
func (c *ChatsListCmd) Run(o *IO) error {
	ctx, cl, app, err := c.forApp(c.App)
	if err != nil {
		return err
	}
	p, err := cl.ListChats(ctx, app, c.options())
	if err != nil {
		return explain(err)
	}
	return printPage(o, c.Listing, p, "ID\tUPDATED\tTITLE", func(ch apiclient.Chat) string {
		return fmt.Sprintf("%s\t%s\t%s", ch.ID, when(ch.UpdatedAt), clip(ch.Title, 60))
	})
}

// ChatsGetCmd shows a chat session.
type ChatsGetCmd struct {
	Conn
	App  string `arg:"" help:"The app's id, or its name."`
	Chat string `arg:"" help:"The chat session's id."`
	JSON bool   `name:"json" help:"Print the API's chat as it is."`
}

// Run prints the chat's messages, each under its role and run.
func (c *ChatsGetCmd) Run(o *IO) error {
	ctx, cl, app, err := c.forApp(c.App)
	if err != nil {
		return err
	}
	ch, err := cl.GetChat(ctx, app, c.Chat)
	if err != nil {
		return explain(err)
	}
	if c.JSON {
		return printRaw(o.Stdout, ch.Raw)
	}
	fmt.Fprintf(o.Stdout, "%s %q (%s)\n", ch.ID, ch.Title, plural(len(ch.Messages), "message"))
	for _, m := range ch.Messages {
		head := "-- " + m.Role
		if m.RunID != "" {
			head += " (" + m.RunID + ")"
		}
		fmt.Fprintf(o.Stdout, "%s, %s\n%s\n", head, when(m.CreatedAt), strings.TrimRight(m.Content, "\n"))
	}
	return nil
}
