// Package host is the host's side of the transport to runtime adapter
// plugins: what ipamd and the conformance runner use to launch, supervise
// and call an adapter binary over gRPC (hashicorp/go-plugin). An adapter
// binary never imports it: the adapter author's side is package
// runtime/plugin (Serve), and the two share only what
// runtime/plugin/internal/shared holds (the handshake, the message
// conversions, the one error table).
//
// A host calls Launch for one plugin process (a *Client), or runs a
// Supervisor, which keeps one plugin running and relaunches it with
// backoff (Supervision). Both implement runtime.RuntimeAdapter, so the
// host never sees the transport.
//
//   - A launch checks the binary first: found and executable
//     (ErrBinaryNotFound, ErrNotExecutable), never one another uid could
//     replace (it or its directory writable by group or others, or owned
//     by another uid than root's or ours: ErrUnsafeBinary), since the host
//     runs it with its rights, and its SHA-256 when Config.SHA256 pins it
//     (ErrChecksumMismatch). A plugin of another protocol version is
//     refused (ErrIncompatibleVersion).
//   - go-plugin's AutoMTLS is on unless Config.DisableAutoMTLS is set:
//     host and plugin each accept only the other's one-time certificate.
//     It costs 25-35 ms per launch (each side generates a P-521 key), once
//     per adapter launch, not per call.
//   - Every call carries the caller's context across the boundary. An
//     adapter's error comes back with its message and sentinels; a
//     connection that breaks because the plugin died is ErrPluginCrashed,
//     which also wraps runtime.ErrUnavailable: callers treat it as
//     "runtime not readable".
//   - The plugin's logs (JSON lines on its stderr) are re-logged into
//     Config.Logger with their level and attributes, and the plugin is
//     told the logger's level so it does not format lines that would be
//     dropped.
//   - No plugin outlives its host: Close asks the plugin to stop, kills
//     it (and its process group) if it does not, and reaps it; on Linux
//     the kernel kills the plugin when the host dies (Pdeathsig). Plugin
//     sockets live under one directory of ours in os.TempDir(), used only
//     when it is this uid's own and private (ErrUnsafeSocketDir); each
//     launch removes those a dead host left behind.
//
// Where this goes another way than go-plugin's usual pattern. There is no
// global registry of clients (go-plugin's Managed and CleanupClients); each
// Client and Supervisor is closed by its owner. Ping is our own RPC
// rather than go-plugin's health check, because go-plugin's takes no
// context. Launch runs the plugin process itself (go-plugin's RunnerFunc)
// to bind the start to ctx, to learn the moment the process exits, and to
// quote the plugin's stderr in launch errors; the process gets go-plugin's
// environment, AutoMTLS's certificate included.
//
// See docs/architecture.md for where this package sits and the life of an
// ADD, a DEL, a reconcile pass and a restart through it.
package host
