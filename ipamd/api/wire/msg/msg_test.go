package msg

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	ipamdv1 "github.com/sandboxipam/sandboxipam/ipamd/api/v1"
)

const sandbox = "c32c237fb5293478da938e388f6e22486790facba0d178ff24271829865976cf"

func pbAttachment(a Attachment) *ipamdv1.Attachment {
	return &ipamdv1.Attachment{Network: a.Network, SandboxId: a.SandboxID, Ifname: a.IfName}
}

func marshalPB(t *testing.T, m proto.Message) []byte {
	t.Helper()
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestRequestsEncodeAsTheGeneratedTypes: every request the plugin sends
// is byte for byte what the generated code would send.
func TestRequestsEncodeAsTheGeneratedTypes(t *testing.T) {
	att := Attachment{Network: "podnet", SandboxID: sandbox, IfName: "eth0"}
	long := strings.Repeat("é", 300) // multi-byte lengths and runes
	for name, tc := range map[string]struct {
		ours []byte
		pb   proto.Message
	}{
		"add": {AddRequest{Attachment: att, Netns: "/var/run/netns/cni-1", Pod: &PodRef{Name: "coredns-1", Namespace: "kube-system", UID: "u-1"}}.Marshal(nil),
			&ipamdv1.AddRequest{Attachment: pbAttachment(att), Netns: "/var/run/netns/cni-1", Pod: &ipamdv1.PodRef{Name: "coredns-1", Namespace: "kube-system", Uid: "u-1"}}},
		"add without pod": {AddRequest{Attachment: att}.Marshal(nil), &ipamdv1.AddRequest{Attachment: pbAttachment(att)}},
		"add main plugin": {AddRequest{Attachment: att, Wiring: WiringMainPlugin}.Marshal(nil),
			&ipamdv1.AddRequest{Attachment: pbAttachment(att), Wiring: ipamdv1.Wiring_WIRING_MAIN_PLUGIN}},
		"add ipam only": {AddRequest{Attachment: att, Wiring: WiringIPAMOnly}.Marshal(nil),
			&ipamdv1.AddRequest{Attachment: pbAttachment(att), Wiring: ipamdv1.Wiring_WIRING_IPAM_ONLY}},
		"add empty attachment": {AddRequest{Netns: long}.Marshal(nil), &ipamdv1.AddRequest{Attachment: &ipamdv1.Attachment{}, Netns: long}},
		"del":                  {AttachmentRequest{Attachment: att}.Marshal(nil), &ipamdv1.DelRequest{Attachment: pbAttachment(att)}},
		"check":                {AttachmentRequest{Attachment: att}.Marshal(nil), &ipamdv1.CheckRequest{Attachment: pbAttachment(att)}},
		"gc":                   {GCRequest{Network: "podnet", Valid: []Attachment{att, {Network: "podnet", SandboxID: "b", IfName: "net1"}}}.Marshal(nil), &ipamdv1.GCRequest{Network: "podnet", Valid: []*ipamdv1.Attachment{pbAttachment(att), {Network: "podnet", SandboxId: "b", Ifname: "net1"}}}},
		"gc none":              {GCRequest{Network: "podnet"}.Marshal(nil), &ipamdv1.GCRequest{Network: "podnet"}},
		"status":               {StatusRequest{}.Marshal(nil), &ipamdv1.StatusRequest{}},
	} {
		if want := marshalPB(t, tc.pb); !bytes.Equal(tc.ours, want) {
			t.Errorf("%s: encoded %x, generated code encodes %x", name, tc.ours, want)
		}
	}
}

// TestResponsesDecodeAsTheGeneratedTypes: what ipamd encodes with the
// generated types decodes to the same values, and encodes back to the
// same bytes.
func TestResponsesDecodeAsTheGeneratedTypes(t *testing.T) {
	ips := &ipamdv1.AddResponse{Ips: []*ipamdv1.IPConfig{{Address: "198.18.0.5/32"}, {Address: "198.18.0.6/24", Gateway: "198.18.0.1"}}}
	var gotIPs IPsResponse
	if err := gotIPs.Unmarshal(marshalPB(t, ips)); err != nil {
		t.Fatal(err)
	}
	if want := []IPConfig{{Address: "198.18.0.5/32"}, {Address: "198.18.0.6/24", Gateway: "198.18.0.1"}}; !slices.Equal(gotIPs.IPs, want) {
		t.Errorf("IPs = %+v, want %+v", gotIPs.IPs, want)
	}
	if !bytes.Equal(gotIPs.Marshal(nil), marshalPB(t, ips)) {
		t.Error("IPsResponse does not encode back to the same bytes")
	}

	status := &ipamdv1.StatusResponse{Ready: true, Message: "address pool exhausted", Free: 70000}
	var gotStatus StatusResponse
	if err := gotStatus.Unmarshal(marshalPB(t, status)); err != nil {
		t.Fatal(err)
	}
	if want := (StatusResponse{Ready: true, Message: "address pool exhausted", Free: 70000}); gotStatus != want {
		t.Errorf("Status = %+v, want %+v", gotStatus, want)
	}
	if !bytes.Equal(gotStatus.Marshal(nil), marshalPB(t, status)) {
		t.Error("StatusResponse does not encode back to the same bytes")
	}

	var del DelResponse
	if err := del.Unmarshal(marshalPB(t, &ipamdv1.DelResponse{Released: true})); err != nil || !del.Released {
		t.Errorf("Del = %+v, %v; want released", del, err)
	}
	gc := &ipamdv1.GCResponse{Released: []*ipamdv1.Attachment{{Network: "podnet", SandboxId: sandbox, Ifname: "eth0"}}}
	var gotGC GCResponse
	if err := gotGC.Unmarshal(marshalPB(t, gc)); err != nil {
		t.Fatal(err)
	}
	if want := []Attachment{{Network: "podnet", SandboxID: sandbox, IfName: "eth0"}}; !slices.Equal(gotGC.Released, want) {
		t.Errorf("GC released %+v, want %+v", gotGC.Released, want)
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

// FuzzDecode: the decoders never panic, and whatever they accept, the
// generated code reads the same way.
func FuzzDecode(f *testing.F) {
	f.Add(IPsResponse{IPs: []IPConfig{{Address: "198.18.0.5/32", Gateway: "x"}}}.Marshal(nil))
	f.Add(StatusResponse{Ready: true, Message: "m", Free: 9}.Marshal(nil))
	f.Add([]byte{0x0a, 0x03, 0x0a, 0x01, 'a'})
	f.Fuzz(func(t *testing.T, b []byte) {
		var ips IPsResponse
		if ips.Unmarshal(b) == nil {
			var pb ipamdv1.AddResponse
			if err := proto.Unmarshal(b, &pb); err != nil {
				t.Fatalf("we decoded %x as %+v, the generated code refuses it: %v", b, ips, err)
			}
			if len(pb.GetIps()) != len(ips.IPs) {
				t.Fatalf("%x: %d IPs, the generated code reads %d", b, len(ips.IPs), len(pb.GetIps()))
			}
			for i, ip := range pb.GetIps() {
				if ips.IPs[i] != (IPConfig{Address: ip.GetAddress(), Gateway: ip.GetGateway()}) {
					t.Fatalf("%x: IP %d = %+v, the generated code reads %v", b, i, ips.IPs[i], ip)
				}
			}
		}
		var st StatusResponse
		if st.Unmarshal(b) == nil {
			var pb ipamdv1.StatusResponse
			if err := proto.Unmarshal(b, &pb); err != nil {
				t.Fatalf("we decoded %x as %+v, the generated code refuses it: %v", b, st, err)
			}
			if st != (StatusResponse{Ready: pb.GetReady(), Message: pb.GetMessage(), Free: pb.GetFree()}) {
				t.Fatalf("%x: %+v, the generated code reads %v", b, st, &pb)
			}
		}
		var gc GCResponse
		_ = gc.Unmarshal(b)
		var del DelResponse
		_ = del.Unmarshal(b)
	})
}
