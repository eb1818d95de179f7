package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/agenthost/agenthost/core"
	"github.com/agenthost/agenthost/sdk/sandbox"
)

// keepOutOversized drops from the run's base files those over the per-file
// limit (an app may hold one from before the limits, or since the operator
// lowered them): the sandbox would refuse them and the app could never run
// again. The run is told with a warning, and applying its result carries
// them over unless the run made a file of its own there.
func (o *Orchestrator) keepOutOversized(ctx context.Context, ar *activeRun) {
	limit := o.opts.Limits.MaxFileBytes
	ar.mu.Lock()
	files := ar.req.Files
	kept := make([]sandbox.File, 0, len(files))
	var out []LeftOut
	for _, f := range files {
		if int64(len(f.Data)) > limit {
			out = append(out, LeftOut{Path: f.Path, Reason: fmt.Sprintf("%d bytes; the limit is %d", len(f.Data), limit)})
			continue
		}
		kept = append(kept, f)
	}
	if out != nil {
		ar.req.Files, ar.keptOut = kept, out
	}
	ar.mu.Unlock()
	o.warnKeptOut(ctx, ar, out)
}

// warnKeptOut tells the run which base files are not in its sandbox.
func (o *Orchestrator) warnKeptOut(ctx context.Context, ar *activeRun, out []LeftOut) {
	if len(out) > 0 {
		_ = o.emit(ctx, ar, core.EventRunStatus, map[string]any{"stage": core.StageWarning, "left_out": out,
			"message": fmt.Sprintf("%d file(s) over the size limit are not in the sandbox; the app keeps them: %s", len(out), joinPaths(out))})
	}
}

// baseFiles returns the run's base files for its sandbox, read now when the
// API left them to be read when needed (StartRequest.LoadFiles), with those
// over the per-file limit kept out (once, with a warning).
func (o *Orchestrator) baseFiles(ctx context.Context, ar *activeRun) ([]sandbox.File, error) {
	ar.mu.Lock()
	load, ready := ar.req.LoadFiles, ar.filesReady
	ar.mu.Unlock()
	if !ready {
		if load != nil {
			files, err := load(ctx)
			if err != nil {
				return nil, fmt.Errorf("read the app's files: %w", err)
			}
			ar.mu.Lock()
			ar.req.Files = files
			ar.mu.Unlock()
		}
		o.keepOutOversized(ctx, ar)
		ar.mu.Lock()
		ar.filesReady = true
		ar.mu.Unlock()
	}
	ar.mu.Lock()
	defer ar.mu.Unlock()
	return ar.req.Files, nil
}

// snapshotResult streams the sandbox's files into the result sink one at a
// time, each as it arrives (a file over the per-file limit is never read
// in, an unchanged one not sent at all), and returns the manifest to apply:
// every file of the sandbox, so a path missing from it was deleted.
func (o *Orchestrator) snapshotResult(ctx context.Context, ar *activeRun, ref *sandboxRef) (RunResult, error) {
	files, err := o.streamSnapshot(ctx, ref)
	if err != nil {
		return RunResult{}, err
	}
	var res RunResult
	for _, f := range files {
		switch {
		case f.LeftOut != "":
			res.LeftOut = append(res.LeftOut, LeftOut{Path: f.Path, Reason: f.LeftOut})
		case f.TooLarge:
			res.Files = append(res.Files, ResultFile{Path: f.Path, Mode: f.Mode, Size: f.Size, TooLarge: true})
		default:
			res.Files = append(res.Files, ResultFile{Path: f.Path, Mode: f.Mode, Size: f.Size, SHA256: f.sha})
		}
	}
	ar.mu.Lock()
	for _, k := range ar.keptOut {
		res.KeptOut = append(res.KeptOut, k.Path)
	}
	ar.mu.Unlock()
	return res, nil
}

// applyResult snapshots and applies a completed run's result, and says how
// the run ends.
func (o *Orchestrator) applyResult(ctx context.Context, ar *activeRun, ref *sandboxRef, out outcome) outcome {
	// The files stream from the sandbox into the store, then become a
	// revision: while the database is unavailable the whole step is tried
	// again (blobs are stored by digest and the revision in one
	// transaction, so a try that failed half-way leaves nothing to undo).
	var (
		res      RunResult
		applied  ApplyOutcome
		applyErr error
		snapErr  error
	)
	err := o.retryStep(ctx, "store run "+ar.run.ID+"'s result", func(ctx context.Context) error {
		res, snapErr = o.snapshotResult(ctx, ar, ref)
		var storeErr *blobWriteError
		switch {
		case snapErr == nil:
		case errors.As(snapErr, &storeErr):
			return storeErr.err
		default:
			// The sandbox's failure, not the database's: not retried.
			return errSandboxSide
		}
		applied, applyErr = o.results.ApplyResult(ctx, ar.run, res)
		return applyErr
	})
	if core.CodeOf(err) == core.CodeStoreUnavailable {
		return failed(core.CodeStoreUnavailable, "%v", err)
	}
	if snapErr != nil {
		out = o.classify(ar, snapErr, "snapshot sandbox")
		if out.status == core.RunCancelled {
			out = failed(core.CodeSandboxError, "snapshot sandbox: %v", snapErr)
		}
		return out
	}
	err = applyErr
	if len(res.LeftOut) > 0 {
		_ = o.emit(ctx, ar, core.EventRunStatus, map[string]any{"stage": core.StageWarning, "left_out": res.LeftOut,
			"message": fmt.Sprintf("%d path(s) of the sandbox cannot be stored and are left out of the result: %s", len(res.LeftOut), joinPaths(res.LeftOut))})
	}
	if core.CodeOf(err) == core.CodeLeaseLost {
		ar.mu.Lock()
		noteLeaseLost(ar, err)
		ar.mu.Unlock()
		return failed(core.CodeLeaseLost, "%v", err)
	}
	for _, ev := range applied.Events {
		_ = o.emitWith(ctx, ar, ev, nil)
	}
	ar.mu.Lock()
	ar.resultRevision, ar.result = applied.RevisionID, applied.Result
	ar.mu.Unlock()
	if len(applied.Diagnostics) > 0 && out.diagnostics == nil {
		out.diagnostics = applied.Diagnostics
	}
	var tooLarge *core.Error
	switch {
	case errors.As(err, &tooLarge) && tooLarge.Code == core.CodeResultTooLarge:
		// Not applied, nothing changed: the app's draft is as it was.
		out = failed(core.CodeResultTooLarge, "%s", tooLarge.Message)
		out.diagnostics = applied.Diagnostics
	case err != nil:
		out = failed(core.CodeApplyFailed, "the run's result could not be saved as a revision: %v", err)
	}
	return out
}

// blobWriteError is a sandbox file the store failed to take while a
// result streamed in: the database's failure, which applyResult may retry,
// unlike the sandbox's own.
type blobWriteError struct {
	path string
	err  error
}

func (e *blobWriteError) Error() string { return "store " + e.path + ": " + e.err.Error() }
func (e *blobWriteError) Unwrap() error { return e.err }

// errSandboxSide stops applyResult's retries: the snapshot failed in the
// sandbox, which waiting for the database does not mend.
var errSandboxSide = errors.New("the sandbox's snapshot failed")

// joinPaths names the paths of a list, briefly.
func joinPaths(l []LeftOut) string {
	const show = 5
	names := make([]string, 0, min(len(l), show))
	for i, x := range l {
		if i == show {
			names = append(names, fmt.Sprintf("and %d more", len(l)-show))
			break
		}
		names = append(names, x.Path)
	}
	return strings.Join(names, ", ")
}
