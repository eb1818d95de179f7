package orchestrator

import (
	"context"
	"slices"
	"sync/atomic"
	"time"

	"github.com/agenthost/agenthost/sdk/sandbox"
	"github.com/agenthost/agenthost/sdk/workspace"
)

// No snapshot for a sandbox nothing touched. A chat turn that only talked
// (no tool wrote, no command ran) leaves the sandbox as the last snapshot
// found it, yet asking the backend again costs a round trip to its plugin
// on every turn. The host skips it when it can prove nothing changed:
//
//   - the backend said that when its last snapshot began, no command ran in
//     the sandbox and no process it started for it could still run
//     (sandbox.Settler): from then on only calls into the sandbox can
//     change its files;
//   - no such call was made since that snapshot was asked. Every call that
//     may change files (writes, removals, renames, commands, services) goes
//     through a workspace the host hands out (trackedWorkspace), which
//     counts it as it starts and as it ends, so a call that overlapped the
//     snapshot counts too. A direct grant (a toolpack reaching the sandbox's
//     plugin without the host) counts as one call, from the grant to the
//     return of the tool call it was made for;
//   - the plugin was not relaunched since, and its sandboxes are ones only
//     its own process removes (plugin.CapabilityStableSandboxes: a warm
//     sandbox of another backend is checked, and its mark dropped, before
//     each reuse).
//
// A direct grant is valid until the tool call's deadline, and the host
// cannot revoke it earlier: a toolpack that kept writing through it after
// its call returned would do so unseen by the next skipped snapshots. The
// backend records such writes all the same (they are its own API's), so
// the next snapshot that asks passes them, as a write landing after a
// run's last snapshot always was. A toolpack must not do that.
//
// Reads (files, listings, a service's status) change nothing and do not
// count, so an agent that only looked still skips the snapshot.

// settledMark is what a settled snapshot left: the ref's call count when
// it was asked, the generation it returned, and the paths it left out
// (which the host's record of files does not hold).
type settledMark struct {
	calls   uint64
	gen     string
	leftOut []snapshotFile
}

// callCounter counts a sandbox's calls that may change its files.
type callCounter struct{ n atomic.Uint64 }

// now is the count so far.
func (c *callCounter) now() uint64 { return c.n.Load() }

// begin counts a call starting, and returns the func that counts its end.
func (c *callCounter) begin() func() {
	c.n.Add(1)
	return func() { c.n.Add(1) }
}

// Snapshot kinds, as Options.OnSnapshot counts them.
const (
	// SnapshotSkipped: nothing touched the sandbox since a settled
	// snapshot; the backend was not asked.
	SnapshotSkipped = "skipped"
	// SnapshotChanges: the backend passed only what changed.
	SnapshotChanges = "changes"
	// SnapshotWhole: the backend passed every file (a header for those
	// unchanged, when it tracks changes).
	SnapshotWhole = "whole"
)

// countSnapshot counts a snapshot of kind (Options.OnSnapshot).
func (o *Orchestrator) countSnapshot(kind string) {
	if o.opts.OnSnapshot != nil {
		o.opts.OnSnapshot(kind)
	}
}

// markSettled records the snapshot just taken, asked with the ref's call
// count at calls, as settled if the backend said so (res).
func (r *sandboxRef) markSettled(calls uint64, res sandbox.SnapshotResult, files []snapshotFile) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !res.Settled || res.Generation == "" {
		r.settled = nil
		return
	}
	m := &settledMark{calls: calls, gen: res.Generation}
	for _, f := range files {
		if f.LeftOut != "" {
			m.leftOut = append(m.leftOut, f)
		}
	}
	r.settled = m
}

// forgetSettled drops the settled mark: the next snapshot asks the backend.
func (r *sandboxRef) forgetSettled() {
	r.mu.Lock()
	r.settled = nil
	r.mu.Unlock()
}

// untouched returns the sandbox's files as its last snapshot passed them
// when nothing can have changed them since (see above), in path order.
func (r *sandboxRef) untouched() ([]snapshotFile, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	m, k := r.settled, r.known
	if m == nil || k == nil || k.gen != m.gen || r.calls.now() != m.calls {
		return nil, false
	}
	return withHeld(slices.Clone(m.leftOut), nil, k), true
}

// track wraps ws, the sandbox's workspace, so that each call that may
// change its files is counted, and each service started noted.
func (r *sandboxRef) track(ws workspace.Workspace) workspace.Workspace {
	t := trackedWorkspace{Workspace: ws, ref: r}
	if svc, ok := ws.(workspace.Services); ok {
		return &trackedServices{trackedWorkspace: t, svc: svc}
	}
	return &t
}

// trackedWorkspace is a sandbox's workspace counting, on its sandboxRef,
// the calls that may change files. Reads pass straight through.
type trackedWorkspace struct {
	workspace.Workspace
	ref *sandboxRef
}

// WriteFile writes the file, counted.
func (w *trackedWorkspace) WriteFile(ctx context.Context, path string, data []byte, mode uint32) (workspace.FileInfo, error) {
	defer w.ref.calls.begin()()
	return w.Workspace.WriteFile(ctx, path, data, mode)
}

// Remove removes the path, counted.
func (w *trackedWorkspace) Remove(ctx context.Context, path string, recursive bool) error {
	defer w.ref.calls.begin()()
	return w.Workspace.Remove(ctx, path, recursive)
}

// Rename renames the path, counted.
func (w *trackedWorkspace) Rename(ctx context.Context, from, to string) error {
	defer w.ref.calls.begin()()
	return w.Workspace.Rename(ctx, from, to)
}

// Exec runs the command, counted: it may write anything.
func (w *trackedWorkspace) Exec(ctx context.Context, req workspace.ExecRequest) (workspace.ExecResult, error) {
	defer w.ref.calls.begin()()
	return w.Workspace.Exec(ctx, req)
}

// trackedServices is a trackedWorkspace whose backend runs services: it
// counts their starts and stops too, and notes the names started so the
// warm pool can ask how much memory they hold.
type trackedServices struct {
	trackedWorkspace
	svc workspace.Services
}

// StartService starts the service, counted, and notes its name.
func (w *trackedServices) StartService(ctx context.Context, spec workspace.ServiceSpec) (workspace.ServiceInfo, error) {
	defer w.ref.calls.begin()()
	info, err := w.svc.StartService(ctx, spec)
	if err == nil {
		w.ref.noteService(spec.Name)
	}
	return info, err
}

// ServiceStatus reports the service; a read, not counted.
func (w *trackedServices) ServiceStatus(ctx context.Context, name string) (workspace.ServiceInfo, error) {
	return w.svc.ServiceStatus(ctx, name)
}

// StopService stops the service, counted.
func (w *trackedServices) StopService(ctx context.Context, name string, grace time.Duration) error {
	defer w.ref.calls.begin()()
	return w.svc.StopService(ctx, name, grace)
}
