package msg

import (
	"encoding/binary"
	"fmt"
	"unicode/utf8"
)

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

// Unmarshal decodes the message.
func (a *Attachment) Unmarshal(b []byte) error {
	*a = Attachment{}
	return eachField(b, func(f field) error {
		switch f.num {
		case 1:
			return f.str(&a.Network)
		case 2:
			return f.str(&a.SandboxID)
		case 3:
			return f.str(&a.IfName)
		}
		return nil
	})
}

// Unmarshal decodes the message.
func (c *IPConfig) Unmarshal(b []byte) error {
	*c = IPConfig{}
	return eachField(b, func(f field) error {
		switch f.num {
		case 1:
			return f.str(&c.Address)
		case 2:
			return f.str(&c.Gateway)
		}
		return nil
	})
}

// Unmarshal decodes the message.
func (r *IPsResponse) Unmarshal(b []byte) error {
	*r = IPsResponse{}
	return eachField(b, func(f field) error {
		if f.num != 1 {
			return nil
		}
		var ip IPConfig
		if err := f.message(ip.Unmarshal); err != nil {
			return err
		}
		r.IPs = append(r.IPs, ip)
		return nil
	})
}

// Unmarshal decodes the message.
func (r *DelResponse) Unmarshal(b []byte) error {
	*r = DelResponse{}
	return eachField(b, func(f field) error {
		if f.num == 1 {
			return f.boolean(&r.Released)
		}
		return nil
	})
}

// Unmarshal decodes the message.
func (r *GCResponse) Unmarshal(b []byte) error {
	*r = GCResponse{}
	return eachField(b, func(f field) error {
		if f.num != 1 {
			return nil
		}
		var a Attachment
		if err := f.message(a.Unmarshal); err != nil {
			return err
		}
		r.Released = append(r.Released, a)
		return nil
	})
}

// Unmarshal decodes the message.
func (r *StatusResponse) Unmarshal(b []byte) error {
	*r = StatusResponse{}
	return eachField(b, func(f field) error {
		switch f.num {
		case 1:
			return f.boolean(&r.Ready)
		case 2:
			return f.str(&r.Message)
		case 3:
			var v uint64
			err := f.uint(&v)
			r.Free = uint32(v) // protobuf truncates a uint32 the same way
			return err
		}
		return nil
	})
}
