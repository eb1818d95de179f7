package api

import (
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host/store"
	"github.com/stretchr/testify/assert"
)

func TestHistoryBudget(t *testing.T) {
	msgs := []store.ChatMessage{
		{Role: "user", Content: strings.Repeat("a", 10)},
		{Role: "assistant", Content: strings.Repeat("b", 10)},
		{Role: "user", Content: strings.Repeat("c", 10)},
	}
	all := historyTail(msgs, 0, 100)
	assert.Len(t, all, 3)
	assert.Equal(t, "user", all[0].Role, "oldest first")

	cut := historyTail(msgs, 0, 25)
	assert.Equal(t, []string{"system", "assistant", "user"}, []string{cut[0].Role, cut[1].Role, cut[2].Role})
	assert.Contains(t, cut[0].Content, "1 earlier messages")

	tail := historyTail([]store.ChatMessage{{Role: "user", Content: "0123456789"}}, 0, 4)
	assert.Equal(t, "6789", tail[0].Content, "an over-long newest turn keeps its end")
	assert.Empty(t, historyTail(nil, 0, 10))
}

// TestHistoryTurnBound: turns left unread by the bound on turns are named
// in a note even when what was read fits the budget.
func TestHistoryTurnBound(t *testing.T) {
	msgs := []store.ChatMessage{{Role: "user", Content: "a"}, {Role: "assistant", Content: "b"}}
	got := historyTail(msgs, 7, 100)
	assert.Equal(t, []string{"system", "user", "assistant"}, []string{got[0].Role, got[1].Role, got[2].Role})
	assert.Contains(t, got[0].Content, "7 earlier messages")
	assert.Len(t, historyTail(msgs, 0, 100), 2, "nothing left out: no note")
}

func TestMessageIDsSortInOrder(t *testing.T) {
	prev := MessageID()
	for i := 0; i < 100; i++ {
		next := MessageID()
		assert.Less(t, prev, next)
		prev = next
	}
}
