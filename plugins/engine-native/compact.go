package native

import (
	"fmt"
	"strings"

	"github.com/agenthost/agenthost/sdk/engine"
)

// A run's conversation grows with every tool round: file reads, searches
// and command output all go back to the model. Before each model request
// the loop keeps the request within the model's context window, cheapest
// loss first:
//
//  1. old tool outputs and old tool calls' arguments are elided (the model
//     can call the tool again), oldest first, but never the round the model
//     is about to read;
//  2. the chat's earlier turns (history before this run's request) are left
//     out, oldest first, a whole exchange at a time;
//  3. the longest remaining texts are shortened in the middle, keeping their
//     head and tail.
//
// The system prompt and the user's request are never touched. What was
// done is saved with the conversation (a resumed run does not undo it) and
// shown to the user as a run.status event (context_compacted).

// bytesPerToken is how the engine estimates tokens without a tokenizer:
// English prose runs about four bytes a token, code and JSON nearer three,
// so three keeps the estimate on the safe side.
const bytesPerToken = 3

// Defaults of the context limit.
const (
	// DefaultContextTokens is the context window assumed for a model when
	// the plugin's config names none: the common size of current models.
	// A provider that still refuses a request as too long teaches the run
	// a smaller one (overflowShrink).
	DefaultContextTokens = 128000
	// defaultOutputReserve is kept free for the answer when
	// max_output_tokens is unset.
	defaultOutputReserve = 8192
	// minShortened is the least a shortened text keeps.
	minShortened = 2048
	// overflowShrink is the share of its estimate a request that the
	// provider refused as too long must shrink to.
	overflowShrink = 0.75
	// maxOverflowRetries bounds the refusals one turn recovers from.
	maxOverflowRetries = 3
)

// elidedNote replaces an old tool output.
const elidedNote = `{"elided":"this %s output (%d bytes) was removed to keep the conversation within the model's context; call the tool again if you still need it"}`

// elidedArgsNote replaces the arguments of an old tool call.
const elidedArgsNote = `{"elided":"arguments (%d bytes) removed to keep the conversation within the model's context"}`

// droppedNote tells the model that the chat's start is missing.
const droppedNote = "(Earlier turns of this chat were left out to keep the conversation within the model's context.)"

// compaction is what one compact call did.
type compaction struct {
	elided, dropped, shortened int
	before, after              int // estimated tokens
}

func (c compaction) changed() bool { return c.elided+c.dropped+c.shortened > 0 }

// describe is the run.status message for it.
func (c compaction) describe(limit int) string {
	var did []string
	if c.elided > 0 {
		did = append(did, plural(c.elided, "old tool output or argument elided", "old tool outputs and arguments elided"))
	}
	if c.dropped > 0 {
		did = append(did, plural(c.dropped, "earlier chat message left out", "earlier chat messages left out"))
	}
	if c.shortened > 0 {
		did = append(did, plural(c.shortened, "long text shortened", "long texts shortened"))
	}
	return fmt.Sprintf("conversation compacted to fit the model's context (about %d of %d tokens, from %d): %s",
		c.after, limit, c.before, strings.Join(did, ", "))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// estimateTokens estimates a request's size in tokens.
func estimateTokens(system string, msgs []message, tools []engine.ToolDescriptor) int {
	n := len(system)
	for _, m := range msgs {
		n += messageBytes(m)
	}
	for _, t := range tools {
		n += len(t.Name) + len(t.Description) + len(t.InputSchema)
	}
	return n / bytesPerToken
}

// messageBytes is a message's share of a request, its framing included.
func messageBytes(m message) int {
	n := len(m.Text) + len(m.ToolCallID) + len(m.ToolName) + 16
	for _, tc := range m.ToolCalls {
		n += len(tc.ID) + len(tc.Name) + len(tc.Args) + 16
	}
	return n
}

// system is the system prompt as sent: the conversation's, with a note
// when earlier turns were left out.
func (c *conversation) system() string {
	if c.Dropped > 0 {
		return c.System + "\n\n" + droppedNote
	}
	return c.System
}

// compact shrinks the conversation until a request with tools is
// estimated within limit tokens, or nothing more can go.
func (c *conversation) compact(limit int, tools []engine.ToolDescriptor) compaction {
	size := func() int { return estimateTokens(c.system(), c.Messages, tools) }
	res := compaction{before: size()}
	fits := func() bool { return size() <= limit }
	if !fits() {
		res.elided = c.elideToolOutputs(fits)
	}
	if !fits() {
		res.dropped = c.dropHistory(fits)
	}
	if !fits() {
		res.shortened = c.shortenTexts(fits)
	}
	res.after = size()
	return res
}

// currentRound is the index of the last assistant message: the tool
// results after it are what the model is about to read.
func (c *conversation) currentRound() int {
	for i := len(c.Messages) - 1; i >= 0; i-- {
		if c.Messages[i].Role == roleAssistant {
			return i
		}
	}
	return len(c.Messages)
}

// elideToolOutputs replaces old tool outputs, and the arguments of old
// tool calls (a patch, a file's content), oldest first, until fits.
func (c *conversation) elideToolOutputs(fits func() bool) int {
	n := 0
	for i := 0; i < c.currentRound() && !fits(); i++ {
		m := &c.Messages[i]
		switch {
		case m.Role == roleTool && !m.Elided:
			note := fmt.Sprintf(elidedNote, m.ToolName, len(m.Text))
			if len(note) < len(m.Text) { // else too short to be worth it
				m.Text, m.Elided = note, true
				n++
			}
		case m.Role == roleAssistant:
			for j := range m.ToolCalls {
				call := &m.ToolCalls[j]
				// Still a JSON object: providers insist on one.
				note := fmt.Sprintf(elidedArgsNote, len(call.Args))
				if len(note) < len(call.Args) {
					call.Args = note
					n++
				}
			}
		}
	}
	return n
}

// dropHistory leaves out the chat's earlier turns (before this run's
// request), oldest first, until fits. It cuts only in front of a user's
// message, so no tool result loses its call and the conversation still
// starts with the user.
func (c *conversation) dropHistory(fits func() bool) int {
	dropped := 0
	for !fits() {
		cut := 0
		for i := 1; i <= c.RequestAt; i++ {
			if c.Messages[i].Role == roleUser {
				cut = i
				break
			}
		}
		if cut == 0 {
			return dropped
		}
		c.Messages = append(c.Messages[:0:0], c.Messages[cut:]...)
		c.RequestAt -= cut
		c.Dropped += cut
		dropped += cut
	}
	return dropped
}

// shortenTexts halves the longest texts (tool outputs, the assistant's
// words, earlier user messages; never the run's request) in the middle
// until fits or none is longer than minShortened.
func (c *conversation) shortenTexts(fits func() bool) int {
	shortened := map[int]bool{}
	for !fits() {
		longest := -1
		for i, m := range c.Messages {
			if i == c.RequestAt || len(m.Text) <= minShortened {
				continue
			}
			if longest < 0 || len(m.Text) > len(c.Messages[longest].Text) {
				longest = i
			}
		}
		if longest < 0 {
			break
		}
		m := &c.Messages[longest]
		m.Text = shortenMiddle(m.Text, max(len(m.Text)/2, minShortened))
		shortened[longest] = true
	}
	return len(shortened)
}

// shortenMiddle keeps about keep bytes of s, its head and its tail, with a
// marker saying how much went. It cuts at UTF-8 boundaries.
func shortenMiddle(s string, keep int) string {
	if len(s) <= keep {
		return s
	}
	head, tail := keep/2, keep/2
	for head > 0 && !startsRune(s[head]) {
		head--
	}
	from := len(s) - tail
	for from < len(s) && !startsRune(s[from]) {
		from++
	}
	return fmt.Sprintf("%s\n[... %d bytes left out to fit the model's context ...]\n%s", s[:head], from-head, s[from:])
}

// startsRune reports whether b can begin a UTF-8 sequence.
func startsRune(b byte) bool { return b&0xC0 != 0x80 }
