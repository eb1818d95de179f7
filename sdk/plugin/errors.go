package plugin

import (
	"errors"
	"fmt"
)

// Error codes that plugins return through Error. They travel as the reason of
// a gRPC ErrorInfo detail so that plugins in any language can produce them.
const (
	// CodeNotFound: the sandbox, run, file or folder does not exist.
	CodeNotFound = "NOT_FOUND"
	// CodePathDenied: the path is absolute, climbs out with "..", or resolves
	// outside the workspace through a symlink.
	CodePathDenied = "WORKSPACE_PATH_DENIED"
	// CodeInvalidArgument: the request is malformed.
	CodeInvalidArgument = "INVALID_ARGUMENT"
	// CodeIsDirectory: a file operation named a folder.
	CodeIsDirectory = "IS_DIRECTORY"
	// CodeAlreadyExists: the target exists.
	CodeAlreadyExists = "ALREADY_EXISTS"
	// CodeTooLarge: a size limit was exceeded.
	CodeTooLarge = "TOO_LARGE"
	// CodeNotConfigured: a call came before Configure.
	CodeNotConfigured = "NOT_CONFIGURED"
	// CodeUnavailable: the plugin cannot serve right now (see Health).
	CodeUnavailable = "UNAVAILABLE"
	// CodeUnsupported: the plugin does not offer this operation.
	CodeUnsupported = "UNSUPPORTED"
	// CodePermissionDenied: the caller holds no grant for this (a direct
	// workspace call without a valid token, say).
	CodePermissionDenied = "PERMISSION_DENIED"
	// CodeInternal: the plugin failed in a way it did not expect.
	CodeInternal = "INTERNAL"
)

// Error is a failure with a stable code that survives the trip across the
// plugin boundary. Compare with errors.Is against a code-only Error, or use
// HasCode.
type Error struct {
	Code    string
	Message string
	// Field names the input at fault, when there is one (a path, say).
	Field string
}

// Error implements error.
func (e *Error) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("%s: %s (%s)", e.Code, e.Message, e.Field)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

// Is reports whether target is an *Error with the same code.
func (e *Error) Is(target error) bool {
	var t *Error
	return errors.As(target, &t) && t.Code == e.Code
}

// Errorf builds an *Error with a formatted message.
func Errorf(code, field, format string, args ...any) *Error {
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

// HasCode reports whether err carries the given code.
func HasCode(err error, code string) bool { return err != nil && CodeOf(err) == code }
