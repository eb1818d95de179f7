package client

import (
	"archive/zip"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/agenthost/agenthost/core"
	"github.com/agenthost/agenthost/host/apiclient"
	"github.com/agenthost/agenthost/sdk/sandbox"
)

// AppsCmd is `agenthost apps`.
type AppsCmd struct {
	Create   AppsCreateCmd   `cmd:"" help:"Create an app from a folder, an archive (.zip, .tar, .tar.gz) or a template."`
	List     AppsListCmd     `cmd:"" help:"List the tenant's apps, newest first."`
	Get      AppsGetCmd      `cmd:"" help:"Show an app and its draft's files."`
	Download AppsDownloadCmd `cmd:"" help:"Download a revision's files (default: the draft) as a zip or tar.gz."`
}

// AppsCreateCmd makes an app.
type AppsCreateCmd struct {
	Conn
	Name     string `arg:"" help:"The app's name."`
	From     string `placeholder:"DIR|ARCHIVE" help:"A folder, or a .zip, .tar or .tar.gz (.tgz) archive, holding the app's files."`
	Template string `placeholder:"NAME" help:"A bundled template instead (static-site, vite-react)."`
	JSON     bool   `name:"json" help:"Print the API's answer as it is."`
}

// uploadSkips are what the host leaves out of an upload anyway; a folder
// is packed without them (node_modules alone can be over the body limit).
var uploadSkips = append([]string{".git", ".hg", ".svn"}, core.GeneratedArtifacts...)

// Run uploads the folder or archive, or names the template.
func (c *AppsCreateCmd) Run(o *IO) error {
	cl, err := c.client()
	if err != nil {
		return err
	}
	if (c.From == "") == (c.Template == "") {
		return &ExitError{Code: ExitUsage, Err: fmt.Errorf("apps create: give --from DIR|ARCHIVE or --template NAME")}
	}
	ctx := context.Background()
	var app apiclient.App
	leftOut := 0
	switch {
	case c.Template != "":
		app, err = cl.CreateAppFromTemplate(ctx, c.Name, c.Template)
	default:
		app, leftOut, err = createFrom(ctx, o, cl, c.Name, c.From)
	}
	if err != nil {
		return explain(err)
	}
	if c.JSON {
		return printRaw(o.Stdout, app.Raw)
	}
	fmt.Fprintf(o.Stdout, "created app %s %q: draft %s, %s", app.ID, app.Name, app.DraftRevisionID, plural(app.FileCount, "file"))
	if n := app.SkippedFiles + leftOut; n > 0 {
		fmt.Fprintf(o.Stdout, " (%d left out: generated, version control, not regular files)", n)
	}
	fmt.Fprintln(o.Stdout)
	return nil
}

// archiveKind is the kind of archive a file name says it is, or "".
func archiveKind(name string) string {
	lower := strings.ToLower(name)
	switch {
	case strings.HasSuffix(lower, ".zip"):
		return "zip"
	case strings.HasSuffix(lower, ".tar.gz"), strings.HasSuffix(lower, ".tgz"):
		return "tar.gz"
	case strings.HasSuffix(lower, ".tar"):
		return "tar"
	}
	return ""
}

// createFrom uploads an archive file as it is, or a folder packed as a
// zip while it is sent. It returns how many of the folder's entries were
// left out here (links, special files).
func createFrom(ctx context.Context, o *IO, cl *apiclient.Client, name, from string) (apiclient.App, int, error) {
	fi, err := os.Stat(from)
	if err != nil {
		return apiclient.App{}, 0, &ExitError{Code: ExitUsage, Err: fmt.Errorf("apps create: --from: %w", err)}
	}
	if !fi.IsDir() {
		kind := archiveKind(from)
		if kind == "" {
			return apiclient.App{}, 0, &ExitError{Code: ExitUsage, Err: fmt.Errorf("apps create: --from %s is neither a folder nor a .zip, .tar or .tar.gz archive", from)}
		}
		f, err := os.Open(from)
		if err != nil {
			return apiclient.App{}, 0, err
		}
		defer f.Close()
		app, err := cl.CreateAppFromArchive(ctx, name, kind, f)
		return app, 0, err
	}
	pr, pw := io.Pipe()
	type packed struct {
		leftOut int
		err     error
	}
	done := make(chan packed, 1)
	go func() {
		n, err := packFolder(pw, from, o.Stderr)
		_ = pw.CloseWithError(err)
		done <- packed{n, err}
	}()
	app, err := cl.CreateAppFromArchive(ctx, name, "zip", pr)
	// The host may answer before reading the whole body (a 413): the
	// packing then fails on the closed pipe, which is not the error.
	_ = pr.CloseWithError(io.ErrClosedPipe)
	p := <-done
	if p.err != nil && err == nil {
		return app, p.leftOut, p.err
	}
	return app, p.leftOut, err
}

// packTop is the one folder a packed folder's files are put in: the host
// unwraps an archive whose files all lie in one folder (a zipped project
// folder), so packing them in one keeps their paths exactly as they are,
// also when they all lie in one subfolder of their own.
const packTop = "app/"

// packFolder writes dir's regular files as a zip, leaving out what the
// host would (generated folders, version control) and what it cannot hold
// (links, devices), each named on warn. It returns how many entries it
// left out (a folder counts once).
func packFolder(w io.Writer, dir string, warn io.Writer) (int, error) {
	zw := zip.NewWriter(w)
	leftOut := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil || rel == "." {
			return err
		}
		rel = filepath.ToSlash(rel)
		if sandbox.MatchExclude(rel, uploadSkips) {
			leftOut++
			if d.IsDir() {
				fmt.Fprintf(warn, "agenthost: left out %s/: generated or version control (the host leaves it out too)\n", rel)
				return filepath.SkipDir
			}
			fmt.Fprintf(warn, "agenthost: left out %s: generated (the host leaves it out too)\n", rel)
			return nil
		}
		if d.IsDir() {
			return nil
		}
		if !d.Type().IsRegular() {
			leftOut++
			fmt.Fprintf(warn, "agenthost: left out %s: not a regular file\n", rel)
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		h := &zip.FileHeader{Name: packTop + rel, Method: zip.Deflate, Modified: info.ModTime()}
		h.SetMode(info.Mode().Perm())
		fw, err := zw.CreateHeader(h)
		if err != nil {
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(fw, f)
		return err
	})
	if err != nil {
		return leftOut, fmt.Errorf("pack %s: %w", dir, err)
	}
	return leftOut, zw.Close()
}

// AppsListCmd lists apps.
type AppsListCmd struct {
	Conn
	Listing
}

// Run prints a page of apps.
func (c *AppsListCmd) Run(o *IO) error {
	cl, err := c.client()
	if err != nil {
		return err
	}
	p, err := cl.ListApps(context.Background(), c.options())
	if err != nil {
		return explain(err)
	}
	return printPage(o, c.Listing, p, "ID\tNAME\tDRAFT\tCREATED", func(a apiclient.App) string {
		return fmt.Sprintf("%s\t%s\t%s\t%s", a.ID, a.Name, a.DraftRevisionID, when(a.CreatedAt))
	})
}

// AppsGetCmd shows one app.
type AppsGetCmd struct {
	Conn
	App  string `arg:"" help:"The app's id, or its name."`
	JSON bool   `name:"json" help:"Print the API's app as it is."`
}

// Run prints the app and its draft's files.
func (c *AppsGetCmd) Run(o *IO) error {
	ctx, cl, id, err := c.forApp(c.App)
	if err != nil {
		return err
	}
	app, err := cl.GetApp(ctx, id)
	if err != nil {
		return explain(err)
	}
	if c.JSON {
		return printRaw(o.Stdout, app.Raw)
	}
	draft, err := cl.GetRevision(ctx, id, "draft")
	if err != nil {
		return explain(err)
	}
	tw := tabwriter.NewWriter(o.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "id\t%s\nname\t%s\ncreated\t%s\n", app.ID, app.Name, when(app.CreatedAt))
	fmt.Fprintf(tw, "draft\t%s (%s, %s)\n", app.DraftRevisionID, plural(draft.Revision.FileCount, "file"), plural(draft.Revision.TotalSize, "byte"))
	if err := tw.Flush(); err != nil {
		return err
	}
	tw = tabwriter.NewWriter(o.Stdout, 0, 4, 2, ' ', 0)
	for _, f := range draft.Files {
		fmt.Fprintf(tw, "  %s\t%s\t%04o\n", f.Path, plural(f.Size, "byte"), f.Mode)
	}
	return tw.Flush()
}

// AppsDownloadCmd downloads a revision as an archive.
type AppsDownloadCmd struct {
	Conn
	App      string `arg:"" help:"The app's id, or its name."`
	Revision string `default:"draft" placeholder:"REV" help:"The revision to download (default: the app's draft)."`
	Output   string `short:"o" placeholder:"FILE" help:"Where to write it; - for stdout (default: the host's name for it, here)."`
	Format   string `enum:"zip,tar.gz," default:"" placeholder:"zip|tar.gz" help:"zip or tar.gz (default: from -o's extension, else zip)."`
}

// Run writes the archive to a temporary file beside the output and
// renames it when whole, so a failed download leaves nothing half written.
func (c *AppsDownloadCmd) Run(o *IO) error {
	ctx, cl, id, err := c.forApp(c.App)
	if err != nil {
		return err
	}
	rev := c.Revision
	if rev == "draft" {
		// Pinned now: the file is that revision, and says so, even if the
		// draft moves on while it downloads.
		app, err := cl.GetApp(ctx, id)
		if err != nil {
			return explain(err)
		}
		rev = app.DraftRevisionID
	}
	format := c.Format
	if format == "" {
		format = "zip"
		if archiveKind(c.Output) == "tar.gz" {
			format = "tar.gz"
		}
	}
	if c.Output == "-" {
		_, err := cl.DownloadArchive(ctx, id, rev, format, o.Stdout)
		return explain(err)
	}
	dir := "."
	if c.Output != "" {
		dir = filepath.Dir(c.Output)
	}
	tmp, err := os.CreateTemp(dir, ".agenthost-download-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	suggested, err := cl.DownloadArchive(ctx, id, rev, format, tmp)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		// CreateTemp's 0600 is for the file while it is partial.
		err = os.Chmod(tmp.Name(), 0o644)
	}
	if err != nil {
		return explain(err)
	}
	out := c.Output
	if out == "" {
		// Only a base name: never a path the host chose.
		if out = filepath.Base(suggested); out == "." || out == "/" || suggested == "" {
			out = id + "." + format
		}
	}
	if err := os.Rename(tmp.Name(), out); err != nil {
		return err
	}
	fi, err := os.Stat(out)
	if err != nil {
		return err
	}
	fmt.Fprintf(o.Stdout, "wrote %s (%s): revision %s of app %s\n", out, plural(fi.Size(), "byte"), rev, id)
	return nil
}
