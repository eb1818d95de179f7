package store

import (
	"container/list"
	"context"
	"database/sql"
	"errors"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"unicode/utf8"
)

// A chat's tail (ChatSessionTail) is read on every run started in the
// chat, and a chat grows by two turns a run, so the store keeps the tail
// it last read of each recent chat and asks the database only for what
// came after it: one query returns the session, the chat's length and the
// turns newer than the newest one held. Turns are never edited, only added
// and deleted, so the held tail is still true when the chat's length is
// exactly what it held plus the new turns; anything else (a turn deleted,
// one written by another host with an older timestamp) reads the tail
// whole again. Every host checks against the database each time: the
// cache saves reading content, never a query.

// chatTailCacheChats bounds how many chats' tails are kept.
const chatTailCacheChats = 512

// chatTailCacheBytes bounds the content one cached tail may hold: a chat
// whose tail is bigger (a huge turn that straddles the budget) is read
// whole each time rather than pinned in memory.
const chatTailCacheBytes = 256 << 10

// chatTailNewLimit bounds the new turns one incremental read takes; a chat
// that grew more than that since is read whole.
const chatTailNewLimit = 64

// chatTail is what the store holds of a chat: the tail it last returned for
// a budget and bound on turns, and the chat's length then.
type chatTail struct {
	budget, maxTurns int
	total            int
	// tail, oldest first, is shared with the callers it was returned to
	// and none of them writes it (its capacity is clipped, so an append
	// cannot write past a caller's view). It ends at slot end of arr
	// (nil: an array of its own, with no room after it).
	tail []ChatMessage
	arr  *tailArray
	end  int
}

// tailArray is an array that a chat's successive tails share, so that a
// read adds the chat's new turns after the tail it holds instead of
// copying the whole tail each time. used counts the slots written: a read
// writes past its tail's end only if it is the first to claim those slots,
// so two reads that hold the same tail never write the same slot, and no
// slot a caller can see is written again.
type tailArray struct {
	slots []ChatMessage
	used  atomic.Int64
}

// tailRoom is how many turns a new tailArray has room for after the tail
// copied into it: that many turns are added in place before the next copy.
// The turns the tails drop at their old end stay in the array until then.
const tailRoom = 32

// extend returns held's tail with added after it, where it ends in its
// array and that array: in place when held's array has room after it that
// nobody has claimed, else copied into a new array with tailRoom to spare.
func (held chatTail) extend(added []ChatMessage) ([]ChatMessage, *tailArray, int) {
	if len(added) == 0 {
		return held.tail, held.arr, held.end
	}
	if a, end := held.arr, held.end+len(added); a != nil && end <= len(a.slots) &&
		a.used.CompareAndSwap(int64(held.end), int64(end)) {
		copy(a.slots[held.end:], added)
		return a.slots[end-len(held.tail)-len(added) : end : end], a, end
	}
	n := len(held.tail) + len(added)
	a := &tailArray{slots: make([]ChatMessage, n+tailRoom)}
	copy(a.slots[copy(a.slots, held.tail):], added)
	a.used.Store(int64(n))
	return a.slots[:n:n], a, n
}

// chatTailCache keeps chat tails by chat session id, least recently used
// dropped first.
type chatTailCache struct {
	mu    sync.Mutex
	byID  map[string]*list.Element
	order list.List // of *chatTailItem, most recent at the front
}

type chatTailItem struct {
	id string
	t  chatTail
}

func (c *chatTailCache) get(id string) (chatTail, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byID[id]
	if !ok {
		return chatTail{}, false
	}
	c.order.MoveToFront(el)
	return el.Value.(*chatTailItem).t, true
}

func (c *chatTailCache) put(id string, t chatTail) {
	size := 0
	for _, m := range t.tail {
		size += len(m.Content)
	}
	if size > chatTailCacheBytes {
		c.drop(id)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byID == nil {
		c.byID = map[string]*list.Element{}
	}
	if el, ok := c.byID[id]; ok {
		el.Value.(*chatTailItem).t = t
		c.order.MoveToFront(el)
		return
	}
	c.byID[id] = c.order.PushFront(&chatTailItem{id: id, t: t})
	for c.order.Len() > chatTailCacheChats {
		old := c.order.Back()
		c.order.Remove(old)
		delete(c.byID, old.Value.(*chatTailItem).id)
	}
}

func (c *chatTailCache) drop(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byID[id]; ok {
		c.order.Remove(el)
		delete(c.byID, id)
	}
}

// ChatSessionTail reads a chat session with the newest turns of it that
// fit in budget runes of content, oldest first, plus the newest one that
// does not fit (the caller decides what to keep of it), at most maxTurns in
// all (0: no bound), and how many older turns are left out. A missing
// session is ErrNotFound. Starting a run in a chat needs both, in one
// query whose cost follows what changed since the chat's last run (see
// chatTailCache), or, read whole, the budget and maxTurns: never the
// length of the chat. The turns returned are shared with that cache: the
// caller must not modify them.
func (s *Store) ChatSessionTail(ctx context.Context, sessionID string, budget, maxTurns int) (ChatSession, []ChatMessage, int, error) {
	r := s.planTailRead(sessionID, budget, maxTurns)
	q, args := s.tailQuery(r)
	var rows []tailRow
	if err := s.r.SelectContext(ctx, &rows, s.rebind(q), args...); err != nil {
		return ChatSession{}, nil, 0, translate(err)
	}
	return s.tailResult(ctx, r, rows)
}

// tailRead is how a chat's tail is read next: only the turns after the
// tail held (since), or whole.
type tailRead struct {
	sessionID        string
	budget, maxTurns int
	held             chatTail
	since            bool
}

// planTailRead decides how ChatSessionTail reads sessionID's tail: only
// what is new when the cache holds a tail of the same budget and bound.
func (s *Store) planTailRead(sessionID string, budget, maxTurns int) tailRead {
	if maxTurns <= 0 {
		maxTurns = math.MaxInt32
	}
	held, ok := s.chatTails.get(sessionID)
	return tailRead{sessionID: sessionID, budget: budget, maxTurns: maxTurns, held: held,
		since: ok && held.budget == budget && held.maxTurns == maxTurns}
}

// tailQuery is r's query (placeholders ?) with its arguments.
func (s *Store) tailQuery(r tailRead) (string, []any) {
	if r.since {
		return chatTailSinceQuery(r.sessionID, r.held)
	}
	return s.readTailQuery(r.sessionID, r.budget, r.maxTurns, nil)
}

// tailResult is what ChatSessionTail returns for the rows r's query read,
// with the cache updated; a held tail that is no longer true is read again
// whole.
func (s *Store) tailResult(ctx context.Context, r tailRead, rows []tailRow) (ChatSession, []ChatMessage, int, error) {
	if !r.since {
		cs, tail, total, err := readTailResult(r.sessionID, rows)
		return s.keepWholeTail(r.sessionID, r.budget, r.maxTurns, cs, tail, total, err)
	}
	cs, tail, older, ok, err := s.chatTailSinceResult(r.sessionID, r.held, rows)
	if err != nil || ok {
		return cs, tail, older, err
	}
	// A turn deleted, or one another host wrote out of order.
	return s.chatTailWhole(ctx, r.sessionID, r.budget, r.maxTurns)
}

// tailRow is a chat session joined with one of its turns (none: NULLs)
// and the chat's length.
type tailRow struct {
	ChatSession
	MsgID        sql.NullString `db:"m_id"`
	MsgRunID     sql.NullString `db:"m_run_id"`
	MsgRole      sql.NullString `db:"m_role"`
	MsgContent   sql.NullString `db:"m_content"`
	MsgCreatedAt sql.NullInt64  `db:"m_created_at"`
	Total        int            `db:"total"`
}

// tailSessionColumns are the session's columns of a tailRow query.
const tailSessionColumns = `s.id, s.tenant_id, s.app_id, s.user_id, s.title, s.restored_checkpoint_id, s.created_at, s.updated_at`

// turns are the turns of rows, in their order.
func turns(sessionID string, rows []tailRow) []ChatMessage {
	out := make([]ChatMessage, 0, len(rows))
	for _, r := range rows {
		if r.MsgID.Valid {
			out = append(out, ChatMessage{ID: r.MsgID.String, ChatSessionID: sessionID, RunID: r.MsgRunID,
				Role: r.MsgRole.String, Content: r.MsgContent.String, CreatedAt: r.MsgCreatedAt.Int64})
		}
	}
	return out
}

// chatTailWhole reads the tail in one query: the turns are walked newest
// first along chat_messages_tail (no sort), a running total of their length
// (in characters on both databases, as the budget counts them) stops the
// walk, and only the turns kept are sent; the chat's length is the
// session's message_count.
func (s *Store) chatTailWhole(ctx context.Context, sessionID string, budget, maxTurns int) (ChatSession, []ChatMessage, int, error) {
	cs, tail, total, err := s.readTail(ctx, sessionID, budget, maxTurns, nil)
	return s.keepWholeTail(sessionID, budget, maxTurns, cs, tail, total, err)
}

// keepWholeTail caches a tail chatTailWhole read (or forgets the chat's,
// when the session is gone) and returns it as ChatSessionTail does.
func (s *Store) keepWholeTail(sessionID string, budget, maxTurns int, cs ChatSession, tail []ChatMessage, total int, err error) (ChatSession, []ChatMessage, int, error) {
	if errors.Is(err, ErrNotFound) {
		s.chatTails.drop(sessionID)
	}
	if err != nil {
		return ChatSession{}, nil, 0, err
	}
	s.chatTails.put(sessionID, chatTail{budget: budget, maxTurns: maxTurns, total: total, tail: slices.Clip(tail)})
	return cs, tail, max(0, total-len(tail)), nil
}

// readTail reads a chat's tail as chatTailWhole describes, of the turns
// before bound when it is not nil (else of all), with how many turns that
// is.
func (s *Store) readTail(ctx context.Context, sessionID string, budget, maxTurns int, bound *ChatMessage) (ChatSession, []ChatMessage, int, error) {
	q, args := s.readTailQuery(sessionID, budget, maxTurns, bound)
	var rows []tailRow
	if err := s.r.SelectContext(ctx, &rows, s.rebind(q), args...); err != nil {
		return ChatSession{}, nil, 0, translate(err)
	}
	return readTailResult(sessionID, rows)
}

// readTailQuery is readTail's query (placeholders ?) with its arguments.
func (s *Store) readTailQuery(sessionID string, budget, maxTurns int, bound *ChatMessage) (string, []any) {
	length := "length"
	if s.dialect == Postgres {
		length = "char_length"
	}
	where, boundArgs := "chat_session_id = ?", []any{sessionID}
	// The whole chat's length is the session's count; only the turns
	// before a bound are counted.
	totalColumn, countJoin := `s.message_count AS total`, ``
	var args []any
	if bound != nil {
		where += " AND (created_at, id) < (?, ?)"
		boundArgs = append(boundArgs, bound.CreatedAt, bound.ID)
		totalColumn, countJoin = `c.total`, ` CROSS JOIN (SELECT count(*) AS total FROM chat_messages WHERE `+where+`) c`
		args = append(args, boundArgs...)
	}
	args = append(args, boundArgs...)
	args = append(args, maxTurns, budget, sessionID)
	return `SELECT ` + tailSessionColumns + `, t.id AS m_id, t.run_id AS m_run_id,
 t.role AS m_role, t.content AS m_content, t.created_at AS m_created_at, ` + totalColumn + `
 FROM chat_sessions s` + countJoin + `
 LEFT JOIN (SELECT id, run_id, role, content, created_at, before FROM (
   SELECT id, run_id, role, content, created_at,
    SUM(` + length + `(content)) OVER (ORDER BY created_at DESC, id DESC ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) - ` + length + `(content) AS before
   FROM chat_messages WHERE ` + where + ` ORDER BY created_at DESC, id DESC LIMIT ?) w
  WHERE before <= ?) t ON 1 = 1
 WHERE s.id = ? ORDER BY t.created_at, t.id`, args
}

// readTailResult is what readTail returns for the rows its query read.
func readTailResult(sessionID string, rows []tailRow) (ChatSession, []ChatMessage, int, error) {
	if len(rows) == 0 {
		return ChatSession{}, nil, 0, notFound("chat session", sessionID)
	}
	return rows[0].ChatSession, turns(sessionID, rows), rows[0].Total, nil
}

// ChatTailBefore is ChatSessionTail for the history a run had when it
// started: the tail of the turns before the run's own first turn (all of
// them when it has none), read whole, without the cache. A run resumed
// after a host restart needs it; later runs of the chat are not its
// history.
func (s *Store) ChatTailBefore(ctx context.Context, sessionID, runID string, budget, maxTurns int) ([]ChatMessage, int, error) {
	if maxTurns <= 0 {
		maxTurns = math.MaxInt32
	}
	var own []ChatMessage
	if err := s.r.SelectContext(ctx, &own, s.rebind(`SELECT id, chat_session_id, run_id, role, content, created_at FROM chat_messages
 WHERE chat_session_id = ? AND run_id = ? ORDER BY created_at, id LIMIT 1`), sessionID, runID); err != nil {
		return nil, 0, translate(err)
	}
	var bound *ChatMessage
	if len(own) > 0 {
		bound = &own[0]
	}
	_, tail, total, err := s.readTail(ctx, sessionID, budget, maxTurns, bound)
	if err != nil {
		return nil, 0, err
	}
	return tail, max(0, total-len(tail)), nil
}

// chatTailSinceQuery reads the session, the chat's length and the turns
// after the newest one held (placeholders ?), with its arguments.
func chatTailSinceQuery(sessionID string, held chatTail) (string, []any) {
	after := ChatMessage{CreatedAt: math.MinInt64}
	if n := len(held.tail); n > 0 {
		after = held.tail[n-1]
	}
	return `SELECT ` + tailSessionColumns + `, m.id AS m_id, m.run_id AS m_run_id,
 m.role AS m_role, m.content AS m_content, m.created_at AS m_created_at, s.message_count AS total
 FROM chat_sessions s
 LEFT JOIN chat_messages m ON m.chat_session_id = s.id AND (m.created_at, m.id) > (?, ?)
 WHERE s.id = ? ORDER BY m.created_at, m.id LIMIT ?`, []any{after.CreatedAt, after.ID, sessionID, chatTailNewLimit + 1}
}

// chatTailSinceResult is the tail made from the held one and the rows
// chatTailSinceQuery read, the cache updated; ok is false when the held
// tail is no longer true (the caller then reads it whole).
func (s *Store) chatTailSinceResult(sessionID string, held chatTail, rows []tailRow) (ChatSession, []ChatMessage, int, bool, error) {
	if len(rows) == 0 {
		s.chatTails.drop(sessionID)
		return ChatSession{}, nil, 0, false, notFound("chat session", sessionID)
	}
	added := turns(sessionID, rows)
	total := rows[0].Total
	if len(added) > chatTailNewLimit || total != held.total+len(added) {
		return ChatSession{}, nil, 0, false, nil
	}
	// The tail cached and the one returned are the same slice; trimming
	// drops turns at its old end only, so it still ends at end.
	tail, arr, end := held.extend(added)
	tail = trimTail(tail, held.budget, held.maxTurns)
	s.chatTails.put(sessionID, chatTail{budget: held.budget, maxTurns: held.maxTurns, total: total, tail: tail, arr: arr, end: end})
	return rows[0].ChatSession, tail, max(0, total-len(tail)), true, nil
}

// trimTail keeps of msgs (oldest first) what ChatSessionTail returns: the
// newest that fit in budget runes, the newest one that does not, at most
// maxTurns. Turns dropped here can never be part of a later tail: the
// chat only grows at its new end.
func trimTail(msgs []ChatMessage, budget, maxTurns int) []ChatMessage {
	used, keep := 0, 0
	for i := len(msgs) - 1; i >= 0 && keep < maxTurns; i-- {
		keep++
		if used += utf8.RuneCountInString(msgs[i].Content); used > budget {
			break
		}
	}
	return msgs[len(msgs)-keep:]
}
