package orchestrator

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"sync"
	"time"

	"github.com/agenthost/agenthost/core"
	"github.com/agenthost/agenthost/sdk/sandbox"
	"github.com/agenthost/agenthost/sdk/workspace"
)

// DefaultSandboxTTL is how long a chat session's idle sandbox is kept warm.
const DefaultSandboxTTL = 15 * time.Minute

// DefaultWarmServersMax is how many idle kept sandboxes holding an agent
// server a host keeps: an OpenCode server holds about 500 MB, so four are
// some 2 GB.
const DefaultWarmServersMax = 4

// warmSandbox is a chat session's sandbox kept between its runs: its
// installed dependencies and build caches survive, so the next run starts
// warm.
type warmSandbox struct {
	ref       *sandboxRef
	backend   string
	startedAt time.Time
	// revision is the app revision its files match; "" when unknown (the
	// run's result was merged or set aside), which forces a full refresh.
	revision string
	// keptOut are the files of that revision kept out of it (over the
	// limits).
	keptOut   []LeftOut
	inUse     bool
	idleSince time.Time
	// heldBy is the sandbox plugin's launch (pluginmgr.Handle.Generation)
	// that held it when it went back to the pool, stable when that backend
	// promises its sandboxes outlive nothing but that process
	// (plugin.CapabilityStableSandboxes).
	heldBy uint64
	stable bool
	// server: the engine of its last run keeps an agent server running in
	// it (the engine requires plugin.FeatureServices).
	server bool
	// rss is what its services held when it last went idle (measured
	// after it was put back), 0 until known.
	rss int64
}

// sandboxPool holds warm sandboxes by scope key ("chat-<id>").
type sandboxPool struct {
	mu    sync.Mutex
	byKey map[string]*warmSandbox
	// retired are the ids of kept sandboxes taken out of the pool to be
	// stopped (displaced, expired, evicted), with when: a run planned on
	// one of them (plannedSandboxID) must not create a fresh sandbox under
	// its id while, or after, it is stopped. Entries go after retiredFor.
	retired map[string]time.Time
}

// retiredFor is how long a retired sandbox id is remembered: far longer
// than a run takes from creation to provisioning.
const retiredFor = time.Hour

// retire records that a kept sandbox left the pool to be stopped; the
// caller holds p.mu.
func (p *sandboxPool) retire(w *warmSandbox, now time.Time) {
	if p.retired == nil {
		p.retired = map[string]time.Time{}
	}
	for id, at := range p.retired {
		if now.Sub(at) > retiredFor {
			delete(p.retired, id)
		}
	}
	p.retired[w.ref.id] = now
}

// wasRetired reports whether id is a kept sandbox that left the pool to be
// stopped.
func (o *Orchestrator) wasRetired(id string) bool {
	o.pool.mu.Lock()
	defer o.pool.mu.Unlock()
	_, ok := o.pool.retired[id]
	return ok
}

// scopeKey is the key a run's sandbox is kept under, "" when it is not kept.
func (o *Orchestrator) scopeKey(run *core.Run) string {
	if !o.opts.SandboxReuse || run.ChatSessionID == "" {
		return ""
	}
	return "chat-" + run.ChatSessionID
}

// KeepsChat reports whether this host keeps a sandbox for the chat session
// (idle or in use by one of its runs): the chat's next run belongs here.
func (o *Orchestrator) KeepsChat(chatID string) bool {
	if !o.opts.SandboxReuse || chatID == "" {
		return false
	}
	o.pool.mu.Lock()
	defer o.pool.mu.Unlock()
	return o.pool.byKey["chat-"+chatID] != nil
}

// takeWarm hands out the warm sandbox of key for a run, or nil. A sandbox in
// use by another run of the same chat is not shared: that run gets a fresh
// one.
func (o *Orchestrator) takeWarm(key, backend string) *warmSandbox {
	o.pool.mu.Lock()
	defer o.pool.mu.Unlock()
	w := o.pool.byKey[key]
	if w == nil || w.inUse || w.backend != backend {
		return nil
	}
	w.inUse = true
	return w
}

// plannedSandboxID is the sandbox a new run expects to get, recorded on the
// run from its creation (the seed's create-run answer carries it): the
// chat's idle warm sandbox when there is one, else the id its own sandbox
// will be created with. The run row is corrected if provisioning ends up
// elsewhere (the warm one was taken or expired meanwhile).
func (o *Orchestrator) plannedSandboxID(run *core.Run) string {
	key := o.scopeKey(run)
	if key == "" {
		return "sbx_" + run.ID
	}
	o.pool.mu.Lock()
	w := o.pool.byKey[key]
	o.pool.mu.Unlock()
	if w != nil && !w.inUse && w.backend == run.SandboxBackend {
		return w.ref.id
	}
	return newSandboxID(key)
}

// warmHolds reports whether a kept sandbox has the id.
func (o *Orchestrator) warmHolds(id string) bool {
	o.pool.mu.Lock()
	defer o.pool.mu.Unlock()
	for _, w := range o.pool.byKey {
		if w.ref.id == id {
			return true
		}
	}
	return false
}

// keepWarm puts a run's sandbox back (or in) the pool, idle, matching
// revision, and stops the sandbox it displaces, if any.
func (o *Orchestrator) keepWarm(key string, w *warmSandbox) {
	if old := o.pool.put(key, w, time.Now()); old != nil {
		go o.stopWarm(old)
	}
	o.evictServers()
	if w.server && o.opts.WarmServersMemory > 0 {
		// Measured after the sandbox is back in the pool: the run's
		// terminal event does not wait for a round trip to the backend.
		go o.measureWarm(w)
	}
}

// measureWarm asks the backend how much memory the services of an idle
// kept sandbox hold, then stops the least recently used idle agent
// servers while those of all of them pass the budget.
func (o *Orchestrator) measureWarm(w *warmSandbox) {
	c, ok := w.ref.client.(interface {
		Workspace(id string) workspace.Workspace
	})
	if !ok {
		return
	}
	svc, ok := c.Workspace(w.ref.id).(workspace.Services)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var rss int64
	for _, name := range w.ref.serviceNames() {
		if si, err := svc.ServiceStatus(ctx, name); err == nil {
			rss += si.RSSBytes
		}
	}
	o.pool.mu.Lock()
	w.rss = rss
	o.pool.mu.Unlock()
	o.evictServers()
}

// evictServers stops the idle agent servers past the host's count and
// memory bounds, least recently used first, saying why.
func (o *Orchestrator) evictServers() {
	for _, ev := range o.pool.evictServers(max(o.opts.WarmServersMax, 0), o.opts.WarmServersMemory) {
		o.log.Info("stopped an idle chat sandbox's agent server: more of them, or more of their memory, than the host keeps (AGENTHOST_WARM_SERVERS_MAX, AGENTHOST_WARM_SERVERS_MEMORY_MB)",
			"sandbox", ev.ref.id, "idle", time.Since(ev.idleSince).Round(time.Second), "rss_bytes", ev.rss,
			"max", o.opts.WarmServersMax, "memory_budget_bytes", o.opts.WarmServersMemory)
		if o.opts.OnWarmServerEvicted != nil {
			o.opts.OnWarmServerEvicted()
		}
		go o.stopWarm(ev)
	}
}

// evictServers takes out of the pool, for the caller to stop, the idle
// sandboxes holding an agent server, least recently used first, while
// there are more than keep of them or (with a budget above 0) their
// services hold more than budget bytes together. Sandboxes in use are
// neither taken nor counted.
func (p *sandboxPool) evictServers(keep int, budget int64) []*warmSandbox {
	p.mu.Lock()
	defer p.mu.Unlock()
	var idle []string
	var total int64
	for key, w := range p.byKey {
		if w.server && !w.inUse {
			idle = append(idle, key)
			total += w.rss
		}
	}
	slices.SortFunc(idle, func(a, b string) int { return p.byKey[a].idleSince.Compare(p.byKey[b].idleSince) })
	var out []*warmSandbox
	now := time.Now()
	for i, key := range idle {
		if len(idle)-i <= keep && (budget <= 0 || total <= budget) {
			break
		}
		w := p.byKey[key]
		total -= w.rss
		out = append(out, w)
		p.retire(w, now)
		delete(p.byKey, key)
	}
	return out
}

// WarmStats counts the kept sandboxes (idle or in use) and, of those
// idle, the ones holding an agent server and the memory their services
// hold: /metrics shows them.
func (o *Orchestrator) WarmStats() (kept, idleServers int, serverRSS int64) {
	o.pool.mu.Lock()
	defer o.pool.mu.Unlock()
	for _, w := range o.pool.byKey {
		kept++
		if w.server && !w.inUse {
			idleServers++
			serverRSS += w.rss
		}
	}
	return kept, idleServers, serverRSS
}

// put makes w the idle sandbox of key and returns the one it displaced
// that nobody uses, for the caller to stop. Two runs of one chat that ran
// at once come back one after the other: the one that comes back last is
// kept. A displaced sandbox still in use by another run of the chat is not
// returned: that run puts it back when it ends, and the idle one of the
// two is displaced then. Stopping it now would pull the sandbox from under
// a running run (its snapshot fails NOT_FOUND).
func (p *sandboxPool) put(key string, w *warmSandbox, now time.Time) (displaced *warmSandbox) {
	p.mu.Lock()
	defer p.mu.Unlock()
	w.inUse, w.idleSince = false, now
	if old := p.byKey[key]; old != nil && old != w && !old.inUse {
		displaced = old
		p.retire(old, now)
	}
	p.byKey[key] = w
	return displaced
}

// dropWarm forgets key's sandbox if it is w.
func (o *Orchestrator) dropWarm(key string, w *warmSandbox) {
	o.pool.mu.Lock()
	defer o.pool.mu.Unlock()
	if o.pool.byKey[key] == w {
		delete(o.pool.byKey, key)
	}
}

func (o *Orchestrator) stopWarm(w *warmSandbox) {
	ctx, cancel := context.WithTimeout(context.Background(), sandboxStopTimeout)
	defer cancel()
	if err := w.ref.client.Stop(ctx, w.ref.id); err != nil {
		o.log.Warn("stop idle sandbox", "sandbox", w.ref.id, "error", err)
	}
}

// reapLoop stops warm sandboxes idle for longer than the TTL; one in use is
// never reaped.
func (o *Orchestrator) reapLoop(stop <-chan struct{}) {
	every := min(o.opts.SandboxTTL/2, 30*time.Second)
	t := time.NewTicker(max(every, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		var expired []*warmSandbox
		o.pool.mu.Lock()
		for key, w := range o.pool.byKey {
			if !w.inUse && time.Since(w.idleSince) > o.opts.SandboxTTL {
				expired = append(expired, w)
				o.pool.retire(w, time.Now())
				delete(o.pool.byKey, key)
			}
		}
		o.pool.mu.Unlock()
		for _, w := range expired {
			o.log.Debug("idle sandbox expired", "sandbox", w.ref.id)
			o.stopWarm(w)
		}
	}
}

// stopAllWarm stops every kept sandbox (host shutdown).
func (o *Orchestrator) stopAllWarm() {
	o.pool.mu.Lock()
	all := make([]*warmSandbox, 0, len(o.pool.byKey))
	for key, w := range o.pool.byKey {
		if !w.inUse {
			all = append(all, w)
			delete(o.pool.byKey, key)
		}
	}
	o.pool.mu.Unlock()
	for _, w := range all {
		o.stopWarm(w)
	}
}

// refreshFiles makes a reused sandbox's files those of the run's base:
// changed and new files written, files the base does not have removed,
// generated folders (node_modules, dist, …) left alone: they are what makes
// the sandbox warm.
func refreshFiles(ctx context.Context, ws workspace.Workspace, files []sandbox.File) (int, error) {
	entries, _, err := ws.List(ctx, "", workspace.ListOptions{Recursive: true, WithHashes: true, SkipDirs: core.GeneratedArtifacts})
	if err != nil {
		return 0, err
	}
	have := make(map[string]string, len(entries))
	generated := sandbox.NewExcluder(core.GeneratedArtifacts)
	for _, e := range entries {
		if !e.IsDir && !generated.Match(e.Path) {
			have[e.Path] = e.SHA256
		}
	}
	changed := 0
	want := make(map[string]bool, len(files))
	for _, f := range files {
		want[f.Path] = true
		if sha, ok := have[f.Path]; ok && sha == sha256Hex(f.Data) {
			continue
		}
		if _, err := ws.WriteFile(ctx, f.Path, f.Data, f.Mode); err != nil {
			return changed, err
		}
		changed++
	}
	for p := range have {
		if !want[p] {
			if err := ws.Remove(ctx, p, false); err != nil {
				return changed, err
			}
			changed++
		}
	}
	return changed, nil
}

// warmRevision is the revision a finished run's sandbox matches: the result
// when it became the draft, the base when nothing changed, else unknown.
func warmRevision(ar *activeRun) string {
	ar.mu.Lock()
	result, resultRev := ar.result, ar.resultRevision
	ar.mu.Unlock()
	var r struct {
		Kind string `json:"kind"`
	}
	_ = json.Unmarshal(result, &r)
	switch r.Kind {
	case "applied":
		return resultRev
	case "unchanged":
		return ar.run.BaseRevisionID
	}
	return ""
}

// newSandboxID names a kept sandbox: unique, and tied to its scope.
func newSandboxID(key string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "sbx_" + key + "_" + hex.EncodeToString(b[:])
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
