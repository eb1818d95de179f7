package core

import "fmt"

// RunStatus is where a run is in its life.
type RunStatus string

// The run states: queued → running ⇄ paused → completed | failed | cancelled.
const (
	RunQueued    RunStatus = "queued"
	RunRunning   RunStatus = "running"
	RunPaused    RunStatus = "paused"
	RunCompleted RunStatus = "completed"
	RunFailed    RunStatus = "failed"
	RunCancelled RunStatus = "cancelled"
)

// Terminal reports whether no transition leaves s.
func (s RunStatus) Terminal() bool {
	return s == RunCompleted || s == RunFailed || s == RunCancelled
}

// Valid reports whether s is a known state.
func (s RunStatus) Valid() bool {
	switch s {
	case RunQueued, RunRunning, RunPaused, RunCompleted, RunFailed, RunCancelled:
		return true
	}
	return false
}

var transitions = map[RunStatus][]RunStatus{
	RunQueued:  {RunRunning, RunFailed, RunCancelled},
	RunRunning: {RunPaused, RunCompleted, RunFailed, RunCancelled},
	// A paused run may end without resuming: cancelled by the user, or
	// failed when its engine dies while it waits.
	RunPaused: {RunRunning, RunFailed, RunCancelled},
}

// CanTransition reports whether a run may go from one state to another.
func CanTransition(from, to RunStatus) bool {
	for _, s := range transitions[from] {
		if s == to {
			return true
		}
	}
	return false
}

// Sources returns the states a run may be in to become to: those with a
// transition to it, and to itself (a change that keeps the state, such as
// recording a running run's sandbox). A store writes a status change only
// while the run is in one of them, in the same statement.
func Sources(to RunStatus) []RunStatus {
	out := []RunStatus{to}
	for _, from := range []RunStatus{RunQueued, RunRunning, RunPaused} {
		if from != to && CanTransition(from, to) {
			out = append(out, from)
		}
	}
	return out
}

// CheckTransition returns an error naming both states when the transition is
// not allowed.
func CheckTransition(from, to RunStatus) error {
	if CanTransition(from, to) {
		return nil
	}
	return &Error{Code: CodeInvalidRunTransition, Message: fmt.Sprintf("a %s run cannot become %s", from, to)}
}

// ChatTurn is the user's turn a new run answers, recorded with the run in
// one step so that a run never exists without its turn, nor a turn (or a
// new chat session) without its run.
type ChatTurn struct {
	// MessageID is the turn's id; Content is the prompt.
	MessageID, Content string
	// NewSession creates the run's chat session, titled Title, with it.
	NewSession bool
	Title      string
}
