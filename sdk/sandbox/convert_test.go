package sandbox

import (
	"testing"

	"github.com/agenthost/agenthost/sdk/internal/pb/sandboxv1"
	"github.com/agenthost/agenthost/sdk/internal/roundtrip"
	"github.com/stretchr/testify/assert"
)

// Every field of Info survives its proto (times to the millisecond, which
// is what the wire carries).
func TestInfoRoundTrips(t *testing.T) {
	var in Info
	roundtrip.Fill(&in)
	back := infoFromProto(infoToProto(in))
	assert.True(t, in.CreatedAt.Equal(back.CreatedAt))
	back.CreatedAt = in.CreatedAt
	assert.Equal(t, in, back)

	// Fill gives Status a string outside the set, which travels in the
	// string field alone; each value of the set travels in the enum too.
	for _, status := range []string{StatusRunning, StatusStopped} {
		in.Status = status
		back := infoFromProto(infoToProto(in))
		back.CreatedAt = in.CreatedAt
		assert.Equal(t, in, back)
	}
}

// SandboxInfo carries the status twice: writers set the string and the
// enum, readers prefer a known enum and fall back to the string.
func TestInfoStatusStringAndEnum(t *testing.T) {
	for status, e := range map[string]sandboxv1.SandboxState{
		StatusRunning: sandboxv1.SandboxState_SANDBOX_STATE_RUNNING,
		StatusStopped: sandboxv1.SandboxState_SANDBOX_STATE_STOPPED,
	} {
		p := infoToProto(Info{ID: "s", Status: status})
		assert.Equal(t, status, p.GetStatus(), "writers set the string")
		assert.Equal(t, e, p.GetStatusEnum(), "writers set the enum")
		assert.Equal(t, status, infoFromProto(roundtrip.OverTheWire(t, p)).Status)
	}
	p := infoToProto(Info{ID: "s", Status: "paused"})
	assert.Equal(t, "paused", p.GetStatus(), "a status outside the set travels in the string")
	assert.Equal(t, sandboxv1.SandboxState_SANDBOX_STATE_UNSPECIFIED, p.GetStatusEnum())

	tests := []struct {
		name string
		in   *sandboxv1.SandboxInfo
		want string
	}{
		{"only the string (an older backend)", &sandboxv1.SandboxInfo{Status: "stopped"}, StatusStopped},
		{"only the enum", &sandboxv1.SandboxInfo{StatusEnum: sandboxv1.SandboxState_SANDBOX_STATE_RUNNING}, StatusRunning},
		{"an unknown enum number falls back to the string", &sandboxv1.SandboxInfo{Status: "running", StatusEnum: 42}, StatusRunning},
		{"the enum wins over the string", &sandboxv1.SandboxInfo{Status: "running", StatusEnum: sandboxv1.SandboxState_SANDBOX_STATE_STOPPED}, StatusStopped},
		{"a status outside the set comes through", &sandboxv1.SandboxInfo{Status: "paused"}, "paused"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, infoFromProto(roundtrip.OverTheWire(t, tc.in)).Status)
		})
	}
}
