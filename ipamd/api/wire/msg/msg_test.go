package msg

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	ipamdv1 "github.com/sandboxipam/sandboxipam/ipamd/api/v1"
)

const sandbox = "c32c237fb5293478da938e388f6e22486790facba0d178ff24271829865976cf"

type lean interface {
	Marshal([]byte) []byte
	Unmarshal([]byte) error
}

// leanTypes names a fresh value of every generated message.
var leanTypes = map[protoreflect.Name]func() lean{
	"Attachment": func() lean { return &Attachment{} }, "PodRef": func() lean { return &PodRef{} },
	"AddRequest": func() lean { return &AddRequest{} }, "IPConfig": func() lean { return &IPConfig{} },
	"AddResponse": func() lean { return &AddResponse{} }, "DelRequest": func() lean { return &DelRequest{} },
	"DelResponse": func() lean { return &DelResponse{} }, "CheckRequest": func() lean { return &CheckRequest{} },
	"CheckResponse": func() lean { return &CheckResponse{} }, "GCRequest": func() lean { return &GCRequest{} },
	"GCResponse": func() lean { return &GCResponse{} }, "StatusRequest": func() lean { return &StatusRequest{} },
	"StatusResponse": func() lean { return &StatusResponse{} },
}

func messages(t testing.TB) []protoreflect.MessageDescriptor {
	t.Helper()
	msgs := ipamdv1.File_ipamd_api_v1_messages_proto.Messages()
	out := make([]protoreflect.MessageDescriptor, msgs.Len())
	for i := range out {
		out[i] = msgs.Get(i)
		if leanTypes[out[i].Name()] == nil {
			t.Fatalf("messages.proto has %s, which this test does not know", out[i].Name())
		}
	}
	if len(out) != len(leanTypes) {
		t.Fatalf("messages.proto has %d messages, this test knows %d", len(out), len(leanTypes))
	}
	return out
}

func marshalPB(t testing.TB, m proto.Message) []byte {
	t.Helper()
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// fill sets every field of m: multi-byte strings with long lengths, true,
// 70000, the last enum value, nested messages, two list elements.
func fill(m protoreflect.Message, depth int) {
	fields := m.Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		switch {
		case fd.IsList():
			l := m.Mutable(fd).List()
			for range 2 {
				e := l.NewElement()
				fill(e.Message(), depth+1)
				l.Append(e)
			}
		case fd.Kind() == protoreflect.MessageKind:
			fill(m.Mutable(fd).Message(), depth+1)
		case fd.Kind() == protoreflect.StringKind:
			m.Set(fd, protoreflect.ValueOfString(fmt.Sprintf("%s-%d-%s", fd.Name(), depth, strings.Repeat("é", 100))))
		case fd.Kind() == protoreflect.BoolKind:
			m.Set(fd, protoreflect.ValueOfBool(true))
		case fd.Kind() == protoreflect.Uint32Kind:
			m.Set(fd, protoreflect.ValueOfUint32(70000))
		case fd.Kind() == protoreflect.EnumKind:
			vals := fd.Enum().Values()
			m.Set(fd, protoreflect.ValueOfEnum(vals.Get(vals.Len()-1).Number()))
		}
	}
}

// equal compares a generated lean struct with a protobuf message, field by
// field in declaration order (msggen keeps the order).
func equal(v reflect.Value, m protoreflect.Message) error {
	if v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	fields := m.Descriptor().Fields()
	for i := range fields.Len() {
		fd, lv := fields.Get(i), v.Field(i)
		if err := equalField(lv, m, fd); err != nil {
			return fmt.Errorf("%s.%s: %w", m.Descriptor().Name(), fd.Name(), err)
		}
	}
	return nil
}

func equalField(lv reflect.Value, m protoreflect.Message, fd protoreflect.FieldDescriptor) error {
	pv := m.Get(fd)
	switch {
	case fd.IsList():
		if lv.Len() != pv.List().Len() {
			return fmt.Errorf("%d elements, protobuf %d", lv.Len(), pv.List().Len())
		}
		for j := range lv.Len() {
			if err := equal(lv.Index(j), pv.List().Get(j).Message()); err != nil {
				return err
			}
		}
	case fd.Kind() == protoreflect.MessageKind:
		if lv.IsNil() != !m.Has(fd) {
			return fmt.Errorf("nil %v, protobuf has it %v", lv.IsNil(), m.Has(fd))
		}
		if !lv.IsNil() {
			return equal(lv, pv.Message())
		}
	case fd.Kind() == protoreflect.StringKind && lv.String() != pv.String(),
		fd.Kind() == protoreflect.BoolKind && lv.Bool() != pv.Bool(),
		fd.Kind() == protoreflect.Uint32Kind && lv.Uint() != pv.Uint(),
		fd.Kind() == protoreflect.EnumKind && lv.Int() != int64(pv.Enum()):
		return fmt.Errorf("%v, protobuf %v", lv, pv)
	}
	return nil
}

// Every message, every field set, decodes from the protobuf encoding to
// the same values and encodes back to the same bytes.
func TestEveryMessageRoundTripsWithTheProtobufTypes(t *testing.T) {
	for _, md := range messages(t) {
		for _, filled := range []bool{false, true} {
			pm := dynamicpb.NewMessage(md)
			if filled {
				fill(pm, 0)
			}
			want := marshalPB(t, pm)
			got := leanTypes[md.Name()]()
			if err := got.Unmarshal(want); err != nil {
				t.Fatalf("%s (filled %v): Unmarshal: %v", md.Name(), filled, err)
			}
			if err := equal(reflect.ValueOf(got), pm); err != nil {
				t.Errorf("filled %v: %v", filled, err)
			}
			if enc := got.Marshal(nil); !bytes.Equal(enc, want) {
				t.Errorf("%s (filled %v): encoded %x, protobuf %x", md.Name(), filled, enc, want)
			}
		}
	}
}

// TestRequestsEncodeAsTheGeneratedTypes: the requests the plugin builds
// are byte for byte what the generated code would send.
func TestRequestsEncodeAsTheGeneratedTypes(t *testing.T) {
	att := &Attachment{Network: "podnet", SandboxID: sandbox, IfName: "eth0"}
	pbAtt := &ipamdv1.Attachment{Network: "podnet", SandboxId: sandbox, Ifname: "eth0"}
	for name, tc := range map[string]struct {
		ours []byte
		pb   proto.Message
	}{
		"add": {AddRequest{Attachment: att, Netns: "/var/run/netns/cni-1", Pod: &PodRef{Name: "coredns-1", Namespace: "kube-system", UID: "u-1"}}.Marshal(nil),
			&ipamdv1.AddRequest{Attachment: pbAtt, Netns: "/var/run/netns/cni-1", Pod: &ipamdv1.PodRef{Name: "coredns-1", Namespace: "kube-system", Uid: "u-1"}}},
		"add ipam only": {AddRequest{Attachment: att, Wiring: WiringIPAMOnly}.Marshal(nil),
			&ipamdv1.AddRequest{Attachment: pbAtt, Wiring: ipamdv1.Wiring_WIRING_IPAM_ONLY}},
		"add empty attachment": {AddRequest{Attachment: &Attachment{}}.Marshal(nil), &ipamdv1.AddRequest{Attachment: &ipamdv1.Attachment{}}},
		"del":                  {DelRequest{Attachment: att}.Marshal(nil), &ipamdv1.DelRequest{Attachment: pbAtt}},
		"gc": {GCRequest{Network: "podnet", Valid: []Attachment{*att, {SandboxID: "b", IfName: "net1"}}}.Marshal(nil),
			&ipamdv1.GCRequest{Network: "podnet", Valid: []*ipamdv1.Attachment{pbAtt, {SandboxId: "b", Ifname: "net1"}}}},
		"status": {StatusRequest{}.Marshal(nil), &ipamdv1.StatusRequest{}},
	} {
		if want := marshalPB(t, tc.pb); !bytes.Equal(tc.ours, want) {
			t.Errorf("%s: encoded %x, generated code encodes %x", name, tc.ours, want)
		}
	}
}

func TestDecodeSkipsUnknownFieldsAndRefusesDamage(t *testing.T) {
	// A newer ipamd's extra fields of every wire type are skipped.
	extra := append(StatusResponse{Ready: true, Free: 3}.Marshal(nil),
		0x20, 0x07, // field 4 varint
		0x29, 1, 2, 3, 4, 5, 6, 7, 8, // field 5 fixed64
		0x32, 0x02, 'h', 'i', // field 6 bytes
		0x3d, 1, 2, 3, 4) // field 7 fixed32
	var st StatusResponse
	if err := st.Unmarshal(extra); err != nil || st != (StatusResponse{Ready: true, Free: 3}) {
		t.Errorf("with unknown fields: %+v, %v", st, err)
	}
	for name, b := range map[string][]byte{
		"truncated length": {0x0a, 0x05, 'a'},
		"bad utf-8":        {0x12, 0x01, 0xff},
		"group":            {0x0b},
		"field zero":       {0x02, 0x00},
		"truncated varint": {0x08, 0x80},
	} {
		if err := st.Unmarshal(b); err == nil {
			t.Errorf("%s: decoded %+v, want an error", name, st)
		}
	}
}

// FuzzDecode: the decoders never panic, and whatever one accepts, the
// protobuf types read the same way, for every message.
func FuzzDecode(f *testing.F) {
	f.Add(AddResponse{IPs: []IPConfig{{Address: "198.18.0.5/32", Gateway: "x"}}}.Marshal(nil))
	f.Add(StatusResponse{Ready: true, Message: "m", Free: 9}.Marshal(nil))
	f.Add([]byte{0x0a, 0x03, 0x0a, 0x01, 'a'})
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, md := range messages(t) {
			got := leanTypes[md.Name()]()
			if got.Unmarshal(b) != nil {
				continue
			}
			pm := dynamicpb.NewMessage(md)
			if err := proto.Unmarshal(b, pm); err != nil {
				t.Fatalf("%s: we decoded %x as %+v, protobuf refuses it: %v", md.Name(), b, got, err)
			}
			if err := equal(reflect.ValueOf(got), pm); err != nil {
				t.Fatalf("%x: %v", b, err)
			}
		}
	})
}
