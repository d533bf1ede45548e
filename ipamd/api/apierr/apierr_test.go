package apierr

import (
	"errors"
	"fmt"
	"testing"

	"github.com/sandboxipam/sandboxipam/ipamd/api/wire"
)

// The plugin sees only the wire code, so rows that share a code must
// agree on what the plugin prints.
func TestRowsOfOneCodeAgree(t *testing.T) {
	seen := map[wire.Code]row{}
	for _, r := range rows {
		if first, ok := seen[r.code]; ok && (first.cni != r.cni || first.msg != r.msg) {
			t.Errorf("%v and %v share %s but map to CNI %d %q and %d %q", first.err, r.err, r.code, first.cni, first.msg, r.cni, r.msg)
		}
		seen[r.code] = r
	}
}

func TestToWireKeepsTheMessageAndPassesWireErrorsThrough(t *testing.T) {
	err := fmt.Errorf("assign to sandbox s: %w", ErrPoolExhausted)
	if got := ToWire(err); got.Code != wire.CodeResourceExhausted || got.Message != err.Error() {
		t.Errorf("ToWire(%v) = %+v", err, got)
	}
	werr := &wire.Error{Code: wire.CodeUnimplemented, Message: "x"}
	if got := ToWire(fmt.Errorf("wrapped: %w", werr)); got != werr {
		t.Errorf("ToWire of a wrapped *wire.Error = %+v, want it unchanged", got)
	}
	if ToWire(nil) != nil || Code(nil) != wire.CodeOK {
		t.Error("nil is not OK")
	}
	if got := Code(errors.New("bug")); got != wire.CodeInternal {
		t.Errorf("Code of an unknown error = %s, want Internal", got)
	}
	if inv := Invalid("pod.name %q is bad", "x"); inv.Error() != `pod.name "x" is bad` || !errors.Is(inv, ErrInvalidRequest) {
		t.Errorf("Invalid = %q (is ErrInvalidRequest: %v)", inv, errors.Is(inv, ErrInvalidRequest))
	}
}
