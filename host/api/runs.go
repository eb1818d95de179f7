package api

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/agenthost/agenthost/core"
	"github.com/agenthost/agenthost/host/orchestrator"
	"github.com/agenthost/agenthost/host/store"
	"github.com/agenthost/agenthost/sdk/agentcontract"
	"github.com/agenthost/agenthost/sdk/engine"
	"github.com/agenthost/agenthost/sdk/sandbox"
	"github.com/gin-gonic/gin"
)

// maxPromptChars bounds one prompt.
const maxPromptChars = 100_000

type createRunRequest struct {
	Prompt         string  `json:"prompt"`
	Engine         string  `json:"engine"`
	BaseRevisionID string  `json:"base_revision_id"`
	ModelID        *string `json:"model_id"`
	ChatSessionID  string  `json:"chat_session_id"`
	// TokenBudget pauses the run when its model has used this many tokens
	// (input + output); resume grants as many again.
	TokenBudget *int64 `json:"token_budget"`
}

// runJSON is a run as the API shows it.
type runJSON struct {
	ID               string          `json:"id"`
	AppID            string          `json:"app_id"`
	Status           core.RunStatus  `json:"status"`
	ExecutionEngine  string          `json:"execution_engine"`
	ChatSessionID    string          `json:"chat_session_id,omitempty"`
	BaseRevisionID   string          `json:"base_revision_id"`
	ResultRevisionID string          `json:"result_revision_id,omitempty"`
	RequestedModelID string          `json:"requested_model_id,omitempty"`
	ResolvedModelID  string          `json:"resolved_model_id,omitempty"`
	SandboxID        string          `json:"sandbox_id"`
	SandboxStatus    string          `json:"sandbox_status"`
	SandboxStartedAt *time.Time      `json:"sandbox_started_at"`
	PauseReason      string          `json:"pause_reason,omitempty"`
	ErrorCode        string          `json:"error_code,omitempty"`
	ErrorMessage     string          `json:"error_message,omitempty"`
	OutputText       string          `json:"output_text,omitempty"`
	InputTokens      int64           `json:"input_tokens"`
	OutputTokens     int64           `json:"output_tokens"`
	Context          json.RawMessage `json:"context,omitempty"`
	CreatedAt        time.Time       `json:"created_at"`
	UpdatedAt        time.Time       `json:"updated_at"`
	FinishedAt       *time.Time      `json:"finished_at,omitempty"`
	// Persisted is false (and only then present) when the run ended but
	// the database has not taken its end yet: the host holds it and
	// writes it when the database is back.
	Persisted *bool `json:"persisted,omitempty"`
}

// unpersistedRun is the path's run when this host holds its end unwritten
// (see Runs.Unpersisted), for the caller's tenant only.
func (s *Server) unpersistedRun(c *gin.Context) (*core.Run, bool) {
	r, ok := s.deps.Runs.Unpersisted(c.Param("run_id"))
	if !ok || r.AppID != c.Param("app_id") || r.TenantID != principal(c).TenantID {
		return nil, false
	}
	return r, true
}

func runOut(r *core.Run) runJSON {
	return runJSON{
		ID: r.ID, AppID: r.AppID, Status: r.Status, ExecutionEngine: r.Engine, ChatSessionID: r.ChatSessionID,
		BaseRevisionID: r.BaseRevisionID, ResultRevisionID: r.ResultRevisionID,
		RequestedModelID: r.RequestedModelID, ResolvedModelID: r.ResolvedModelID,
		SandboxID: r.SandboxID, SandboxStatus: r.SandboxStatus, SandboxStartedAt: r.SandboxStartedAt,
		PauseReason: r.PauseReason, ErrorCode: r.ErrorCode, ErrorMessage: r.ErrorMessage, OutputText: r.OutputText,
		InputTokens: r.InputTokens, OutputTokens: r.OutputTokens, Context: r.Context, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, FinishedAt: r.FinishedAt,
	}
}

// createRun validates the request against policy, pins what the run starts
// from (the app's draft head) and hands it to the orchestrator.
func (s *Server) createRun(c *gin.Context) {
	apiStart := time.Now()
	if !s.storeWritable(c) {
		return
	}
	appID := c.Param("app_id")
	if !validID(appID) {
		_ = c.Error(core.Errf(core.CodeInvalidRequest, "app_id", "malformed app id"))
		return
	}
	// The body is read before the app, whose read also resolves the default
	// model for the body's engine (one query for both), but a missing app
	// is still answered before a bad body.
	var req createRunRequest
	bindErr := bindJSON(c, maxJSONBody, &req)
	eng := req.Engine
	if eng == "" {
		eng = s.deps.DefaultEngine
	}
	ctx := c.Request.Context()
	p := principal(c)
	// An engine name that is no plugin's name (such names are ids) is
	// refused below; it must not reach the query (PostgreSQL refuses NUL).
	bindingsOf := eng
	if !validID(eng) {
		bindingsOf = ""
	}
	older, budget := 0, messageBudget()
	// A chat's tail is read with the app, in one statement
	// (store.AppForRunWithChatTail): the reads do not depend on each
	// other, and on PostgreSQL each would be a round trip to a database
	// that may be across a network from this host. The tail is used only
	// once the request has passed every check below.
	var (
		tailRead             *store.ChatTailRead
		a                    store.App
		defaultModel         store.Model
		defaultEngineModelID string
		err                  error
	)
	if bindErr == nil && req.ChatSessionID != "" && validID(req.ChatSessionID) {
		var t store.ChatTailRead
		a, defaultModel, defaultEngineModelID, t, err = s.deps.Store.AppForRunWithChatTail(ctx, appID, p.TenantID, bindingsOf,
			req.ChatSessionID, budget, historyMaxMessages())
		tailRead = &t
	} else {
		a, defaultModel, defaultEngineModelID, err = s.deps.Store.AppForRun(ctx, appID, p.TenantID, bindingsOf)
	}
	if err == nil && a.TenantID != p.TenantID {
		err = core.Errf(core.CodeNotFound, "", "app %s not found", appID)
	}
	if err != nil {
		_ = c.Error(err)
		return
	}
	if bindErr != nil {
		_ = c.Error(bindErr)
		return
	}
	req.Prompt = strings.TrimSpace(req.Prompt)
	switch {
	case req.Prompt == "":
		_ = c.Error(core.Errf(core.CodeInvalidRequest, "prompt", "prompt is required"))
		return
	case len(req.Prompt) > maxPromptChars:
		_ = c.Error(core.Errf(core.CodeInvalidRequest, "prompt", "prompt is over %d characters", maxPromptChars))
		return
	case req.BaseRevisionID != "" && req.BaseRevisionID != a.DraftRevisionID:
		_ = c.Error(core.Errf(core.CodeRevisionConflict, "base_revision_id", "the app's draft head is %s, not %s", a.DraftRevisionID, req.BaseRevisionID))
		return
	}
	limits, err := limitsFor(req.TokenBudget)
	if err != nil {
		_ = c.Error(err)
		return
	}
	if eng == "native" && os.Getenv("APPS_CODING_AGENT_NATIVE_ENABLED") != "1" {
		_ = c.Error(core.Errf(core.CodeEngineUnavailable, "engine", "the native engine is disabled by policy (APPS_CODING_AGENT_NATIVE_ENABLED is not 1)"))
		return
	}
	key, fingerprint, err := idempotency(c, a.ID, req)
	if err != nil {
		_ = c.Error(err)
		return
	}
	if key != "" {
		if prior, err := s.deps.Store.GetRunByIdempotencyKey(ctx, p.TenantID, key); err == nil {
			s.replay(c, prior, a.ID, fingerprint)
			return
		}
	}
	if req.ChatSessionID != "" && s.routedChat(c, req) {
		return // created on the host holding the chat's warm sandbox
	}
	requested := ""
	if req.ModelID != nil {
		requested = *req.ModelID
	}
	// Refuse before writing anything (a chat session, a turn) for a run
	// that cannot start.
	if err := s.deps.Runs.Ready(eng, s.deps.DefaultSandbox); err != nil {
		_ = c.Error(err)
		return
	}
	var model engine.Model
	if requested == "" {
		model, err = s.pinResolved(defaultModel, defaultEngineModelID)
	} else {
		model, err = s.pinModel(ctx, p.TenantID, requested, eng)
	}
	if err != nil {
		_ = c.Error(err)
		return
	}
	if model.ID == "" && s.engineNeedsModel(eng) {
		_ = c.Error(core.Errf(core.CodeModelUnavailable, "model_id", "engine %q needs a model and none is configured: "+
			"POST /admin/models (or start the host with OPENAI_API_KEY, OPENAI_BASE_URL or ANTHROPIC_API_KEY set)", eng))
		return
	}
	// The chat session is the source of truth for history: the run gets its
	// persisted turns; a new session is made when none is given.
	// A new session is written with the run, in one transaction, so it
	// has no turns to read yet.
	var chat store.ChatSession
	var turns []store.ChatMessage
	if req.ChatSessionID != "" {
		// Only the turns the history budget can hold are read: a long chat
		// costs a run no more than a short one.
		if chat, turns, older, err = s.chatWithTail(ctx, a, p, req.ChatSessionID, budget, tailRead); err != nil {
			_ = c.Error(err)
			return
		}
	} else {
		chat = store.ChatSession{ID: core.NewID("chat"), Title: core.Title(req.Prompt, core.MaxTitleRunes)}
	}
	// The selected agent's contract: in the run's context, as a file in its
	// sandbox for the contract tools, and summarised in its history.
	contract := s.agentContract(ctx, a)
	contractJSON, err := json.Marshal(contract)
	if err != nil {
		_ = c.Error(err)
		return
	}
	// The app's files are read only if the run's sandbox needs them (a
	// chat's warm sandbox holding the draft already does not).
	st, revision := s.deps.Store, a.DraftRevisionID
	loadFiles := func(ctx context.Context) ([]sandbox.File, error) {
		files, err := st.RevisionFiles(ctx, revision)
		if err != nil {
			return nil, err
		}
		return append(files, sandbox.File{Path: agentcontract.Path, Data: contractJSON, Mode: 0o644}), nil
	}
	runContext, _ := json.Marshal(map[string]json.RawMessage{"selected_agent_contract": contractJSON})
	runContext = withLimits(runContext, limits)
	hist := historyTail(turns, older, budget)
	if note, ok := contractNote(contract); ok {
		hist = append([]engine.Message{note}, hist...)
	}
	if chat.RestoredCheckpointID.Valid {
		// The files changed under the conversation: say so, or the engine
		// would build on work that is no longer there.
		hist = append(hist, restoreNote(ctx, s.deps.Store, chat.RestoredCheckpointID.String))
	}
	// The user's turn (and a new session) is recorded with the run, before
	// it starts, so it always precedes the run's answer, and a start that
	// fails leaves neither behind.
	runID := core.NewID("run")
	turn := &core.ChatTurn{MessageID: MessageID(), Content: req.Prompt, NewSession: req.ChatSessionID == "", Title: chat.Title}
	run, err := s.deps.Runs.Start(ctx, orchestrator.StartRequest{
		Turn:  turn,
		RunID: runID, TenantID: p.TenantID, AppID: a.ID, UserID: p.UserID, BaseRevisionID: a.DraftRevisionID,
		Prompt: req.Prompt, Engine: eng, Sandbox: s.deps.DefaultSandbox, LoadFiles: loadFiles,
		IdempotencyKey: key, IdempotencyHash: fingerprint,
		Model: model, RequestedModelID: requested,
		ChatSessionID: chat.ID, History: hist, APIStartedAt: apiStart, Context: runContext, Limits: limits.engine(),
	})
	if err != nil && key != "" && errors.Is(err, store.ErrConflict) {
		// A concurrent request with the same key won the insert.
		if prior, perr := s.deps.Store.GetRunByIdempotencyKey(ctx, p.TenantID, key); perr == nil {
			s.replay(c, prior, a.ID, fingerprint)
			return
		}
	}
	if err != nil {
		_ = c.Error(err)
		return
	}
	if chat.RestoredCheckpointID.Valid {
		// Told once: this run's history carries the note.
		if err := s.deps.Store.MarkChatRestored(context.WithoutCancel(ctx), chat.ID, ""); err != nil {
			s.log.Error("clear the chat's restore mark", "chat", chat.ID, "error", err)
		}
	}
	c.JSON(http.StatusCreated, runOut(run))
}

// restoreNote is the system message that tells a run a checkpoint was
// restored since the conversation's last run.
func restoreNote(ctx context.Context, st *store.Store, checkpointID string) engine.Message {
	text := fmt.Sprintf("Since the previous messages, the user restored checkpoint %s: the app's files are back to how they were then, and changes made after it are no longer in the working copy.", checkpointID)
	if cp, err := st.GetCheckpoint(ctx, checkpointID); err == nil {
		if cp.Label != "" {
			text += fmt.Sprintf(" The checkpoint was made by: %q.", cp.Label)
		}
	}
	return engine.Message{Role: "system", Content: text}
}

// maxIdempotencyKey bounds the header.
const maxIdempotencyKey = 200

// idempotency reads the Idempotency-Key header and fingerprints the request
// (app and body) it guards.
func idempotency(c *gin.Context, appID string, req createRunRequest) (key, fingerprint string, err error) {
	key = c.GetHeader("Idempotency-Key")
	if key == "" {
		return "", "", nil
	}
	if len(key) > maxIdempotencyKey || strings.ContainsFunc(key, func(r rune) bool { return r < 0x21 || r > 0x7e }) {
		return "", "", core.Errf(core.CodeInvalidRequest, "Idempotency-Key", "the Idempotency-Key must be 1-%d printable ASCII characters", maxIdempotencyKey)
	}
	body, _ := json.Marshal(req)
	sum := sha256.Sum256(append([]byte(appID+"\x00"), body...))
	return key, hex.EncodeToString(sum[:]), nil
}

// replay answers a repeated create with the run the key first made, or
// refuses a key reused for a different request.
func (s *Server) replay(c *gin.Context, prior *core.Run, appID, fingerprint string) {
	if prior.AppID != appID || prior.IdempotencyHash != fingerprint {
		_ = c.Error(core.Errf(core.CodeIdempotencyKeyReused, "Idempotency-Key", "this Idempotency-Key was used for a different request (run %s)", prior.ID))
		return
	}
	c.Header("Idempotent-Replayed", "true")
	c.JSON(http.StatusOK, runOut(prior))
}

func (s *Server) getRun(c *gin.Context) {
	if r, ok := s.unpersistedRun(c); ok {
		out := runOut(r)
		out.Persisted = new(bool)
		c.JSON(http.StatusOK, out)
		return
	}
	r, ok := s.run(c)
	if !ok {
		return
	}
	if !r.Status.Terminal() {
		var err error
		if r, err = s.settled(c.Request.Context(), r); err != nil {
			_ = c.Error(err)
			return
		}
	}
	c.JSON(http.StatusOK, runOut(r))
}

// finishWait bounds how long a read waits for a finishing run's final
// record: the orchestrator writes it right after the terminal event, so
// this is milliseconds unless the database is struggling.
const finishWait = 5 * time.Second

// settled answers for a run whose terminal event is logged as finished,
// even in the moment before its row says so (the orchestrator writes the
// event first: the log is the source of truth). A client that reads the
// run when its stream ends must see the final status and result: when
// this host holds the run it waits for the final record; otherwise (its
// host died in between) the terminal event's payload is the answer.
func (s *Server) settled(ctx context.Context, r *core.Run) (*core.Run, error) {
	last, err := s.deps.Store.LastEvent(ctx, r.ID, r.AppID)
	if err != nil || last == nil || !last.Event.Terminal() {
		return r, err
	}
	if s.deps.Runs.Held(r.ID) {
		wctx, cancel := context.WithTimeout(ctx, finishWait)
		s.deps.Runs.AwaitFinished(wctx, r.ID)
		cancel()
	}
	// Read again either way: the run may have finished between the first
	// read and now, whether or not this host still held it.
	fresh, err := s.deps.Store.GetRun(ctx, r.ID)
	if err != nil {
		return r, err
	}
	if !fresh.Status.Terminal() {
		settleFromLog(fresh, last)
	}
	return fresh, nil
}

// settleFromLog takes a run's final status, error, output and result
// revision from its terminal event.
func settleFromLog(r *core.Run, last *core.Envelope) {
	var p struct {
		Status           core.RunStatus `json:"status"`
		Code             string         `json:"error_code"`
		Message          string         `json:"error_message"`
		OutputText       string         `json:"output_text"`
		ResultRevisionID string         `json:"result_revision_id"`
	}
	if err := json.Unmarshal(last.Payload, &p); err != nil || !p.Status.Terminal() {
		return // not a payload this host wrote; the row stays the answer
	}
	ts := last.TS
	r.Status, r.ErrorCode, r.ErrorMessage, r.FinishedAt = p.Status, p.Code, p.Message, &ts
	if p.OutputText != "" {
		r.OutputText = p.OutputText
	}
	if p.ResultRevisionID != "" {
		r.ResultRevisionID = p.ResultRevisionID
	}
}

// listRuns pages newest first; next_cursor feeds ?cursor=.
func (s *Server) listRuns(c *gin.Context) {
	a, ok := s.app(c)
	if !ok {
		return
	}
	pg, ok := pageOf(c)
	if !ok {
		return
	}
	status := c.Query("status")
	if status != "" && !core.RunStatus(status).Valid() {
		_ = c.Error(core.Errf(core.CodeInvalidRequest, "status", "unknown status %q", status))
		return
	}
	runs, err := s.deps.Store.ListRuns(c.Request.Context(), a.ID, status, pg.cursor, pg.limit+1)
	if err != nil {
		_ = c.Error(err)
		return
	}
	runs, next := trimPage(pg, runs, func(r *core.Run) string { return r.ID })
	out := make([]runJSON, len(runs))
	for i, r := range runs {
		out[i] = runOut(r)
	}
	c.JSON(http.StatusOK, gin.H{"items": out, "next_cursor": next})
}

// page is a list request's ?limit= (1–200, default 50) and ?cursor= (the
// id of the last item of the previous page).
type page struct {
	limit  int
	cursor string
}

// pageOf reads the paging parameters, answering 400 itself when they are bad.
func pageOf(c *gin.Context) (page, bool) {
	limit, err := intParam(c, "limit", 50, 1, 200)
	if err != nil {
		_ = c.Error(err)
		return page{}, false
	}
	cursor := c.Query("cursor")
	if cursor != "" && !validID(cursor) {
		_ = c.Error(core.Errf(core.CodeInvalidRequest, "cursor", "malformed cursor"))
		return page{}, false
	}
	return page{limit: limit, cursor: cursor}, true
}

// trimPage cuts items, fetched with one extra to tell whether more follow,
// to the page and returns the next cursor ("" on the last page).
func trimPage[T any](pg page, items []T, id func(T) string) ([]T, string) {
	if len(items) <= pg.limit {
		return items, ""
	}
	items = items[:pg.limit]
	return items, id(items[pg.limit-1])
}

func intParam(c *gin.Context, name string, def, lo, hi int) (int, error) {
	v := c.Query(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, core.Errf(core.CodeInvalidRequest, name, "%s must be an integer from %d to %d", name, lo, hi)
	}
	return n, nil
}

// runEvents is the polling form of the stream.
func (s *Server) runEvents(c *gin.Context) {
	r, ok := s.run(c)
	if !ok {
		return
	}
	after, err := seqParam(c.Query("after_seq"))
	if err != nil {
		_ = c.Error(err)
		return
	}
	limit, err := intParam(c, "limit", 500, 1, 1000)
	if err != nil {
		_ = c.Error(err)
		return
	}
	evs, err := s.deps.Store.ListEvents(c.Request.Context(), r.ID, r.AppID, after, limit)
	if err != nil {
		_ = c.Error(err)
		return
	}
	next, done := after, false
	if len(evs) > 0 {
		next = evs[len(evs)-1].Seq
		done = evs[len(evs)-1].Event.Terminal()
	} else if after > 0 {
		// Polling from the terminal event on: nothing more will come.
		if done, err = s.endedAt(c.Request.Context(), r, after); err != nil {
			_ = c.Error(err)
			return
		}
	}
	c.JSON(http.StatusOK, gin.H{"items": evs, "next_after_seq": next, "done": done})
}

// endedAt reports whether the run's log ends with its terminal event at or
// before seq after, so a reader positioned there has seen everything.
func (s *Server) endedAt(ctx context.Context, r *core.Run, after int64) (bool, error) {
	last, err := s.deps.Store.LastEvent(ctx, r.ID, r.AppID)
	if err != nil {
		return false, err
	}
	return last != nil && last.Event.Terminal() && last.Seq <= after, nil
}

func seqParam(v string) (int64, error) {
	if v == "" {
		return 0, nil
	}
	// Digits only: ParseInt alone would take "+5" and "-0", which the
	// API's description (and an SSE client) never sends.
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || strings.TrimLeft(v, "0123456789") != "" {
		return 0, core.Errf(core.CodeInvalidRequest, "after_seq", "after_seq must be a non-negative integer")
	}
	return n, nil
}

func (s *Server) cancelRun(c *gin.Context) {
	r, ok := s.run(c)
	if !ok || s.routed(c, r, "cancel") {
		return
	}
	if r.Status.Terminal() {
		_ = c.Error(core.Errf(core.CodeRunFinished, "", "run %s is already %s", r.ID, r.Status))
		return
	}
	if err := s.deps.Runs.Cancel(c.Request.Context(), r.ID); err != nil {
		_ = c.Error(err)
		return
	}
	c.JSON(http.StatusAccepted, gin.H{"id": r.ID, "status": "cancelling"})
}

type resumeRequest struct {
	// Decision is "allow" or "deny" for the pending permission.
	Decision string `json:"decision"`
	Reason   string `json:"reason"`
}

func (s *Server) resumeRun(c *gin.Context) {
	r, ok := s.run(c)
	if !ok || s.routed(c, r, "resume") {
		return
	}
	// A run that is not paused is refused whatever the body says. A client
	// that answers permission.requested at once may be a moment ahead of
	// the stored status (the event is written before the run is marked
	// paused): the pending question is what counts then.
	if r.Status != core.RunPaused && !s.deps.Runs.AwaitsDecision(r.ID) {
		_ = c.Error(core.Errf(core.CodeRunNotPaused, "", "run %s is %s, not paused", r.ID, r.Status))
		return
	}
	var req resumeRequest
	if err := bindJSON(c, maxJSONBody, &req); err != nil {
		_ = c.Error(err)
		return
	}
	// A decision answers a pending permission; a run paused for another
	// reason (its token budget, an interrupted host) resumes without one.
	needsDecision := r.Status != core.RunPaused || r.PauseReason == core.PauseForPermission
	if req.Decision != "allow" && req.Decision != "deny" && (req.Decision != "" || needsDecision) {
		_ = c.Error(core.Errf(core.CodeInvalidRequest, "decision", `decision must be "allow" or "deny"`))
		return
	}
	if r.Status == core.RunPaused && !s.deps.Runs.Held(r.ID) {
		// Paused by an earlier host process: there is no pending question
		// to answer, only saved state to continue from.
		s.reattach(c, r)
		return
	}
	if err := s.deps.Runs.Resume(c.Request.Context(), r.ID, engine.PermissionDecision{Allow: req.Decision == "allow", Reason: req.Reason}); err != nil {
		_ = c.Error(err)
		return
	}
	c.JSON(http.StatusAccepted, gin.H{"id": r.ID, "status": "resuming"})
}
