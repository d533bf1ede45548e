// Package wire is the framing of ipamd's CNI-facing API: the protobuf
// messages of package ipamdv1, one request-response per frame pair over
// ipamd's unix socket, the only protocol that socket serves.
//
// It exists because the CNI plugin is exec'd once per ADD and DEL: grpc's
// package initialisation and HTTP/2 connection set-up, and even the
// protobuf runtime's, cost more than the whole IPAM decision. So Client
// deals in encoded bytes: ipamd and Go tools encode with the generated
// types (wireproto.Call), the plugin with package msg, and the plugin links
// no protobuf runtime at all.
//
// Request:  Magic (4 bytes) | Version (1) | Method (1) | length (uint32 BE) | payload
// Response: Code (1)                                    | length (uint32 BE) | payload
//
// The request payload is the method's protobuf request. The response payload
// is the protobuf response when Code is OK, and a UTF-8 error message
// otherwise. Codes keep gRPC's status code numbers and names, so errors
// read the same as any protobuf API's; package apierr maps errors onto them
// and them onto CNI codes. Nothing on the socket speaks gRPC.
//
// See docs/architecture.md for where this package sits and the life of an
// ADD, a DEL, a reconcile pass and a restart through it.
package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Magic opens every request; it can never be the start of an HTTP/2 preface.
const Magic = "SBIW"

// Version is the framing version a request carries.
const Version = 1

// MaxPayload bounds a frame so a confused peer cannot make the other side
// allocate without limit. A GC request listing 10,000 attachments fits.
const MaxPayload = 4 << 20

// Method names the API call a request frame carries.
type Method uint8

// The methods, numbered as in the IPAM service.
const (
	MethodAdd Method = iota + 1
	MethodDel
	MethodCheck
	MethodGC
	MethodStatus
)

func (m Method) String() string {
	switch m {
	case MethodAdd:
		return "Add"
	case MethodDel:
		return "Del"
	case MethodCheck:
		return "Check"
	case MethodGC:
		return "GC"
	case MethodStatus:
		return "Status"
	default:
		return fmt.Sprintf("Method(%d)", uint8(m))
	}
}

// Code is a status code, carried in one byte; the numbers are gRPC's.
type Code uint8

// The codes ipamd returns; the numbers are gRPC's.
const (
	CodeOK                 Code = 0
	CodeCanceled           Code = 1
	CodeUnknown            Code = 2
	CodeInvalidArgument    Code = 3
	CodeDeadlineExceeded   Code = 4
	CodeNotFound           Code = 5
	CodeResourceExhausted  Code = 8
	CodeFailedPrecondition Code = 9
	CodeUnimplemented      Code = 12
	CodeInternal           Code = 13
	CodeUnavailable        Code = 14
)

// codeNames is an array, not a map, so the plugin pays nothing for it at
// start-up.
var codeNames = [...]string{
	CodeOK: "OK", CodeCanceled: "Canceled", CodeUnknown: "Unknown", CodeInvalidArgument: "InvalidArgument",
	CodeDeadlineExceeded: "DeadlineExceeded", CodeNotFound: "NotFound", CodeResourceExhausted: "ResourceExhausted",
	CodeFailedPrecondition: "FailedPrecondition", CodeUnimplemented: "Unimplemented", CodeInternal: "Internal",
	CodeUnavailable: "Unavailable",
}

// String is the code's gRPC name (ResourceExhausted), the label value the
// call metrics carry.
func (c Code) String() string {
	if int(c) < len(codeNames) && codeNames[c] != "" {
		return codeNames[c]
	}
	return fmt.Sprintf("Code(%d)", uint8(c))
}

// Error is a non-OK response.
type Error struct {
	Code    Code
	Message string
}

func (e *Error) Error() string {
	return fmt.Sprintf("ipamd: %s (code %d)", e.Message, e.Code)
}

// ErrBadFrame reports a frame that does not follow this package's format.
var ErrBadFrame = errors.New("malformed wire frame")

const requestHeaderLen = len(Magic) + 1 + 1 + 4

// WriteRequest writes one request frame.
func WriteRequest(w io.Writer, m Method, payload []byte) error {
	if len(payload) > MaxPayload {
		return fmt.Errorf("%w: payload of %d bytes exceeds %d", ErrBadFrame, len(payload), MaxPayload)
	}
	buf := make([]byte, requestHeaderLen, requestHeaderLen+len(payload))
	copy(buf, Magic)
	buf[4] = Version
	buf[5] = byte(m)
	binary.BigEndian.PutUint32(buf[6:], uint32(len(payload)))
	_, err := w.Write(append(buf, payload...))
	return err
}

// ReadRequest reads one request frame. It returns io.EOF when the peer
// closed the connection cleanly between frames.
func ReadRequest(r io.Reader) (Method, []byte, error) {
	var hdr [requestHeaderLen]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return 0, nil, fmt.Errorf("%w: truncated header", ErrBadFrame)
		}
		return 0, nil, err
	}
	if string(hdr[:4]) != Magic {
		return 0, nil, fmt.Errorf("%w: bad magic %q", ErrBadFrame, hdr[:4])
	}
	if hdr[4] != Version {
		return 0, nil, fmt.Errorf("%w: framing version %d, want %d", ErrBadFrame, hdr[4], Version)
	}
	payload, err := readPayload(r, binary.BigEndian.Uint32(hdr[6:]))
	return Method(hdr[5]), payload, err
}

// WriteResponse writes one response frame.
func WriteResponse(w io.Writer, code Code, payload []byte) error {
	if len(payload) > MaxPayload {
		return fmt.Errorf("%w: payload of %d bytes exceeds %d", ErrBadFrame, len(payload), MaxPayload)
	}
	buf := make([]byte, 5, 5+len(payload))
	buf[0] = byte(code)
	binary.BigEndian.PutUint32(buf[1:], uint32(len(payload)))
	_, err := w.Write(append(buf, payload...))
	return err
}

// ReadResponse reads one response frame.
func ReadResponse(r io.Reader) (Code, []byte, error) {
	var hdr [5]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, nil, fmt.Errorf("read response header: %w", err)
	}
	payload, err := readPayload(r, binary.BigEndian.Uint32(hdr[1:]))
	return Code(hdr[0]), payload, err
}

func readPayload(r io.Reader, n uint32) ([]byte, error) {
	if n > MaxPayload {
		return nil, fmt.Errorf("%w: payload of %d bytes exceeds %d", ErrBadFrame, n, MaxPayload)
	}
	payload := make([]byte, n)
	if _, err := io.ReadFull(r, payload); err != nil {
		return nil, fmt.Errorf("%w: truncated payload: %v", ErrBadFrame, err)
	}
	return payload, nil
}
