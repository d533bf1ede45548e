package host

import "errors"

// Errors from launching and talking to an adapter plugin, the host's own:
// an adapter returns runtime's sentinels, which cross the boundary through
// the error table in runtime/plugin/internal/shared. Launch wraps these
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
