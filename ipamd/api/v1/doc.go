// Package ipamdv1 holds the messages of ipamd's CNI-facing API, generated
// from messages.proto. It depends on protobuf only, so the CNI plugin can
// import it without grpc; ipamd serves them over the wire framing alone.
package ipamdv1
