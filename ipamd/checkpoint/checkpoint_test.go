package checkpoint_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/ipamd/checkpoint"
)

func sample() checkpoint.File {
	at := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	return checkpoint.File{
		SavedAt: at,
		Cursors: []netip.Addr{netip.MustParseAddr("198.18.0.2"), netip.MustParseAddr("2001:db8::5")},
		Addresses: []checkpoint.Address{
			{IP: netip.MustParseAddr("198.18.0.1"), Subnet: netip.MustParsePrefix("198.18.0.0/24"), Group: "static"},
			{IP: netip.MustParseAddr("198.18.0.2"), Subnet: netip.MustParsePrefix("198.18.0.0/24"), Group: "static", ReleasedAt: at},
			{IP: netip.MustParseAddr("2001:db8::5"), Subnet: netip.MustParsePrefix("2001:db8::/112"), Gateway: netip.MustParseAddr("2001:db8::1"), Group: "static"},
		},
		Assignments: []checkpoint.Assignment{
			{Network: "pods", SandboxID: "93e629d853d9f70464dd5b54987533ffe87930cb28a6414ddb48c94b69845e85", IfName: "eth0",
				PodName: "coredns-6f647f5754-gpm7t", Namespace: "kube-system", UID: "83f10b53", IPs: []netip.Addr{netip.MustParseAddr("198.18.0.1")}, AssignedAt: at, Wiring: "ipamOnly",
				NetNS: "/var/run/netns/cni-5d3a0c1e-7f0b-6a2e-b1c4-2d9e8f7a6b5c", NetNSDev: 4, NetNSIno: 4026532173},
			{Network: "pods", SandboxID: "c32c237fb529", IfName: "eth0", IPs: []netip.Addr{netip.MustParseAddr("2001:db8::5")}, AssignedAt: at},
		},
	}
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	data, err := checkpoint.Encode(sample())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(data, []byte("sandboxipam-checkpoint v2 sha256=")) {
		t.Fatalf("header = %q", data[:50])
	}
	got, err := checkpoint.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, sample()) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, sample())
	}
}

func sampleWithNode() checkpoint.File {
	f := sample()
	f.Node = &checkpoint.NodeRanges{Name: "node-2", UID: "6b0e8a4c-2f44-4a8e-9d0f-0c6f5b1d2e3a",
		PodCIDRs: []netip.Prefix{netip.MustParsePrefix("198.18.2.0/24"), netip.MustParsePrefix("fd00:2::/64")},
		Retiring: []netip.Prefix{netip.MustParsePrefix("198.18.1.0/24")}}
	return f
}

// The node source's record is an optional field: it round-trips, and a
// file without it (every older file) decodes with Node nil.
func TestNodeRangesRoundTrip(t *testing.T) {
	data, err := checkpoint.Encode(sampleWithNode())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(data, []byte(`"node":{"name":"node-2","uid":"6b0e8a4c-2f44-4a8e-9d0f-0c6f5b1d2e3a","podCIDRs":["198.18.2.0/24","fd00:2::/64"],"retiring":["198.18.1.0/24"]}`)) {
		t.Fatalf("encoded body lacks the node record: %s", data)
	}
	if !bytes.HasPrefix(data, []byte("sandboxipam-checkpoint v2 ")) {
		t.Fatalf("the node record changed the format version: %q", data[:40])
	}
	got, err := checkpoint.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, sampleWithNode()) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got.Node, sampleWithNode().Node)
	}
	plain, err := checkpoint.Encode(sample())
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(plain, []byte(`"node"`)) {
		t.Fatalf("a file without a node record writes one: %s", plain)
	}
}

func TestDecodeRejectsDamage(t *testing.T) {
	good, err := checkpoint.Encode(sample())
	if err != nil {
		t.Fatal(err)
	}
	flipped := bytes.Clone(good)
	flipped[len(flipped)-20] ^= 1
	cases := map[string][]byte{
		"empty":          nil,
		"no header":      []byte(`{"addresses":[]}`),
		"torn":           good[:len(good)-1],
		"trailing bytes": append(bytes.Clone(good), '\n'),
		"bit flip":       flipped,
		"version zero":   bytes.Replace(good, []byte(" v2 "), []byte(" v0 "), 1),
		"no version":     bytes.Replace(good, []byte(" v2 "), []byte(" vx "), 1),
		"huge length":    []byte("sandboxipam-checkpoint v2 sha256=00 len=99999999999\n"),
	}
	for name, data := range cases {
		if _, err := checkpoint.Decode(data); !errors.Is(err, checkpoint.ErrCorrupt) {
			t.Errorf("%s: err = %v, want ErrCorrupt", name, err)
		}
	}
}

// A body with a valid checksum that no store could have written (written
// by hand, or by a buggy build) is still refused.
func TestDecodeRejectsInconsistentState(t *testing.T) {
	dup := sample()
	dup.Assignments[1].IPs = dup.Assignments[0].IPs
	orphan := sample()
	orphan.Assignments[0].IPs = []netip.Addr{netip.MustParseAddr("198.18.9.9")}
	twice := sample()
	twice.Addresses[1].IP = twice.Addresses[0].IP
	noID := sample()
	noID.Assignments[0].SandboxID = ""
	noIP := sample()
	noIP.Assignments[0].IPs = nil
	sameTwice := sample()
	sameTwice.Assignments[0].IPs = []netip.Addr{netip.MustParseAddr("198.18.0.1"), netip.MustParseAddr("198.18.0.1")}
	for name, f := range map[string]checkpoint.File{"address assigned twice": dup, "unknown address": orphan, "address listed twice": twice,
		"empty sandbox ID": noID, "no address": noIP, "one address twice in an assignment": sameTwice} {
		data, err := checkpoint.Encode(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := checkpoint.Decode(data); !errors.Is(err, checkpoint.ErrCorrupt) {
			t.Errorf("%s: err = %v, want ErrCorrupt", name, err)
		}
	}
}

func TestWriteAtomicReplacesAndLeavesNoTemp(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "cp")
	for _, content := range []string{"first", "second"} {
		if err := checkpoint.WriteAtomic(path, []byte(content)); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != content {
			t.Fatalf("file = %q, %v; want %q", got, err, content)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("directory holds %d entries, want only the checkpoint", len(entries))
	}
}

func TestReadMissingAndCorrupt(t *testing.T) {
	dir := t.TempDir()
	if _, err := checkpoint.Read(filepath.Join(dir, "none")); !errors.Is(err, checkpoint.ErrMissing) {
		t.Fatalf("missing: %v", err)
	}
	bad := filepath.Join(dir, "bad")
	if err := os.WriteFile(bad, []byte("x\ny"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := checkpoint.Read(bad)
	if !errors.Is(err, checkpoint.ErrCorrupt) || !strings.Contains(err.Error(), bad) {
		t.Fatalf("corrupt: %v", err)
	}
}

// The hand-written encoder must say what encoding/json would: compare the
// decoded bodies for strings that need escaping.
func TestEncoderAgreesWithEncodingJSON(t *testing.T) {
	f := sample()
	f.Unproven = true
	f.Addresses[0].Quarantined = true
	f.Addresses[0].Group = "eni-\"quoted\"\\back"
	f.Assignments[0].PodName = "ctl\x00\x1f\t\n<&>"
	f.Assignments[0].Namespace = "ünïcødé-☃"
	f.Assignments[1].UID = "bad-utf8-\xff\xfe"
	f.Assignments[1].AssignedAt = time.Date(2026, 12, 2, 12, 0, 0, 5, time.FixedZone("x", 3600))
	f.Deleted = []checkpoint.Deleted{{Network: "pods", SandboxID: "sb-\"q\"", IfName: "eth0", At: f.SavedAt}}
	data, err := checkpoint.Encode(f)
	if err != nil {
		t.Fatal(err)
	}
	_, body, _ := bytes.Cut(data, []byte("\n"))
	reference, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	var ours, theirs checkpoint.File
	if err := json.Unmarshal(body, &ours); err != nil {
		t.Fatalf("our body is not JSON: %v\n%s", err, body)
	}
	if err := json.Unmarshal(reference, &theirs); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(ours, theirs) {
		t.Fatalf("encoders disagree:\n ours   %+v\n theirs %+v", ours, theirs)
	}
	if _, err := checkpoint.Decode(data); err != nil {
		t.Fatal(err)
	}
}

func TestEncodeRefusesUnrepresentableTime(t *testing.T) {
	f := sample()
	f.Assignments[0].AssignedAt = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	if _, err := checkpoint.Encode(f); err == nil {
		t.Fatal("Encode accepted the year 10000")
	}
}
