// Package ipamdv1 holds the messages of ipamd's CNI-facing API, generated
// from messages.proto. ipamd encodes them in the wire framing (package
// wire), the only protocol its socket serves; the CNI plugin encodes the
// same messages with package msg and links no protobuf runtime.
package ipamdv1
