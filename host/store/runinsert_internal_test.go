package store

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/agenthost/agenthost/core"
	"github.com/jmoiron/sqlx"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testRun is a run with every column set.
func testRun() *core.Run {
	now := time.UnixMilli(1_700_000_000_123)
	return &core.Run{ID: "run_1", TenantID: "t", AppID: "app", UserID: "u", ChatSessionID: "chat", BaseRevisionID: "r0",
		ResultRevisionID: "r1", Prompt: "say ok", Status: core.RunRunning, Engine: "mock", EngineRunRef: "ref",
		RequestedModelID: "m1", ResolvedModelID: "m2", SandboxBackend: "local", SandboxID: "sb", SandboxStatus: "ready",
		SandboxStartedAt: &now, PauseReason: "p", ErrorCode: "E", ErrorMessage: "msg", OutputText: "out",
		InputTokens: 3, OutputTokens: 4, Context: json.RawMessage(`{"a":1}`), IdempotencyKey: "k", IdempotencyHash: "h",
		CreatedAt: now, UpdatedAt: now.Add(time.Second), FinishedAt: &now, Owner: "host"}
}

// TestInsertRunCompiledOnce: the insert compiled once gives the query and
// the arguments sqlx.Named gives, for a run with every column set.
func TestInsertRunCompiledOnce(t *testing.T) {
	r := testRun()
	wantQuery, wantArgs, err := sqlx.Named(insertRun, toRunRow(r))
	require.NoError(t, err)
	assert.Equal(t, wantQuery, insertRunQuery)
	assert.Equal(t, wantArgs, insertRunArgs(toRunRow(r)))

	assert.Panics(t, func() { compileNamed(`SELECT :nope`, reflect.TypeFor[runRow]()) }, "a name with no field")
}

// BenchmarkStartWrites: the statements of a run's start in a chat, built
// for the writer (CPU only, no database).
func BenchmarkStartWrites(b *testing.B) {
	r := testRun()
	turn := &core.ChatTurn{MessageID: "msg_1", Content: "say ok"}
	env := core.Envelope{RunID: r.ID, Seq: 1, Event: "run.accepted", Payload: json.RawMessage(`{}`), TS: r.CreatedAt}
	b.ReportAllocs()
	for b.Loop() {
		startWrites(r, turn, env)
	}
}
