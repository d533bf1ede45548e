// Package msg is the CNI plugin's side of ipamd's wire API: the messages of
// ipamd/api/v1/messages.proto as plain Go structs, encoded and decoded in
// protobuf's binary format without the protobuf runtime.
//
// messages.proto is the one definition of the API. protoc generates the
// protobuf types ipamd decodes (package ipamdv1); msggen
// (internal/msggen) generates this package's messages.go from the same
// file's descriptors, so the two cannot drift apart: `make generate` runs
// both, and msggen's test fails when messages.go is stale. Only codec.go,
// the wire format's primitives (varints, keys, length-delimited fields),
// is written by hand.
//
// Why a second generated form rather than the protobuf types everywhere:
// the plugin is exec'd once per ADD and DEL, and the protobuf runtime's
// package initialisation (descriptor registration, reflection, detrand
// hashing the binary at start) plus its 3 MB of code cost more than the
// IPAM call (see the Makefile's build comment and BENCHMARKS.md). The API's
// messages are simple (strings, bools, a uint32, an enum, nested and
// repeated messages), which is all msggen supports; a field of another
// kind fails generation instead of being encoded wrongly. msg_test.go
// proves every message byte for byte against the protobuf types, in both
// directions, and fuzzes the decoders against them.
//
// See docs/architecture.md for where this package sits and the life of an
// ADD, a DEL, a reconcile pass and a restart through the daemon.
package msg

//go:generate go run ./internal/msggen -o messages.go
