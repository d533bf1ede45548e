package plugin

import (
	"context"
	"errors"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sandboxipam/sandboxipam/runtime"
	adapterpb "github.com/sandboxipam/sandboxipam/runtime/plugin/proto"
)

// Errors from launching and talking to an adapter plugin. Launch wraps them
// with the binary's path and the cause.
var (
	// ErrBinaryNotFound: no file at Config.Path.
	ErrBinaryNotFound = errors.New("adapter binary not found")
	// ErrNotExecutable: the file exists but cannot be executed (no
	// execute permission, a directory, or not an executable format).
	ErrNotExecutable = errors.New("adapter binary is not executable")
	// ErrNotPlugin: the binary ran but did not complete the go-plugin
	// handshake: it printed something else on stdout, exited, or stayed
	// silent until the start timeout.
	ErrNotPlugin = errors.New("not a sandboxipam adapter plugin")
	// ErrIncompatibleVersion: the binary is a plugin but serves another
	// adapter protocol version (or another go-plugin core version or
	// transport) than this host.
	ErrIncompatibleVersion = errors.New("incompatible adapter protocol version")
	// ErrChecksumMismatch: the binary's SHA-256 differs from Config.SHA256.
	ErrChecksumMismatch = errors.New("adapter binary checksum mismatch")
	// ErrPluginCrashed: the connection to the plugin process broke, mostly
	// because the process died, during or before the call. Errors that
	// wrap it also wrap runtime.ErrUnavailable: the runtime could not be
	// read.
	ErrPluginCrashed = errors.New("adapter plugin crashed")
)

// errorKinds lists the sentinels that cross the boundary, in the order the
// gRPC code is chosen when an error matches more than one: the runtime's
// own meaning first, then the context's.
var errorKinds = [...]adapterpb.ErrorKind{
	adapterpb.ErrorKind_ERROR_KIND_NOT_FOUND,
	adapterpb.ErrorKind_ERROR_KIND_UNAVAILABLE,
	adapterpb.ErrorKind_ERROR_KIND_WRONG_RUNTIME,
	adapterpb.ErrorKind_ERROR_KIND_INVALID_ARGUMENT,
	adapterpb.ErrorKind_ERROR_KIND_DEADLINE_EXCEEDED,
	adapterpb.ErrorKind_ERROR_KIND_CANCELED,
}

func kindError(kind adapterpb.ErrorKind) error {
	switch kind {
	case adapterpb.ErrorKind_ERROR_KIND_NOT_FOUND:
		return runtime.ErrNotFound
	case adapterpb.ErrorKind_ERROR_KIND_UNAVAILABLE:
		return runtime.ErrUnavailable
	case adapterpb.ErrorKind_ERROR_KIND_WRONG_RUNTIME:
		return runtime.ErrWrongRuntime
	case adapterpb.ErrorKind_ERROR_KIND_INVALID_ARGUMENT:
		return runtime.ErrInvalidArgument
	case adapterpb.ErrorKind_ERROR_KIND_DEADLINE_EXCEEDED:
		return context.DeadlineExceeded
	case adapterpb.ErrorKind_ERROR_KIND_CANCELED:
		return context.Canceled
	default:
		return nil
	}
}

func kindCode(kind adapterpb.ErrorKind) codes.Code {
	switch kind {
	case adapterpb.ErrorKind_ERROR_KIND_NOT_FOUND:
		return codes.NotFound
	case adapterpb.ErrorKind_ERROR_KIND_UNAVAILABLE:
		return codes.Unavailable
	case adapterpb.ErrorKind_ERROR_KIND_WRONG_RUNTIME:
		return codes.FailedPrecondition
	case adapterpb.ErrorKind_ERROR_KIND_INVALID_ARGUMENT:
		return codes.InvalidArgument
	case adapterpb.ErrorKind_ERROR_KIND_DEADLINE_EXCEEDED:
		return codes.DeadlineExceeded
	case adapterpb.ErrorKind_ERROR_KIND_CANCELED:
		return codes.Canceled
	default:
		return codes.Unknown
	}
}

// codeKind is kindCode's inverse, for statuses that carry no AdapterError
// detail (an adapter written in another language).
func codeKind(code codes.Code) (adapterpb.ErrorKind, bool) {
	for _, kind := range errorKinds {
		if kindCode(kind) == code {
			return kind, true
		}
	}
	return adapterpb.ErrorKind_ERROR_KIND_UNSPECIFIED, false
}

// toStatus is the plugin side of the edge: it turns an adapter's error into
// a gRPC status that keeps the message and names every sentinel it wraps.
func toStatus(err error) error {
	var kinds []adapterpb.ErrorKind
	for _, kind := range errorKinds {
		if errors.Is(err, kindError(kind)) {
			kinds = append(kinds, kind)
		}
	}
	code := codes.Unknown
	if len(kinds) > 0 {
		code = kindCode(kinds[0])
	}
	st := status.New(code, err.Error())
	if detailed, detailErr := st.WithDetails(&adapterpb.AdapterError{Kinds: kinds}); detailErr == nil {
		st = detailed
	}
	return st.Err()
}

// adapterKinds returns the sentinels an adapter's status names, and false
// when the status carries no AdapterError: it came from the transport.
func adapterKinds(st *status.Status) ([]error, bool) {
	for _, detail := range st.Details() {
		if adapterErr, ok := detail.(*adapterpb.AdapterError); ok {
			sentinels := make([]error, 0, len(adapterErr.GetKinds()))
			for _, kind := range adapterErr.GetKinds() {
				if sentinel := kindError(kind); sentinel != nil {
					sentinels = append(sentinels, sentinel)
				}
			}
			return sentinels, true
		}
	}
	return nil, false
}

// remoteError is the host side's copy of an adapter's error: the same
// message, and errors.Is matches the same sentinels.
type remoteError struct {
	msg       string
	sentinels []error
}

func (e *remoteError) Error() string   { return e.msg }
func (e *remoteError) Unwrap() []error { return e.sentinels }
