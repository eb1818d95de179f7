// Package rpcerr carries plugin.Error across gRPC as a status with an
// ErrorInfo detail, and turns it back into a plugin.Error on the other side.
package rpcerr

import (
	"context"
	"errors"

	"github.com/agenthost/agenthost/sdk/plugin"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// domain tags ErrorInfo details that carry an agenthost code.
const domain = "agenthost"

var grpcCodes = map[string]codes.Code{
	plugin.CodeNotFound:         codes.NotFound,
	plugin.CodePathDenied:       codes.PermissionDenied,
	plugin.CodeInvalidArgument:  codes.InvalidArgument,
	plugin.CodeIsDirectory:      codes.FailedPrecondition,
	plugin.CodeAlreadyExists:    codes.AlreadyExists,
	plugin.CodeTooLarge:         codes.ResourceExhausted,
	plugin.CodeNotConfigured:    codes.FailedPrecondition,
	plugin.CodeUnavailable:      codes.Unavailable,
	plugin.CodeUnsupported:      codes.Unimplemented,
	plugin.CodePermissionDenied: codes.PermissionDenied,
}

// ToStatus converts err for returning from a gRPC handler. Context errors keep
// their gRPC meaning; a plugin.Error keeps its code; anything else becomes
// Internal with its message.
func ToStatus(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	switch {
	case errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, err.Error())
	case errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.DeadlineExceeded, err.Error())
	}
	var pe *plugin.Error
	if !errors.As(err, &pe) {
		return status.Error(codes.Internal, err.Error())
	}
	c, ok := grpcCodes[pe.Code]
	if !ok {
		c = codes.Unknown
	}
	st := status.New(c, pe.Message)
	info := &errdetails.ErrorInfo{Reason: pe.Code, Domain: domain}
	if pe.Field != "" {
		info.Metadata = map[string]string{"field": pe.Field}
	}
	if withDetails, derr := st.WithDetails(info); derr == nil {
		st = withDetails
	}
	return st.Err()
}

// FromStatus converts an error returned by a gRPC call. A status carrying an
// agenthost ErrorInfo becomes a *plugin.Error; cancellation becomes the
// context error so callers can use errors.Is(err, context.Canceled); anything
// else (a dead plugin, a broken connection) is returned as is: a transport
// error.
func FromStatus(err error) error {
	if err == nil {
		return nil
	}
	st, ok := status.FromError(err)
	if !ok {
		return err
	}
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok && info.Domain == domain {
			return &plugin.Error{Code: info.Reason, Message: st.Message(), Field: info.Metadata["field"]}
		}
	}
	switch st.Code() {
	case codes.Canceled:
		return context.Canceled
	case codes.DeadlineExceeded:
		return context.DeadlineExceeded
	}
	return err
}

// IsTransport reports whether err means the other side is gone or unreachable
// rather than that it answered with a failure.
func IsTransport(err error) bool {
	st, ok := status.FromError(err)
	if !ok {
		return false
	}
	return st.Code() == codes.Unavailable && len(st.Details()) == 0
}
