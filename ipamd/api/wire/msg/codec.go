// codec.go: the hand-written protobuf primitives the generated messages
// (messages.go) use.

package msg

import (
	"encoding/binary"
	"errors"
	"fmt"
	"unicode/utf8"
)

// ErrMalformed is wrapped by every decoding error.
var ErrMalformed = errors.New("malformed protobuf message")

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

// field is one decoded field: its number and wire type, and its value as
// a varint or as bytes.
type field struct {
	num      int
	wireType int
	varint   uint64
	bytes    []byte
}

// eachField calls fn for every field of a message, skipping none: fn
// ignores the numbers it does not know, as protobuf does.
func eachField(b []byte, fn func(f field) error) error {
	for len(b) > 0 {
		key, n := binary.Uvarint(b)
		if n <= 0 {
			return fmt.Errorf("%w: bad field key", ErrMalformed)
		}
		b = b[n:]
		f := field{num: int(key >> 3), wireType: int(key & 7)}
		if f.num <= 0 || key>>3 > 1<<29-1 {
			return fmt.Errorf("%w: field number %d", ErrMalformed, key>>3)
		}
		switch f.wireType {
		case wireVarint:
			f.varint, n = binary.Uvarint(b)
			if n <= 0 {
				return fmt.Errorf("%w: field %d: bad varint", ErrMalformed, f.num)
			}
		case wireFixed64, wireFixed32:
			n = 8
			if f.wireType == wireFixed32 {
				n = 4
			}
			if len(b) < n {
				return fmt.Errorf("%w: field %d: truncated", ErrMalformed, f.num)
			}
		case wireBytes:
			size, m := binary.Uvarint(b)
			if m <= 0 || size > uint64(len(b)-m) {
				return fmt.Errorf("%w: field %d: bad length", ErrMalformed, f.num)
			}
			f.bytes, n = b[m:m+int(size)], m+int(size)
		default:
			return fmt.Errorf("%w: field %d: wire type %d", ErrMalformed, f.num, f.wireType)
		}
		b = b[n:]
		if err := fn(f); err != nil {
			return err
		}
	}
	return nil
}

// str returns a string field's value; protobuf requires UTF-8.
func (f field) str(dst *string) error {
	if f.wireType != wireBytes {
		return fmt.Errorf("%w: field %d: wire type %d for a string", ErrMalformed, f.num, f.wireType)
	}
	if !utf8.Valid(f.bytes) {
		return fmt.Errorf("%w: field %d: string is not UTF-8", ErrMalformed, f.num)
	}
	*dst = string(f.bytes)
	return nil
}

func (f field) uint(dst *uint64) error {
	if f.wireType != wireVarint {
		return fmt.Errorf("%w: field %d: wire type %d for a varint", ErrMalformed, f.num, f.wireType)
	}
	*dst = f.varint
	return nil
}

func (f field) boolean(dst *bool) error {
	var v uint64
	err := f.uint(&v)
	*dst = v != 0
	return err
}

func (f field) message(decode func([]byte) error) error {
	if f.wireType != wireBytes {
		return fmt.Errorf("%w: field %d: wire type %d for a message", ErrMalformed, f.num, f.wireType)
	}
	return decode(f.bytes)
}
