package core

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestTransitions(t *testing.T) {
	all := []RunStatus{RunQueued, RunRunning, RunPaused, RunCompleted, RunFailed, RunCancelled}
	allowed := map[[2]RunStatus]bool{
		{RunQueued, RunRunning}: true, {RunQueued, RunFailed}: true, {RunQueued, RunCancelled}: true,
		{RunRunning, RunPaused}: true, {RunRunning, RunCompleted}: true, {RunRunning, RunFailed}: true, {RunRunning, RunCancelled}: true,
		{RunPaused, RunRunning}: true, {RunPaused, RunFailed}: true, {RunPaused, RunCancelled}: true,
	}
	for _, from := range all {
		for _, to := range all {
			want := allowed[[2]RunStatus{from, to}]
			assert.Equal(t, want, CanTransition(from, to), "%s → %s", from, to)
			if want {
				assert.NoError(t, CheckTransition(from, to))
			} else {
				assert.Equal(t, CodeInvalidRunTransition, CodeOf(CheckTransition(from, to)))
			}
		}
		assert.Equal(t, from == RunCompleted || from == RunFailed || from == RunCancelled, from.Terminal())
		assert.True(t, from.Valid())
	}
	assert.False(t, RunStatus("exploded").Valid())
}

func TestTerminalEvents(t *testing.T) {
	for _, s := range []RunStatus{RunCompleted, RunFailed, RunCancelled} {
		ev, ok := TerminalEventFor(s)
		assert.True(t, ok)
		assert.True(t, ev.Terminal())
	}
	_, ok := TerminalEventFor(RunPaused)
	assert.False(t, ok)
	assert.False(t, EventRunPaused.Terminal())
}
