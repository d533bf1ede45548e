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
	// ErrUnsafeBinary: the binary, or its directory, can be written by
	// someone other than root and this process's uid, who could swap it
	// for a program the host would run with its own rights.
	ErrUnsafeBinary = errors.New("adapter binary is writable by others")
	// ErrPluginCrashed: the connection to the plugin process broke, mostly
	// because the process died, during or before the call. Errors that
	// wrap it also wrap runtime.ErrUnavailable: the runtime could not be
	// read.
	ErrPluginCrashed = errors.New("adapter plugin crashed")
)

// errorKinds is the one table of the sentinels that cross the boundary:
// each with its wire kind and gRPC code, in the order the code is chosen
// when an error matches more than one (the runtime's own meaning first,
// then the context's).
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

// codeError is the sentinel of a gRPC code, for statuses that carry no
// AdapterError detail (an adapter written in another language).
func codeError(code codes.Code) (error, bool) {
	for _, e := range errorKinds {
		if e.code == code {
			return e.sentinel, true
		}
	}
	return nil, false
}

// toStatus is the plugin side of the edge: it turns an adapter's error into
// a gRPC status that keeps the message and names every sentinel it wraps.
func toStatus(err error) error {
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
