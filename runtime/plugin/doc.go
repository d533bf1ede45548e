// Package plugin is the transport between a host (ipamd, the conformance
// runner) and a runtime adapter running as its own process: gRPC over
// hashicorp/go-plugin.
//
// An adapter's main calls Serve with its runtime.RuntimeAdapter. A host
// calls Launch for one plugin process (a *Client), or runs a Supervisor,
// which keeps one plugin running and relaunches it with backoff. Both
// implement runtime.RuntimeAdapter, so the host never sees the transport.
//
// What crosses the boundary, and how:
//
//   - The handshake is versioned (ProtocolVersion, go-plugin's
//     VersionedPlugins) and gRPC only; a magic cookie lets an adapter run
//     by hand say it is a plugin. go-plugin's AutoMTLS is on unless
//     Config.DisableAutoMTLS is set: host and plugin each accept only the
//     other's one-time certificate. It costs 25-35 ms per launch (each
//     side generates a P-521 key), once per adapter launch, not per call.
//   - Every call carries the caller's context: gRPC sends its deadline to
//     the plugin, where the adapter's context has the same deadline.
//   - Errors keep their message and their meaning: runtime.ErrNotFound,
//     ErrUnavailable, ErrWrongRuntime, ErrInvalidArgument,
//     context.DeadlineExceeded and context.Canceled travel as gRPC codes
//     plus a detail naming every sentinel an error wraps, so errors.Is
//     holds on the host as it did in the plugin. A connection that breaks
//     because the plugin died is ErrPluginCrashed, which also wraps
//     runtime.ErrUnavailable: callers treat it as "runtime not readable".
//   - The adapter logs through slog (Serve installs a handler that writes
//     go-plugin's JSON lines to stderr); the host re-logs each line into
//     Config.Logger with its level and attributes.
//   - No plugin outlives its host: Close asks the plugin to stop, kills
//     it (and its process group) if it does not, and reaps it; on Linux
//     the kernel kills the plugin when the host dies (Pdeathsig), and the
//     plugin also exits by itself within a second once its parent is
//     gone. Plugin sockets live under one directory of ours in
//     os.TempDir(), used only when it is this uid's own and private; each
//     launch removes those a dead host left behind.
//   - A binary another uid could replace (it or its directory writable by
//     group or others, or owned by another uid than root's or ours) is
//     never launched (ErrUnsafeBinary): the host runs it with its rights.
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
package plugin
