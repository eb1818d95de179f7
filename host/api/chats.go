package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/agenthost/agenthost/core"
	"github.com/agenthost/agenthost/host/store"
	"github.com/agenthost/agenthost/sdk/engine"
	"github.com/gin-gonic/gin"
)

// defaultMessageBudget bounds the history a run carries, in characters
// (APPS_CODING_AGENT_MESSAGE_BUDGET_CHARS overrides it).
const defaultMessageBudget = 24_000

// defaultHistoryMaxMessages bounds how many of a chat's turns a run
// carries, however short they are (APPS_CODING_AGENT_HISTORY_MAX_MESSAGES
// overrides it): reading the history costs the same for a chat of
// thousands of one-word turns as for one of a hundred.
const defaultHistoryMaxMessages = 200

func historyMaxMessages() int {
	if n, err := strconv.Atoi(os.Getenv("APPS_CODING_AGENT_HISTORY_MAX_MESSAGES")); err == nil && n > 0 {
		return n
	}
	return defaultHistoryMaxMessages
}

func messageBudget() int {
	if n, err := strconv.Atoi(os.Getenv("APPS_CODING_AGENT_MESSAGE_BUDGET_CHARS")); err == nil && n > 0 {
		return n
	}
	return defaultMessageBudget
}

// MessageID makes ids that sort in creation order (the timestamp first), so
// turns written in the same millisecond keep their order.
func MessageID() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("msg_%020d_%s", time.Now().UnixNano(), hex.EncodeToString(b[:]))
}

type chatJSON struct {
	ID        string    `json:"id"`
	AppID     string    `json:"app_id"`
	Title     string    `json:"title"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	Messages  []msgJSON `json:"messages,omitempty"`
}

type msgJSON struct {
	ID        string    `json:"id"`
	Role      string    `json:"role"`
	Content   string    `json:"content"`
	RunID     string    `json:"run_id,omitempty"`
	CreatedAt time.Time `json:"created_at"`
}

func chatOut(cs store.ChatSession) chatJSON {
	return chatJSON{ID: cs.ID, AppID: cs.AppID, Title: cs.Title, CreatedAt: time.UnixMilli(cs.CreatedAt).UTC(), UpdatedAt: time.UnixMilli(cs.UpdatedAt).UTC()}
}

// chatSession loads a session that belongs to the app and the caller;
// anything else is 404 on field chat_session_id.
func (s *Server) chatSession(ctx context.Context, a store.App, p store.Principal, id string) (store.ChatSession, error) {
	if !validID(id) {
		return store.ChatSession{}, chatNotFound(id)
	}
	cs, err := s.deps.Store.GetChatSession(ctx, id)
	if err != nil || !ownsChat(cs, a, p) {
		return store.ChatSession{}, chatNotFound(id)
	}
	return cs, nil
}

// chatWithTail is chatSession with the tail of its history a run carries
// (store.ChatSessionTail), read together, or read already (with the app,
// by createRun) when read is not nil.
func (s *Server) chatWithTail(ctx context.Context, a store.App, p store.Principal, id string, budget int, read *store.ChatTailRead) (store.ChatSession, []store.ChatMessage, int, error) {
	var t store.ChatTailRead
	if read != nil {
		t = *read
	} else {
		t = s.readChatTail(ctx, id, budget)
	}
	if errors.Is(t.Err, store.ErrNotFound) || (t.Err == nil && !ownsChat(t.Session, a, p)) {
		return store.ChatSession{}, nil, 0, chatNotFound(id)
	}
	return t.Session, t.Turns, t.Older, t.Err
}

// readChatTail reads session id and the tail of its turns that budget
// holds, unchecked (chatWithTail checks it is the caller's). A malformed
// id is read as no session at all.
func (s *Server) readChatTail(ctx context.Context, id string, budget int) store.ChatTailRead {
	if !validID(id) {
		return store.ChatTailRead{Err: store.ErrNotFound}
	}
	var t store.ChatTailRead
	t.Session, t.Turns, t.Older, t.Err = s.deps.Store.ChatSessionTail(ctx, id, budget, historyMaxMessages())
	return t
}

// ownsChat reports whether a session is of the app and the caller's.
func ownsChat(cs store.ChatSession, a store.App, p store.Principal) bool {
	return cs.AppID == a.ID && cs.UserID == p.UserID && cs.TenantID == p.TenantID
}

func chatNotFound(id string) error {
	return core.Errf(core.CodeNotFound, "chat_session_id", "chat session %q not found", id)
}

func (s *Server) listChats(c *gin.Context) {
	a, ok := s.app(c)
	if !ok {
		return
	}
	pg, ok := pageOf(c)
	if !ok {
		return
	}
	list, err := s.deps.Store.ListChatSessions(c.Request.Context(), a.ID, principal(c).UserID, pg.cursor, pg.limit+1)
	if err != nil {
		_ = c.Error(err)
		return
	}
	list, next := trimPage(pg, list, func(cs store.ChatSession) string { return cs.ID })
	out := make([]chatJSON, len(list))
	for i, cs := range list {
		out[i] = chatOut(cs)
	}
	c.JSON(http.StatusOK, gin.H{"items": out, "next_cursor": next})
}

func (s *Server) createChat(c *gin.Context) {
	a, ok := s.app(c)
	if !ok {
		return
	}
	var req struct {
		Title string `json:"title"`
	}
	if err := bindJSON(c, maxJSONBody, &req); err != nil {
		_ = c.Error(err)
		return
	}
	cs, err := s.newChat(c.Request.Context(), a, principal(c), req.Title)
	if err != nil {
		_ = c.Error(err)
		return
	}
	c.JSON(http.StatusCreated, chatOut(cs))
}

func (s *Server) newChat(ctx context.Context, a store.App, p store.Principal, title string) (store.ChatSession, error) {
	title = core.Title(title, core.MaxTitleRunes)
	cs := store.ChatSession{ID: core.NewID("chat"), TenantID: p.TenantID, AppID: a.ID, UserID: p.UserID, Title: title}
	if err := s.deps.Store.CreateChatSession(ctx, cs); err != nil {
		return store.ChatSession{}, err
	}
	return s.deps.Store.GetChatSession(ctx, cs.ID)
}

func (s *Server) getChat(c *gin.Context) {
	a, ok := s.app(c)
	if !ok {
		return
	}
	ctx := c.Request.Context()
	cs, err := s.chatSession(ctx, a, principal(c), c.Param("chat_id"))
	if err != nil {
		_ = c.Error(err)
		return
	}
	msgs, err := s.deps.Store.ChatMessages(ctx, cs.ID)
	if err != nil {
		_ = c.Error(err)
		return
	}
	out := chatOut(cs)
	out.Messages = []msgJSON{}
	for _, m := range msgs {
		out.Messages = append(out.Messages, msgJSON{ID: m.ID, Role: m.Role, Content: m.Content, RunID: m.RunID.String, CreatedAt: time.UnixMilli(m.CreatedAt).UTC()})
	}
	c.JSON(http.StatusOK, out)
}

// historyTail renders a session's newest turns (store.ChatSessionTail) for
// the engine within the budget: the newest that fit, with a note when older
// ones were left out, older being how many turns before msgs were not read.
func historyTail(msgs []store.ChatMessage, older, budget int) []engine.Message {
	kept := make([]engine.Message, 0, len(msgs)+1) // the turns and a note at most
	used, noted := 0, false
	for i := len(msgs) - 1; i >= 0; i-- {
		n := utf8.RuneCountInString(msgs[i].Content)
		if used+n > budget {
			if len(kept) == 0 {
				// The newest turn alone is too long: keep its end.
				r := []rune(msgs[i].Content)
				kept = append(kept, engine.Message{Role: msgs[i].Role, Content: string(r[len(r)-budget:])})
				i--
			}
			if left := i + 1 + older; left > 0 {
				kept = append(kept, leftOutNote(left))
			}
			noted = true
			break
		}
		used += n
		kept = append(kept, engine.Message{Role: msgs[i].Role, Content: msgs[i].Content})
	}
	if !noted && older > 0 {
		// Within the budget, but past the bound on turns.
		kept = append(kept, leftOutNote(older))
	}
	for l, r := 0, len(kept)-1; l < r; l, r = l+1, r-1 {
		kept[l], kept[r] = kept[r], kept[l]
	}
	return kept
}

// leftOutNote tells the engine that n earlier turns are not in its history.
func leftOutNote(n int) engine.Message {
	return engine.Message{Role: "system", Content: fmt.Sprintf("[%d earlier messages of this chat were left out to fit the history budget]", n)}
}

// AssistantTurn is the chat's assistant turn for a finished run: its
// answer, or a line saying how it ended when it has none (nil when the run
// is not in a chat, or completed saying nothing). The orchestrator records
// it with the run's end, in one transaction.
func AssistantTurn(run *core.Run) *core.ChatTurn {
	if run.ChatSessionID == "" {
		return nil
	}
	content := run.OutputText
	if content == "" && run.Status != core.RunCompleted {
		content = fmt.Sprintf("(run %s: %s)", run.Status, run.ErrorCode)
	}
	if content == "" {
		return nil
	}
	return &core.ChatTurn{MessageID: MessageID(), Content: content}
}
