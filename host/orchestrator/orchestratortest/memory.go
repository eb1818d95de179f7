// Package orchestratortest holds in-memory fakes of the orchestrator's
// storage ports, for tests only. The real store (SQLite and PostgreSQL)
// replaces them in the host.
package orchestratortest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/agenthost/agenthost/core"
	"github.com/agenthost/agenthost/host/orchestrator"
	"github.com/agenthost/agenthost/sdk/sandbox"
)

// Memory implements RunStore, EventSink and ResultSink in memory.
type Memory struct {
	mu      sync.Mutex
	runs    map[string]*core.Run
	events  map[string][]core.Envelope
	states  map[string][]byte
	work    map[string][]core.FileRef
	results map[string][]sandbox.File
	blobs   map[string][]byte
	changed chan struct{}
}

// NewMemory returns an empty store.
func NewMemory() *Memory {
	return &Memory{
		runs: map[string]*core.Run{}, events: map[string][]core.Envelope{},
		states: map[string][]byte{}, work: map[string][]core.FileRef{}, results: map[string][]sandbox.File{}, blobs: map[string][]byte{}, changed: make(chan struct{}),
	}
}

var (
	_ orchestrator.RunStore   = (*Memory)(nil)
	_ orchestrator.EventSink  = (*Memory)(nil)
	_ orchestrator.ResultSink = (*Memory)(nil)
	_ orchestrator.BlobIndex  = (*Memory)(nil)
)

func (m *Memory) notifyLocked() {
	close(m.changed)
	m.changed = make(chan struct{})
}

// CreateRun stores a new run.
func (m *Memory) CreateRun(_ context.Context, r *core.Run) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.runs[r.ID]; ok {
		return core.Errf(core.CodeInvalidRequest, "run_id", "run %s exists", r.ID)
	}
	cp := *r
	m.runs[r.ID] = &cp
	return nil
}

// GetRun returns a copy of a run.
func (m *Memory) GetRun(_ context.Context, id string) (*core.Run, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.runs[id]
	if !ok {
		return nil, core.Errf(core.CodeNotFound, "run_id", "no run %s", id)
	}
	cp := *r
	return &cp, nil
}

// UpdateRun applies fn atomically.
func (m *Memory) UpdateRun(_ context.Context, id string, fn func(*core.Run) error) (*core.Run, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.runs[id]
	if !ok {
		return nil, core.Errf(core.CodeNotFound, "run_id", "no run %s", id)
	}
	cp := *r
	if err := fn(&cp); err != nil {
		return nil, err
	}
	m.runs[id] = &cp
	out := cp
	m.notifyLocked()
	return &out, nil
}

// TransitionRun stores a copy of r if the stored run is in one of the
// from states.
func (m *Memory) TransitionRun(_ context.Context, r *core.Run, from []core.RunStatus) (*core.Run, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, ok := m.runs[r.ID]
	if !ok {
		return nil, core.Errf(core.CodeNotFound, "run_id", "no run %s", r.ID)
	}
	if !slices.Contains(from, cur.Status) {
		if err := core.CheckTransition(cur.Status, r.Status); err != nil {
			return nil, err
		}
		return nil, core.Errf(core.CodeInvalidRunTransition, "", "run %s is %s, which this change did not expect", r.ID, cur.Status)
	}
	cp := *r
	m.runs[r.ID] = &cp
	out := cp
	m.notifyLocked()
	return &out, nil
}

// SaveEngineState keeps an engine's state and the working files saved
// with it (by manifest over the stored blobs).
func (m *Memory) SaveEngineState(_ context.Context, runID string, state []byte, work []core.FileRef) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, f := range work {
		if _, ok := m.blobs[f.SHA256]; !ok {
			return fmt.Errorf("save run %s's working copy: content %s of %s is not stored", runID, f.SHA256, f.Path)
		}
	}
	m.states[runID] = append([]byte(nil), state...)
	if work != nil {
		m.work[runID] = append([]core.FileRef(nil), work...)
	}
	return nil
}

// WorkFiles returns the working files last saved with a run's state.
func (m *Memory) WorkFiles(runID string) ([]sandbox.File, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	w, ok := m.work[runID]
	if !ok {
		return nil, false
	}
	files := make([]sandbox.File, len(w))
	for i, f := range w {
		files[i] = sandbox.File{Path: f.Path, Mode: f.Mode, Data: m.blobs[f.SHA256]}
	}
	return files, true
}

// LoadEngineState returns the last saved state, or nil.
func (m *Memory) LoadEngineState(_ context.Context, runID string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.states[runID], nil
}

// Append gives the event the run's next seq.
func (m *Memory) Append(_ context.Context, run *core.Run, ev orchestrator.NewEvent) (core.Envelope, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	env := core.Envelope{
		Event: ev.Type, RunID: run.ID, AppID: run.AppID, Seq: int64(len(m.events[run.ID]) + 1),
		TS: time.Now().UTC(), Payload: ev.Payload, Diagnostics: ev.Diagnostics,
	}
	m.events[run.ID] = append(m.events[run.ID], env)
	m.notifyLocked()
	return env, nil
}

// PutBlobFrom keeps a file's content by digest.
func (m *Memory) PutBlobFrom(_ context.Context, r io.Reader) (string, int64, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return "", 0, err
	}
	sum := sha256.Sum256(data)
	sha := hex.EncodeToString(sum[:])
	m.mu.Lock()
	defer m.mu.Unlock()
	m.blobs[sha] = data
	return sha, int64(len(data)), nil
}

// StoredBlobs says which digests have content kept
// (orchestrator.BlobIndex).
func (m *Memory) StoredBlobs(_ context.Context, shas []string) (map[string]bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	have := map[string]bool{}
	for _, sha := range shas {
		if _, ok := m.blobs[sha]; ok {
			have[sha] = true
		}
	}
	return have, nil
}

// ApplyResult records the files of a completed run (oversized ones without
// content).
func (m *Memory) ApplyResult(_ context.Context, run *core.Run, res orchestrator.RunResult) (orchestrator.ApplyOutcome, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	files := []sandbox.File{}
	for _, f := range res.Files {
		files = append(files, sandbox.File{Path: f.Path, Mode: f.Mode, Data: m.blobs[f.SHA256]})
	}
	m.results[run.ID] = files
	return orchestrator.ApplyOutcome{}, nil
}

// Events returns a copy of a run's log.
func (m *Memory) Events(runID string) []core.Envelope {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]core.Envelope(nil), m.events[runID]...)
}

// Result returns the files a completed run produced.
func (m *Memory) Result(runID string) []sandbox.File {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.results[runID]
}

// WaitFor blocks until cond holds on the run's log or ctx ends.
func (m *Memory) WaitFor(ctx context.Context, runID string, cond func([]core.Envelope) bool) error {
	for {
		m.mu.Lock()
		evs := append([]core.Envelope(nil), m.events[runID]...)
		ch := m.changed
		m.mu.Unlock()
		if cond(evs) {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
