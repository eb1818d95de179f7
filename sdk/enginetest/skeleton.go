package enginetest

import (
	"fmt"
	"strings"
	"testing"
)

// Scenario is one task every engine must be able to perform.
type Scenario string

// The scenarios. Canonical gives the skeleton each must produce.
const (
	// Text: stream some text and complete.
	Text Scenario = "text"
	// Tool: call EchoTool with {"text":"ping"}, then stream text.
	Tool Scenario = "tool"
	// ToolFailure: call FailTool, keep going, stream text.
	ToolFailure Scenario = "tool_failure"
	// Permission: go through a permission (allowed), then stream text:
	// either the engine asks on its own (RequestPermission), or it calls
	// GuardedTool, around which the host asks, as the real host does for
	// a tool whose permission is "ask".
	Permission Scenario = "permission"
	// Fail: fail with a non-empty error code.
	Fail Scenario = "fail"
	// Cancel: stream some text, then keep working until cancelled.
	Cancel Scenario = "cancel"
	// State: save non-empty state, then stream text.
	State Scenario = "state"
)

// AllScenarios lists every scenario in the order the kit runs them.
var AllScenarios = []Scenario{Text, Tool, ToolFailure, Permission, Fail, Cancel, State}

// Optional reports whether an engine may decline a scenario: only State,
// because resumable state is a capability some engines do not have. Every
// engine must stream text, call a tool, carry on after a failed one, go
// through a permission, fail with a code and end a cancelled run in time.
func Optional(s Scenario) bool { return s == State }

// Canonical is the skeleton the mock engine produces for a scenario: the
// master sequence every engine must match exactly. It is nil for an unknown
// scenario.
func Canonical(s Scenario) []string {
	switch s {
	case Text, State:
		return []string{EventAssistantDelta, EventRunCompleted}
	case Tool:
		return []string{EventToolStarted, EventToolCompleted, EventAssistantDelta, EventRunCompleted}
	case ToolFailure:
		return []string{EventToolStarted, EventToolFailed, EventAssistantDelta, EventRunCompleted}
	case Permission:
		return []string{
			EventPermissionRequested, EventRunPaused, EventPermissionResolved, EventRunResumed,
			EventAssistantDelta, EventRunCompleted,
		}
	case Fail:
		return []string{EventRunFailed}
	case Cancel:
		return []string{EventAssistantDelta, EventRunCancelled}
	}
	return nil
}

// Accepted lists the skeletons an engine may produce for a scenario: the
// canonical one, and for Permission the host-asked form as well (the
// engine calls GuardedTool and the host asks around the call).
func Accepted(s Scenario) [][]string {
	out := [][]string{Canonical(s)}
	if s == Permission {
		out = append(out, []string{
			EventToolStarted, EventPermissionRequested, EventRunPaused, EventPermissionResolved, EventRunResumed,
			EventToolCompleted, EventAssistantDelta, EventRunCompleted,
		})
	}
	return out
}

// Skeleton drops run.status and collapses runs of assistant.delta into one:
// how many deltas an engine streams and which stages it reports are its own
// business, the rest must be the same for every engine doing the same task.
func Skeleton(timeline []string) []string {
	out := []string{}
	for _, e := range timeline {
		if e == EventRunStatus {
			continue
		}
		if e == EventAssistantDelta && len(out) > 0 && out[len(out)-1] == e {
			continue
		}
		out = append(out, e)
	}
	return out
}

// IsTerminal reports whether a timeline entry ends a run.
func IsTerminal(e string) bool {
	return e == EventRunCompleted || e == EventRunFailed || e == EventRunCancelled
}

// Validate checks the invariants of any finished run's timeline, whatever the
// task: exactly one terminal entry and it is last, and every tool.started is
// closed by exactly one tool.completed or tool.failed before the next
// tool.started. It returns nil or an error listing every violation.
func Validate(timeline []string) error {
	var problems []string
	terminals, open := 0, false
	for i, e := range timeline {
		switch {
		case IsTerminal(e):
			terminals++
			if i != len(timeline)-1 {
				problems = append(problems, fmt.Sprintf("terminal %s at %d is not last", e, i))
			}
		case e == EventToolStarted:
			if open {
				problems = append(problems, fmt.Sprintf("tool.started at %d before the previous call finished", i))
			}
			open = true
		case e == EventToolCompleted || e == EventToolFailed:
			if !open {
				problems = append(problems, fmt.Sprintf("%s at %d without a tool.started", e, i))
			}
			open = false
		}
	}
	if open {
		problems = append(problems, "a tool call never finished")
	}
	if terminals != 1 {
		problems = append(problems, fmt.Sprintf("%d terminal events, want exactly 1", terminals))
	}
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("malformed timeline %v: %s", timeline, strings.Join(problems, "; "))
}

// CheckTimeline fails t unless Validate accepts timeline.
func CheckTimeline(t testing.TB, timeline []string) {
	t.Helper()
	if err := Validate(timeline); err != nil {
		t.Error(err)
	}
}
