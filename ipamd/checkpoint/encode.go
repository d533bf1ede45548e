package checkpoint

import (
	"net/netip"
	"strconv"
	"time"
	"unicode/utf8"
)

// The body is JSON that encoding/json decodes into File, but it is written
// by hand: encoding/json's reflection made a 10,000-assignment checkpoint
// cost several times more CPU than the fsync it precedes, on the CNI path.
// appendFile must stay in step with File's json tags; the round-trip test
// and FuzzDecodeCheckpoint check that it does.

func appendFile(b []byte, f File) []byte {
	b = append(b, `{"savedAt":`...)
	b = appendTime(b, f.SavedAt)
	if f.Unproven {
		b = append(b, `,"unproven":true`...)
	}
	if len(f.Cursors) > 0 {
		b = append(b, `,"cursors":`...)
		b = appendAddrs(b, f.Cursors)
	}
	b = append(b, `,"addresses":[`...)
	for i, a := range f.Addresses {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendAddress(b, a)
	}
	b = append(b, `],"assignments":[`...)
	for i, a := range f.Assignments {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendAssignment(b, a)
	}
	b = append(b, ']')
	if f.Node != nil {
		b = append(b, `,"node":`...)
		b = appendNode(b, *f.Node)
	}
	if len(f.Deleted) > 0 {
		b = append(b, `,"deleted":[`...)
		for i, d := range f.Deleted {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendDeleted(b, d)
		}
		b = append(b, ']')
	}
	return append(b, '}')
}

func appendDeleted(b []byte, d Deleted) []byte {
	b = append(b, `{"network":`...)
	b = appendString(b, d.Network)
	b = append(b, `,"sandboxID":`...)
	b = appendString(b, d.SandboxID)
	b = append(b, `,"ifName":`...)
	b = appendString(b, d.IfName)
	b = append(b, `,"at":`...)
	b = appendTime(b, d.At)
	return append(b, '}')
}

func appendNode(b []byte, n NodeRanges) []byte {
	b = append(b, `{"name":`...)
	b = appendString(b, n.Name)
	b = append(b, `,"uid":`...)
	b = appendString(b, n.UID)
	b = append(b, `,"podCIDRs":`...)
	b = appendPrefixes(b, n.PodCIDRs)
	if len(n.Retiring) > 0 {
		b = append(b, `,"retiring":`...)
		b = appendPrefixes(b, n.Retiring)
	}
	return append(b, '}')
}

// appendPrefixes writes a JSON array of prefixes; nil is null.
func appendPrefixes(b []byte, ps []netip.Prefix) []byte {
	if ps == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, p := range ps {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		if p.IsValid() {
			b = p.AppendTo(b)
		}
		b = append(b, '"')
	}
	return append(b, ']')
}

func appendAddress(b []byte, a Address) []byte {
	b = append(b, `{"ip":`...)
	b = appendAddr(b, a.IP)
	if a.Subnet.IsValid() {
		b = append(b, `,"subnet":"`...)
		b = a.Subnet.AppendTo(b)
		b = append(b, '"')
	}
	if a.Gateway.IsValid() {
		b = append(b, `,"gw":`...)
		b = appendAddr(b, a.Gateway)
	}
	if a.Group != "" {
		b = append(b, `,"group":`...)
		b = appendString(b, a.Group)
	}
	if a.Quarantined {
		b = append(b, `,"quarantined":true`...)
	}
	if !a.ReleasedAt.IsZero() {
		b = append(b, `,"releasedAt":`...)
		b = appendTime(b, a.ReleasedAt)
	}
	return append(b, '}')
}

func appendAssignment(b []byte, a Assignment) []byte {
	b = append(b, `{"network":`...)
	b = appendString(b, a.Network)
	b = append(b, `,"sandboxID":`...)
	b = appendString(b, a.SandboxID)
	b = append(b, `,"ifName":`...)
	b = appendString(b, a.IfName)
	if a.PodName != "" {
		b = append(b, `,"pod":`...)
		b = appendString(b, a.PodName)
	}
	if a.Namespace != "" {
		b = append(b, `,"ns":`...)
		b = appendString(b, a.Namespace)
	}
	if a.UID != "" {
		b = append(b, `,"uid":`...)
		b = appendString(b, a.UID)
	}
	b = append(b, `,"ips":`...)
	b = appendAddrs(b, a.IPs)
	b = append(b, `,"at":`...)
	b = appendTime(b, a.AssignedAt)
	if !a.ListedAt.IsZero() {
		b = append(b, `,"listedAt":`...)
		b = appendTime(b, a.ListedAt)
	}
	if a.Wiring != "" {
		b = append(b, `,"wiring":`...)
		b = appendString(b, a.Wiring)
	}
	if a.NetNS != "" {
		b = append(b, `,"netns":`...)
		b = appendString(b, a.NetNS)
	}
	if a.NetNSDev != 0 {
		b = append(b, `,"netnsDev":`...)
		b = strconv.AppendUint(b, a.NetNSDev, 10)
	}
	if a.NetNSIno != 0 {
		b = append(b, `,"netnsIno":`...)
		b = strconv.AppendUint(b, a.NetNSIno, 10)
	}
	return append(b, '}')
}

// appendAddr writes an address as a JSON string; the zero Addr is "" as
// netip.Addr's MarshalText writes it.
func appendAddr(b []byte, ip netip.Addr) []byte {
	b = append(b, '"')
	if ip.IsValid() {
		b = ip.AppendTo(b)
	}
	return append(b, '"')
}

// appendAddrs writes a JSON array of addresses; nil is null, as
// encoding/json writes a nil slice.
func appendAddrs(b []byte, ips []netip.Addr) []byte {
	if ips == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, ip := range ips {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendAddr(b, ip)
	}
	return append(b, ']')
}

// appendTime writes RFC 3339 with nanoseconds, as time.Time's MarshalJSON.
func appendTime(b []byte, t time.Time) []byte {
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"')
}

const hexDigits = "0123456789abcdef"

// appendString writes s as a JSON string: quotes, backslashes and control
// characters escaped, invalid UTF-8 replaced by U+FFFD as encoding/json
// does.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c < 0x20:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, `\ufffd`...)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}

// appendHeader writes the header line for body.
func appendHeader(b []byte, sum string, bodyLen int) []byte {
	b = append(b, magic...)
	b = append(b, " v"...)
	b = strconv.AppendInt(b, Version, 10)
	b = append(b, " sha256="...)
	b = append(b, sum...)
	b = append(b, " len="...)
	b = strconv.AppendInt(b, int64(bodyLen), 10)
	return append(b, '\n')
}
