// Package msg is the CNI plugin's side of ipamd's wire API: the messages of
// ipamd/api/v1/messages.proto as plain Go structs, encoded and decoded by
// hand in protobuf's binary format.
//
// The plugin is exec'd once per ADD and DEL, and the protobuf runtime's
// package initialisation (descriptor registration, and detrand hashing the
// binary at start) plus its 3 MB of code cost more than the IPAM call. The
// few messages the plugin sends are simple (strings, bools, one uint32,
// nested and repeated messages), so the format is written out here, and
// msg_test.go proves every message byte for byte against the generated
// types, in both directions, and fuzzes the decoders. ipamd itself and Go
// tools keep using the generated types (package ipamdv1, wireproto).
package msg

import (
	"encoding/binary"
	"errors"
)

// ErrMalformed is wrapped by every decoding error.
var ErrMalformed = errors.New("malformed protobuf message")

// Attachment names one attachment: the datastore's key.
type Attachment struct {
	Network, SandboxID, IfName string
}

// PodRef is the pod's identity, from CNI_ARGS.
type PodRef struct {
	Name, Namespace, UID string
}

// AddRequest asks for an address for an attachment.
type AddRequest struct {
	Attachment Attachment
	Netns      string
	Pod        *PodRef
	// Wiring says how the plugin was invoked: main plugin or IPAM only
	// (messages.proto's Wiring enum; zero, unknown, is not sent).
	Wiring Wiring
}

// Wiring is messages.proto's Wiring enum.
type Wiring uint64

// Values of Wiring, as messages.proto numbers them.
const (
	WiringUnknown    Wiring = 0
	WiringMainPlugin Wiring = 1
	WiringIPAMOnly   Wiring = 2
)

// IPConfig is one address ipamd handed out.
type IPConfig struct {
	Address, Gateway string
}

// IPsResponse is AddResponse and CheckResponse: the attachment's addresses.
type IPsResponse struct {
	IPs []IPConfig
}

// AttachmentRequest is DelRequest and CheckRequest.
type AttachmentRequest struct {
	Attachment Attachment
}

// DelResponse says whether ipamd held anything under the attachment.
type DelResponse struct {
	Released bool
}

// GCRequest releases every attachment of Network not in Valid.
type GCRequest struct {
	Network string
	Valid   []Attachment
}

// GCResponse lists what GC released.
type GCResponse struct {
	Released []Attachment
}

// StatusRequest is empty.
type StatusRequest struct{}

// StatusResponse says whether ipamd can hand out addresses.
type StatusResponse struct {
	Ready   bool
	Message string
	Free    uint32
}

// Protobuf wire types.
const (
	wireVarint  = 0
	wireFixed64 = 1
	wireBytes   = 2
	wireFixed32 = 5
)

func appendKey(b []byte, field, wireType int) []byte {
	return binary.AppendUvarint(b, uint64(field)<<3|uint64(wireType))
}

// appendString appends a string field, omitted when empty as proto3 does.
func appendString(b []byte, field int, s string) []byte {
	if s == "" {
		return b
	}
	b = appendKey(b, field, wireBytes)
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendBool(b []byte, field int, v bool) []byte {
	if !v {
		return b
	}
	return append(appendKey(b, field, wireVarint), 1)
}

func appendUint(b []byte, field int, v uint64) []byte {
	if v == 0 {
		return b
	}
	return binary.AppendUvarint(appendKey(b, field, wireVarint), v)
}

// appendMessage appends a nested message field; encode appends its body.
func appendMessage(b []byte, field int, encode func([]byte) []byte) []byte {
	body := encode(nil)
	b = appendKey(b, field, wireBytes)
	b = binary.AppendUvarint(b, uint64(len(body)))
	return append(b, body...)
}

// Marshal encodes the message.
func (a Attachment) Marshal(b []byte) []byte {
	b = appendString(b, 1, a.Network)
	b = appendString(b, 2, a.SandboxID)
	return appendString(b, 3, a.IfName)
}

// Marshal encodes the message.
func (p PodRef) Marshal(b []byte) []byte {
	b = appendString(b, 1, p.Name)
	b = appendString(b, 2, p.Namespace)
	return appendString(b, 3, p.UID)
}

// Marshal encodes the message.
func (r AddRequest) Marshal(b []byte) []byte {
	b = appendMessage(b, 1, r.Attachment.Marshal)
	b = appendString(b, 2, r.Netns)
	if r.Pod != nil {
		b = appendMessage(b, 3, r.Pod.Marshal)
	}
	return appendUint(b, 4, uint64(r.Wiring))
}

// Marshal encodes the message.
func (r AttachmentRequest) Marshal(b []byte) []byte {
	return appendMessage(b, 1, r.Attachment.Marshal)
}

// Marshal encodes the message.
func (r GCRequest) Marshal(b []byte) []byte {
	b = appendString(b, 1, r.Network)
	for _, a := range r.Valid {
		b = appendMessage(b, 2, a.Marshal)
	}
	return b
}

// Marshal encodes the message (it has no fields).
func (StatusRequest) Marshal(b []byte) []byte { return b }

// Marshal encodes the message.
func (c IPConfig) Marshal(b []byte) []byte {
	b = appendString(b, 1, c.Address)
	return appendString(b, 2, c.Gateway)
}

// Marshal encodes the message.
func (r IPsResponse) Marshal(b []byte) []byte {
	for _, ip := range r.IPs {
		b = appendMessage(b, 1, ip.Marshal)
	}
	return b
}

// Marshal encodes the message.
func (r DelResponse) Marshal(b []byte) []byte { return appendBool(b, 1, r.Released) }

// Marshal encodes the message.
func (r GCResponse) Marshal(b []byte) []byte {
	for _, a := range r.Released {
		b = appendMessage(b, 1, a.Marshal)
	}
	return b
}

// Marshal encodes the message.
func (r StatusResponse) Marshal(b []byte) []byte {
	b = appendBool(b, 1, r.Ready)
	b = appendString(b, 2, r.Message)
	return appendUint(b, 3, uint64(r.Free))
}
