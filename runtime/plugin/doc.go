// Package plugin is the adapter author's side of the transport between a
// host (ipamd, the conformance runner) and a runtime adapter running as
// its own process: gRPC over hashicorp/go-plugin. It is all an adapter
// binary imports besides package runtime: its main calls Serve with its
// runtime.RuntimeAdapter, and logs through slog (NewLogger).
//
// The host's side, which launches, supervises and talks to adapter
// plugins, is package runtime/plugin/host. It is kept apart, as Nomad
// keeps its plugin contract (plugins/base) apart from its loader, so that
// an adapter binary links none of the supervisor, process or socket
// handling; a test in this package checks that with go list. What both
// sides must agree on (the handshake, the message conversions, the one
// error table) lives once, in runtime/plugin/internal/shared.
//
// What crosses the boundary, and how:
//
//   - The handshake is versioned (ProtocolVersion, go-plugin's
//     VersionedPlugins) and gRPC only; a magic cookie lets an adapter run
//     by hand say it is a plugin (ByHandMessage). With the host's AutoMTLS
//     (on by default) the plugin accepts only the host's one-time
//     certificate, which go-plugin hands it in its environment.
//   - Every call carries the host caller's context: gRPC sends its
//     deadline, and the adapter's context has the same deadline.
//   - Errors keep their message and their meaning: runtime.ErrNotFound,
//     ErrUnavailable, ErrWrongRuntime, ErrInvalidArgument,
//     context.DeadlineExceeded and context.Canceled travel as gRPC codes
//     plus a detail naming every sentinel an error wraps, so errors.Is
//     holds on the host as it did in the plugin.
//   - The adapter logs through slog: Serve installs a handler that writes
//     go-plugin's JSON lines to stderr, at the level the host passes in
//     the environment; the host re-logs each line, level and attributes
//     intact.
//   - No plugin outlives its host: besides what the host does (see
//     runtime/plugin/host), the plugin exits by itself within a second
//     once its parent is gone.
//
// See docs/writing-an-adapter.md for writing an adapter, and
// docs/architecture.md for where this package sits.
package plugin
