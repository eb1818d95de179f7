package core

import (
	"errors"
	"fmt"
)

// Error codes. Seed codes keep their seed spelling; codes the seed lacked
// follow the same style. HTTP mapping lives in the host, in one place.
const (
	CodeModelUnavailable         = "CODING_AGENT_MODEL_UNAVAILABLE"
	CodeEngineUnavailable        = "CODING_AGENT_ENGINE_UNAVAILABLE"
	CodeEngineUnsupportedRuntime = "CODING_AGENT_ENGINE_UNSUPPORTED_RUNTIME"
	CodeSandboxRequired          = "CODING_AGENT_SANDBOX_REQUIRED"
	CodeSandboxUnavailable       = "CODING_AGENT_SANDBOX_UNAVAILABLE"
	CodeRevisionConflict         = "REVISION_CONFLICT"
	CodeRunNotPaused             = "RUN_NOT_PAUSED"
	CodeRunFinished              = "RUN_FINISHED"
	CodeNotFound                 = "NOT_FOUND"
	CodeInvalidRequest           = "INVALID_REQUEST"
	CodeInvalidRunTransition     = "INVALID_RUN_TRANSITION"
	// The Idempotency-Key was used before with a different request.
	CodeIdempotencyKeyReused = "IDEMPOTENCY_KEY_REUSED"

	// A plugin process died while serving the run.
	CodeEngineCrashed   = "ENGINE_CRASHED"
	CodeToolpackCrashed = "TOOLPACK_CRASHED"
	CodeSandboxCrashed  = "SANDBOX_CRASHED"
	// The engine could not confirm a cancel in time: the run fails closed.
	CodeCancelUnconfirmed = "CODING_AGENT_CANCEL_UNCONFIRMED"
	// The engine broke (returned an error, ended its stream oddly).
	CodeEngineError = "ENGINE_ERROR"
	// The sandbox could not be created or snapshotted.
	CodeSandboxError = "SANDBOX_ERROR"
	// The run's files could not be stored as a revision (the store failed).
	CodeApplyFailed = "RESULT_APPLY_FAILED"
	// A run's result breaks the file limits (FileLimits): it is not
	// applied, and the app's draft stays as it was.
	CodeResultTooLarge = "RESULT_TOO_LARGE"
	// An upload, an edit or a new app breaks the file limits.
	CodeFilesTooLarge = "FILES_TOO_LARGE"
	// The host is shutting down and could not finish the run.
	CodeHostShutdown = "HOST_SHUTDOWN"
	// The host that executed the run died and the run had no saved engine
	// state to continue from: the host that took it over failed it.
	CodeHostLost = "HOST_LOST"
	// This host no longer owns the run (its lease lapsed and another host
	// took the run over): it may not write for the run any more.
	CodeLeaseLost = "RUN_LEASE_LOST"
	// The run's owner did not answer a command forwarded to it in time.
	CodeOwnerUnreachable = "RUN_OWNER_UNREACHABLE"
	// The database could not take a write for longer than the host's
	// outage window (connection lost, server restarting, disk full): the
	// request or run failed closed, nothing half-written.
	CodeStoreUnavailable = "STORE_UNAVAILABLE"

	// Tool result codes the host produces itself.
	CodeToolUnknown          = "TOOL_UNKNOWN"
	CodeToolPermissionDenied = "TOOL_PERMISSION_DENIED"
	CodeToolTimeout          = "TOOL_TIMEOUT"
	CodeToolUnavailable      = "TOOL_UNAVAILABLE"
	CodeToolCancelled        = "TOOL_CANCELLED"
)

// Error is a domain failure with a stable code.
type Error struct {
	Code    string
	Message string
	// Field names the request field at fault, when there is one.
	Field string
}

// Error implements error.
func (e *Error) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("%s: %s (field %s)", e.Code, e.Message, e.Field)
	}
	return e.Code + ": " + e.Message
}

// Is matches another *Error with the same code.
func (e *Error) Is(target error) bool {
	var t *Error
	return errors.As(target, &t) && t.Code == e.Code
}

// Errf builds an *Error.
func Errf(code, field, format string, args ...any) *Error {
	return &Error{Code: code, Field: field, Message: fmt.Sprintf(format, args...)}
}

// CodeOf returns the code of the first *Error in err's chain, or "".
func CodeOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}
