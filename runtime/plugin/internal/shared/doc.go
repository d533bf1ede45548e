// Package shared holds what both sides of the adapter transport must agree
// on, each with one owner: the go-plugin handshake and plugin set, the
// conversions between runtime types and adapter.proto's messages (both
// directions), the one table mapping errors to gRPC statuses and back, and
// the names of log levels that cross the boundary.
//
// The adapter author's side (package runtime/plugin: Serve, the gRPC
// server) and the host's side (package runtime/plugin/host: Launch,
// Client, Supervisor) both import it; being internal to runtime/plugin,
// nothing else can, so it adds nothing to the API an adapter author sees.
// The name follows go-plugin's own examples (examples/grpc/shared).
package shared
