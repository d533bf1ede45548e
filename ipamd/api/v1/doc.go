// Package ipamdv1 holds the messages of ipamd's CNI-facing API, generated
// by protoc-gen-go from messages.proto, the API's one definition. ipamd
// decodes them from the wire framing (package wire), the only protocol its
// socket serves. The CNI plugin uses package msg, generated from the same
// file by msggen, and links no protobuf runtime.
package ipamdv1
