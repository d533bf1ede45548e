package shared

import (
	"context"
	"errors"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sandboxipam/sandboxipam/runtime"
	adapterpb "github.com/sandboxipam/sandboxipam/runtime/plugin/proto"
)

// errorKinds is the one table of the sentinels that cross the boundary:
// each with its wire kind and gRPC code, in the order the code is chosen
// when an error matches more than one (the runtime's own meaning first,
// then the context's). ToStatus reads it on the plugin side, AdapterError
// and CodeError on the host side.
var errorKinds = [...]struct {
	kind     adapterpb.ErrorKind
	sentinel error
	code     codes.Code
}{
	{adapterpb.ErrorKind_ERROR_KIND_NOT_FOUND, runtime.ErrNotFound, codes.NotFound},
	{adapterpb.ErrorKind_ERROR_KIND_UNAVAILABLE, runtime.ErrUnavailable, codes.Unavailable},
	{adapterpb.ErrorKind_ERROR_KIND_WRONG_RUNTIME, runtime.ErrWrongRuntime, codes.FailedPrecondition},
	{adapterpb.ErrorKind_ERROR_KIND_INVALID_ARGUMENT, runtime.ErrInvalidArgument, codes.InvalidArgument},
	{adapterpb.ErrorKind_ERROR_KIND_DEADLINE_EXCEEDED, context.DeadlineExceeded, codes.DeadlineExceeded},
	{adapterpb.ErrorKind_ERROR_KIND_CANCELED, context.Canceled, codes.Canceled},
}

// kindError is the sentinel of a wire kind, nil for an unknown kind.
func kindError(kind adapterpb.ErrorKind) error {
	for _, e := range errorKinds {
		if e.kind == kind {
			return e.sentinel
		}
	}
	return nil
}

// ToStatus is the plugin side of the edge: it turns an adapter's error into
// a gRPC status that keeps the message and names every sentinel it wraps.
func ToStatus(err error) error {
	var kinds []adapterpb.ErrorKind
	code := codes.Unknown
	for _, e := range errorKinds {
		if errors.Is(err, e.sentinel) {
			if kinds == nil {
				code = e.code
			}
			kinds = append(kinds, e.kind)
		}
	}
	st := status.New(code, err.Error())
	if detailed, detailErr := st.WithDetails(&adapterpb.AdapterError{Kinds: kinds}); detailErr == nil {
		st = detailed
	}
	return st.Err()
}

// AdapterError is the host side of the edge: the adapter's error a status
// carries, with the sentinels its AdapterError detail names; false when
// the status has no such detail (it came from the transport).
func AdapterError(st *status.Status) (*RemoteError, bool) {
	for _, detail := range st.Details() {
		if adapterErr, ok := detail.(*adapterpb.AdapterError); ok {
			sentinels := make([]error, 0, len(adapterErr.GetKinds()))
			for _, kind := range adapterErr.GetKinds() {
				if sentinel := kindError(kind); sentinel != nil {
					sentinels = append(sentinels, sentinel)
				}
			}
			return &RemoteError{msg: st.Message(), sentinels: sentinels}, true
		}
	}
	return nil, false
}

// CodeError maps a status without an AdapterError detail (from an adapter
// written in another language) by its code alone; false when the code
// means none of the sentinels.
func CodeError(st *status.Status) (*RemoteError, bool) {
	for _, e := range errorKinds {
		if e.code == st.Code() {
			return &RemoteError{msg: st.Message(), sentinels: []error{e.sentinel}}, true
		}
	}
	return nil, false
}

// RemoteError is the host side's copy of an adapter's error: the same
// message, and errors.Is matches the same sentinels.
type RemoteError struct {
	msg       string
	sentinels []error
}

func (e *RemoteError) Error() string   { return e.msg }
func (e *RemoteError) Unwrap() []error { return e.sentinels }
