package shared

import (
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/runtime"
	adapterpb "github.com/sandboxipam/sandboxipam/runtime/plugin/proto"
)

func TestSandboxConversionEdgeCases(t *testing.T) {
	cases := []runtime.Sandbox{
		{}, // zero time, StateUnknown, no IPs, no labels
		{
			ID:        "a",
			State:     runtime.StateNotReady,
			CreatedAt: time.Date(1969, 12, 31, 23, 59, 59, 999999999, time.UTC), // before the Unix epoch
			IPs: []netip.Addr{
				netip.MustParseAddr("::ffff:198.18.0.1"), // IPv4-mapped stays IPv6
				netip.MustParseAddr("198.18.0.1"),
			},
			Labels: map[string]string{"": "empty key", "k": ""},
		},
	}
	for _, want := range cases {
		got, err := FromProtoSandbox(ToProtoSandbox(&want))
		if err != nil {
			t.Fatalf("round trip of %+v: %v", want, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("round trip = %+v, want %+v", got, want)
		}
	}
}

func TestSandboxConversionRefusesMalformed(t *testing.T) {
	if _, err := FromProtoSandbox(&adapterpb.Sandbox{Id: "x", Ips: [][]byte{{1, 2, 3}}}); err == nil || !strings.Contains(err.Error(), "3 bytes") {
		t.Errorf("3-byte IP: %v, want an error naming its length", err)
	}
	if _, err := FromProtoSandbox(&adapterpb.Sandbox{Id: "x", Labels: []string{"k"}}); err == nil {
		t.Error("a label key without a value was accepted")
	}
	listing := []*adapterpb.Sandbox{{Id: "ok"}, {Id: "bad", Ips: [][]byte{{1}}}}
	if sandboxes, err := FromProtoSandboxes(listing); err == nil || sandboxes != nil {
		t.Errorf("listing with a malformed sandbox = %v, %v; want no listing and an error", sandboxes, err)
	}
}

// Each state maps to its own wire value and back; a value either side
// does not know is unspecified on the wire and unknown in the runtime.
func TestStateConversion(t *testing.T) {
	for _, tc := range []struct {
		native runtime.SandboxState
		wire   adapterpb.SandboxState
		back   runtime.SandboxState
	}{
		{runtime.StateUnknown, adapterpb.SandboxState_SANDBOX_STATE_UNSPECIFIED, runtime.StateUnknown},
		{runtime.StateReady, adapterpb.SandboxState_SANDBOX_STATE_READY, runtime.StateReady},
		{runtime.StateNotReady, adapterpb.SandboxState_SANDBOX_STATE_NOT_READY, runtime.StateNotReady},
		{runtime.SandboxState(99), adapterpb.SandboxState_SANDBOX_STATE_UNSPECIFIED, runtime.StateUnknown},
	} {
		if got := toProtoState(tc.native); got != tc.wire {
			t.Errorf("toProtoState(%v) = %v, want %v", tc.native, got, tc.wire)
		}
		if got := fromProtoState(tc.wire); got != tc.back {
			t.Errorf("fromProtoState(%v) = %v, want %v", tc.wire, got, tc.back)
		}
	}
	if got := fromProtoState(adapterpb.SandboxState(99)); got != runtime.StateUnknown {
		t.Errorf("fromProtoState(99) = %v, want %v", got, runtime.StateUnknown)
	}
}
