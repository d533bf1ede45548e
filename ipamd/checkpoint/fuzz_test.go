package checkpoint_test

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/ipamd/checkpoint"
)

// FuzzDecodeCheckpoint: Decode never panics; what it rejects wraps
// ErrCorrupt (or ErrNewer, for a version above this build's); what it
// accepts encodes and decodes to the same state.
func FuzzDecodeCheckpoint(f *testing.F) {
	good, err := checkpoint.Encode(sample())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(good[:len(good)/2])
	withNode, err := checkpoint.Encode(sampleWithNode())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(withNode)
	f.Add([]byte("sandboxipam-checkpoint v1 sha256= len=0\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := checkpoint.Decode(data)
		if err != nil {
			if !errors.Is(err, checkpoint.ErrCorrupt) && !errors.Is(err, checkpoint.ErrNewer) {
				t.Fatalf("error %v wraps neither ErrCorrupt nor ErrNewer", err)
			}
			return
		}
		again, err := checkpoint.Encode(file)
		if err != nil {
			t.Fatalf("accepted file does not encode: %v", err)
		}
		back, err := checkpoint.Decode(again)
		if err != nil {
			t.Fatalf("accepted file does not decode after re-encoding: %v", err)
		}
		if diff := diffFile(file, back); diff != "" {
			t.Fatalf("state changed in the round trip: %s", diff)
		}
	})
}

// FuzzDecodeJournal: DecodeJournal never panics; what it rejects wraps
// ErrCorrupt (or ErrNewer, for a version above this build's); what it accepts covers the input exactly (valid records plus
// a torn tail), and its records encode and decode to the same journal.
func FuzzDecodeJournal(f *testing.F) {
	base := checkpoint.Sum([]byte("snapshot"))
	good, err := checkpoint.EncodeJournal(base, sampleRecords())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(good[:len(good)-7])
	f.Add(good[:bytes.IndexByte(good, '\n')+1])
	f.Fuzz(func(t *testing.T, data []byte) {
		j, err := checkpoint.DecodeJournal(data)
		if err != nil {
			if !errors.Is(err, checkpoint.ErrCorrupt) && !errors.Is(err, checkpoint.ErrNewer) {
				t.Fatalf("error %v wraps neither ErrCorrupt nor ErrNewer", err)
			}
			return
		}
		if j.Size+j.Torn != int64(len(data)) || j.Torn < 0 {
			t.Fatalf("size %d + torn %d != %d bytes", j.Size, j.Torn, len(data))
		}
		again, err := checkpoint.EncodeJournal(j.Base, j.Records)
		if err != nil {
			t.Fatalf("accepted journal does not encode: %v", err)
		}
		back, err := checkpoint.DecodeJournal(again)
		if err != nil || back.Torn != 0 || back.Size != int64(len(again)) {
			t.Fatalf("accepted journal does not decode after re-encoding: %+v, %v", back, err)
		}
		if back.Base != j.Base {
			t.Fatalf("base %q became %q in the round trip", j.Base, back.Base)
		}
		if diff := diffRecords(j.Records, back.Records); diff != "" {
			t.Fatalf("records changed in the round trip: %s", diff)
		}
		twice, err := checkpoint.EncodeJournal(back.Base, back.Records)
		if err != nil || !bytes.Equal(twice, again) {
			t.Fatalf("re-encoding is not stable: %v", err)
		}
	})
}

// The comparisons below name every field: a field added to these types
// without a comparison here fails TestComparisonsCoverEveryField, so the
// fuzz targets never stop checking part of the state.
var comparedFields = map[reflect.Type]int{
	reflect.TypeFor[checkpoint.File]():          7,
	reflect.TypeFor[checkpoint.NodeRanges]():    4,
	reflect.TypeFor[checkpoint.Address]():       6,
	reflect.TypeFor[checkpoint.Assignment]():    13,
	reflect.TypeFor[checkpoint.Record]():        10,
	reflect.TypeFor[checkpoint.AssignmentKey](): 3,
	reflect.TypeFor[checkpoint.Deleted]():       4,
}

func TestComparisonsCoverEveryField(t *testing.T) {
	for typ, n := range comparedFields {
		if typ.NumField() != n {
			t.Errorf("%s has %d fields, the fuzz comparisons know %d: compare the new ones", typ, typ.NumField(), n)
		}
	}
}

// TestDiffsSeeAChange: the comparisons are not vacuous.
func TestDiffsSeeAChange(t *testing.T) {
	a := sample()
	b := sample()
	b.Assignments = slices.Clone(b.Assignments)
	b.Assignments[0].ListedAt = b.Assignments[0].ListedAt.Add(time.Nanosecond)
	if diffFile(a, a) != "" || diffFile(a, b) == "" {
		t.Errorf("diffFile(a, a) = %q, diffFile(a, b) = %q", diffFile(a, a), diffFile(a, b))
	}
	r := sampleRecords()
	r2 := slices.Clone(r)
	r2[0].Seq++
	if diffRecords(r, r) != "" || diffRecords(r, r2) == "" {
		t.Errorf("diffRecords(r, r) = %q, diffRecords(r, r2) = %q", diffRecords(r, r), diffRecords(r, r2))
	}
}

// diffFile describes the first difference between two states, "" when
// they are the same. Times compare as instants: the encoding keeps the
// instant; nil and empty lists are the same state.
func diffFile(a, b checkpoint.File) string {
	switch {
	case !a.SavedAt.Equal(b.SavedAt):
		return fmt.Sprintf("savedAt %v != %v", a.SavedAt, b.SavedAt)
	case a.Unproven != b.Unproven:
		return fmt.Sprintf("unproven %v != %v", a.Unproven, b.Unproven)
	case !slices.Equal(a.Cursors, b.Cursors):
		return fmt.Sprintf("cursors %v != %v", a.Cursors, b.Cursors)
	case !slices.EqualFunc(a.Addresses, b.Addresses, sameAddress):
		return fmt.Sprintf("addresses %+v != %+v", a.Addresses, b.Addresses)
	case !slices.EqualFunc(a.Assignments, b.Assignments, sameAssignment):
		return fmt.Sprintf("assignments %+v != %+v", a.Assignments, b.Assignments)
	case !reflect.DeepEqual(a.Node, b.Node):
		return fmt.Sprintf("node %+v != %+v", a.Node, b.Node)
	case !slices.EqualFunc(a.Deleted, b.Deleted, sameDeleted):
		return fmt.Sprintf("deleted %+v != %+v", a.Deleted, b.Deleted)
	}
	return ""
}

func sameAddress(a, b checkpoint.Address) bool {
	return a.IP == b.IP && a.Subnet == b.Subnet && a.Gateway == b.Gateway && a.Group == b.Group &&
		a.Quarantined == b.Quarantined && a.ReleasedAt.Equal(b.ReleasedAt)
}

func sameAssignment(a, b checkpoint.Assignment) bool {
	return a.Network == b.Network && a.SandboxID == b.SandboxID && a.IfName == b.IfName &&
		a.PodName == b.PodName && a.Namespace == b.Namespace && a.UID == b.UID && slices.Equal(a.IPs, b.IPs) &&
		a.AssignedAt.Equal(b.AssignedAt) && a.ListedAt.Equal(b.ListedAt) && a.Wiring == b.Wiring &&
		a.NetNS == b.NetNS && a.NetNSDev == b.NetNSDev && a.NetNSIno == b.NetNSIno
}

func diffRecords(a, b []checkpoint.Record) string {
	if len(a) != len(b) {
		return fmt.Sprintf("%d records != %d", len(a), len(b))
	}
	for i := range a {
		if !sameRecord(a[i], b[i]) {
			return fmt.Sprintf("record %d: %+v != %+v", i, a[i], b[i])
		}
	}
	return ""
}

func sameRecord(a, b checkpoint.Record) bool {
	return a.Seq == b.Seq && a.Seal == b.Seal && a.Unproven == b.Unproven && slices.Equal(a.Cursors, b.Cursors) &&
		slices.EqualFunc(a.Addresses, b.Addresses, sameAddress) &&
		slices.EqualFunc(a.DropAddresses, b.DropAddresses, func(x, y netip.Addr) bool { return x == y }) &&
		slices.EqualFunc(a.Assignments, b.Assignments, sameAssignment) &&
		slices.Equal(a.DropAssignments, b.DropAssignments) &&
		slices.EqualFunc(a.Deleted, b.Deleted, sameDeleted) && slices.Equal(a.DropDeleted, b.DropDeleted)
}

func sameDeleted(a, b checkpoint.Deleted) bool {
	return a.Network == b.Network && a.SandboxID == b.SandboxID && a.IfName == b.IfName && a.At.Equal(b.At)
}
