package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/agenthost/agenthost/sdk/internal/pb/sandboxv1"
	"github.com/agenthost/agenthost/sdk/internal/rpcerr"
	"github.com/agenthost/agenthost/sdk/plugin"
)

// SnapshotFile is one path of a streamed snapshot (Client.SnapshotStream).
type SnapshotFile struct {
	Path string
	Mode uint32
	// Size is the size the backend announced; for a TooLarge file, the
	// bytes it sent if that is more.
	Size int64
	// TooLarge says the file is over the limit the host asked for: its
	// content was read and dropped, Content is nil.
	TooLarge bool
	// LeftOut, when not empty, is why Path is not in the snapshot (see
	// SnapshotEntry.LeftOut); Content is nil.
	LeftOut string
	// Content reads the file's bytes as they arrive, one gRPC chunk at a
	// time; it is valid only until the callback returns. When the file
	// grows past the limit while it is read, Read fails with a
	// *FileTooLargeError.
	Content io.Reader
	// Unchanged says the file is as it was at the generation the snapshot
	// was asked since (SnapshotOptions.Since): no content came (Content is
	// nil), SHA256 is the digest the backend recorded for it then. The
	// caller must hold that generation's files to use it: a path or digest
	// it has no record of means it has to ask again for everything.
	Unchanged bool
	SHA256    string
	// Removed says Path was a file of the generation a changes-only
	// snapshot was asked since and is no longer one (see
	// SnapshotOptions.ChangesOnly). Only Path is set.
	Removed bool
}

// SnapshotOptions say what a snapshot (Client.SnapshotFrom) leaves out and
// what the caller already holds.
type SnapshotOptions struct {
	// Exclude drops paths (MatchExclude patterns).
	Exclude []string
	// MaxBytes, when > 0, is the per-file limit: a bigger file comes
	// TooLarge, without content.
	MaxBytes int64
	// Since is the generation of an earlier snapshot of the sandbox (or
	// Info.SnapshotGeneration from Create) whose files the caller holds:
	// files unchanged since then may come Unchanged. "" asks for every
	// file's content.
	Since string
	// ChangesOnly asks, with Since, for only what changed since then
	// (Client.SnapshotChanges): no entry at all for an unchanged file, a
	// Removed entry for each file of that generation that is gone. The
	// backend may answer with a whole snapshot instead; the result says
	// which it sent.
	ChangesOnly bool
}

// SnapshotResult is how a snapshot ended (Client.SnapshotChanges).
type SnapshotResult struct {
	// Generation names the file set now held, for a later snapshot since
	// it; "" when the backend keeps no record of it.
	Generation string
	// ChangesOnly says the snapshot held only what changed since the
	// generation it was asked since: the caller's files of that
	// generation, less the paths passed and those Removed, are the rest.
	// When false it was whole (Unchanged entries included, if any), and a
	// path it did not pass is gone.
	ChangesOnly bool
	// Settled says the backend vouched that when the snapshot began
	// nothing was running in the sandbox (Settler): until a call into it,
	// the files of Generation are its files.
	Settled bool
}

// FileTooLargeError is what a SnapshotFile's Content fails with when the
// file grew past the limit while it was read.
type FileTooLargeError struct {
	// Size is the bytes the backend sent for the file (all of them: the
	// rest is read and dropped before the error).
	Size  int64
	Limit int64
}

func (e *FileTooLargeError) Error() string {
	return fmt.Sprintf("the file has at least %d bytes; the limit is %d", e.Size, e.Limit)
}

// SnapshotStream streams the sandbox's files except those excluded to fn,
// one at a time in path order, without ever holding a file whole: fn reads
// each file's content from SnapshotFile.Content as it arrives. A file over
// maxBytes (when > 0) reaches fn with TooLarge set and no content. Content
// fn leaves unread is read and dropped. An error from fn ends the snapshot
// with it.
func (c *Client) SnapshotStream(ctx context.Context, id string, exclude []string, maxBytes int64, fn func(SnapshotFile) error) error {
	_, err := c.SnapshotFrom(ctx, id, SnapshotOptions{Exclude: exclude, MaxBytes: maxBytes}, fn)
	return err
}

// SnapshotFrom is SnapshotStream asked since an earlier generation
// (opts.Since): a backend that tracks changes and still knows it sends the
// files unchanged since then as Unchanged, without content. It returns the
// generation of the file set it sent, for the next call; "" when the
// backend does not track changes. The snapshot is complete only when it
// returns no error; a path of the generation asked since that it did not
// pass to fn was deleted.
func (c *Client) SnapshotFrom(ctx context.Context, id string, opts SnapshotOptions, fn func(SnapshotFile) error) (generation string, err error) {
	opts.ChangesOnly = false
	res, err := c.SnapshotChanges(ctx, id, opts, fn)
	return res.Generation, err
}

// SnapshotChanges is SnapshotFrom that may, with opts.ChangesOnly and
// opts.Since, pass only what changed since that generation: files changed
// or added (with content), every path left out, and a Removed entry per
// file of that generation that is gone. The result says whether the
// backend answered so or sent a whole snapshot (an older backend, or one
// that no longer knows Since). The snapshot is complete only when it
// returns no error.
func (c *Client) SnapshotChanges(ctx context.Context, id string, opts SnapshotOptions, fn func(SnapshotFile) error) (result SnapshotResult, err error) {
	// Stop the stream when fn gives up early, rather than draining it.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := c.c.Snapshot(ctx, &sandboxv1.SnapshotRequest{SandboxId: id, Exclude: opts.Exclude, Since: opts.Since, BatchUnchanged: true,
		ChangesOnly: opts.ChangesOnly && opts.Since != ""})
	if err != nil {
		return SnapshotResult{}, rpcerr.FromStatus(err)
	}
	maxBytes := opts.MaxBytes
	var next *sandboxv1.SnapshotChunk // a message read ahead by the last file
	for {
		msg := next
		next = nil
		if msg == nil {
			if msg, err = stream.Recv(); err == io.EOF {
				return result, nil
			} else if err != nil {
				return SnapshotResult{}, rpcerr.FromStatus(err)
			}
		}
		switch m := msg.GetMsg().(type) {
		case *sandboxv1.SnapshotChunk_Unchanged:
			for _, h := range m.Unchanged.GetFiles() {
				if err := passUnchanged(h, maxBytes, fn); err != nil {
					return SnapshotResult{}, err
				}
			}
		case *sandboxv1.SnapshotChunk_File:
			if m.File.GetUnchanged() {
				if err := passUnchanged(m.File, maxBytes, fn); err != nil {
					return SnapshotResult{}, err
				}
				continue
			}
			r := &fileReader{pull: stream.Recv, max: maxBytes}
			f := SnapshotFile{Path: m.File.GetPath(), Mode: m.File.GetMode(), Size: m.File.GetSize()}
			if maxBytes > 0 && f.Size > maxBytes {
				r.over = true // dropped whole: no error to raise for it
				r.drain()
				f.TooLarge, f.Size = true, max(f.Size, r.recv)
			} else {
				f.Content = r
			}
			if err := r.broken(); err != nil {
				return SnapshotResult{}, err
			}
			if err := fn(f); err != nil {
				return SnapshotResult{}, err
			}
			r.drain()
			if err := r.broken(); err != nil {
				return SnapshotResult{}, err
			}
			if r.eof {
				return result, nil
			}
			next = r.next
		case *sandboxv1.SnapshotChunk_Data:
			return SnapshotResult{}, plugin.Errorf(plugin.CodeInternal, "", "snapshot data before a file header")
		case *sandboxv1.SnapshotChunk_LeftOut:
			if err := fn(SnapshotFile{Path: m.LeftOut.GetPath(), LeftOut: m.LeftOut.GetReason()}); err != nil {
				return SnapshotResult{}, err
			}
		case *sandboxv1.SnapshotChunk_Removed:
			for _, p := range m.Removed.GetPaths() {
				if err := fn(SnapshotFile{Path: p, Removed: true}); err != nil {
					return SnapshotResult{}, err
				}
			}
		case *sandboxv1.SnapshotChunk_End:
			result = SnapshotResult{Generation: m.End.GetGeneration(), ChangesOnly: m.End.GetChangesOnly(), Settled: m.End.GetSettled()}
		}
	}
}

// passUnchanged passes a file the backend sent as unchanged to fn.
func passUnchanged(h *sandboxv1.FileHeader, maxBytes int64, fn func(SnapshotFile) error) error {
	f := SnapshotFile{Path: h.GetPath(), Mode: h.GetMode(), Size: h.GetSize(), Unchanged: true, SHA256: h.GetSha256()}
	if maxBytes > 0 && f.Size > maxBytes {
		// Over the limit then as now: no digest to use.
		f.Unchanged, f.SHA256, f.TooLarge = false, "", true
	}
	return fn(f)
}

// fileReader reads one file's data messages off a snapshot stream, up to
// the next header (kept in next) or the stream's end (eof).
type fileReader struct {
	pull func() (*sandboxv1.SnapshotChunk, error)
	max  int64
	// buf is the rest of the data message being read.
	buf []byte
	// recv counts the file's bytes received so far.
	recv int64
	// done: the file's data ended (at next, at eof, or at err).
	done bool
	eof  bool
	next *sandboxv1.SnapshotChunk
	err  error
	// over: the file passed max; what remains is being dropped.
	over bool
}

// fill receives the file's next data message into buf; false once the
// file's data has ended (see done, err).
func (r *fileReader) fill() bool {
	for len(r.buf) == 0 {
		if r.done {
			return false
		}
		msg, err := r.pull()
		switch {
		case err == io.EOF:
			r.done, r.eof = true, true
			continue
		case err != nil:
			r.done, r.err = true, rpcerr.FromStatus(err)
			continue
		}
		d, ok := msg.GetMsg().(*sandboxv1.SnapshotChunk_Data)
		if !ok {
			r.done, r.next = true, msg
			continue
		}
		r.recv += int64(len(d.Data))
		r.buf = d.Data
		if r.max > 0 && r.recv > r.max && !r.over {
			// It grew past the limit while it was read: count the rest,
			// drop it all, and say so.
			r.over, r.buf = true, nil
			r.drain()
			if r.err == nil {
				r.err = &FileTooLargeError{Size: r.recv, Limit: r.max}
			}
		}
	}
	return true
}

// Read implements io.Reader.
func (r *fileReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if !r.fill() {
		if r.err != nil {
			return 0, r.err
		}
		return 0, io.EOF
	}
	n := copy(p, r.buf)
	r.buf = r.buf[n:]
	return n, nil
}

// broken is the transport error that ended the file's data, if any (a
// file over the limit is not one).
func (r *fileReader) broken() error {
	var tooLarge *FileTooLargeError
	if r.err != nil && !errors.As(r.err, &tooLarge) {
		return r.err
	}
	return nil
}

// drain reads and drops the rest of the file's data.
func (r *fileReader) drain() {
	for {
		r.buf = nil
		if !r.fill() {
			return
		}
	}
}
