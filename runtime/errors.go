package runtime

import "errors"

// Errors that callers branch on. Adapters wrap them with context
// (fmt.Errorf("get sandbox %s: %w", id, runtime.ErrNotFound)); the plugin
// transport carries them across the process boundary as gRPC status codes.
var (
	// ErrNotFound: the runtime does not have the sandbox (it was removed).
	ErrNotFound = errors.New("sandbox not found")
	// ErrUnavailable: the runtime could not be reached or read. A listing
	// that fails this way must never be mistaken for "no pods".
	ErrUnavailable = errors.New("runtime unavailable")
	// ErrWrongRuntime: the endpoint serves another runtime than the one
	// the adapter was built for.
	ErrWrongRuntime = errors.New("endpoint serves another runtime")
	// ErrInvalidArgument: the request itself is malformed (an empty ID).
	ErrInvalidArgument = errors.New("invalid argument")
)
