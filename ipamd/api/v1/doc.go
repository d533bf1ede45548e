// Package ipamdv1 holds the messages of ipamd's CNI-facing API, generated
// from messages.proto. It depends on protobuf only, so the CNI plugin can
// import it without grpc; the gRPC service is in package ipamdgrpc.
package ipamdv1
