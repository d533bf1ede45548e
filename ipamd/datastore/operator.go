package datastore

import (
	"context"
	"log/slog"
	"net/netip"
	"slices"

	"github.com/sandboxipam/sandboxipam/ipamd/datastore/state"
)

// ReleaseQuarantined is ReleaseFor for an operator's forced release: the
// released addresses listed in hold, which the runtime or the node still
// shows in use, are quarantined in the same write rather than only
// cooling. They are never handed out until a successful listing, with the
// store proven, shows no pod holding them (Observe lifts a quarantine
// then, as for any other). Addresses in hold that key does not hold are
// ignored.
func (s *Store) ReleaseQuarantined(ctx context.Context, key Key, reason string, hold []netip.Addr) (Assignment, bool, error) {
	return s.releaseOne(ctx, key, reason, hold)
}

// quarantineReleasedLocked quarantines the addresses of a, just released,
// that hold names.
func (s *Store) quarantineReleasedLocked(a Assignment, hold []netip.Addr) {
	for _, addr := range a.All() {
		e, ok := s.st.Entry(addr.IP)
		if !ok || e.Held || !slices.Contains(hold, addr.IP) {
			continue
		}
		s.apply(state.Quarantine(e.Addr))
		s.log.Warn("QUARANTINED an address an operator released by force: the runtime or the node still shows it in use",
			slog.String("ip", addr.IP.String()), slog.Any("key", a.Key))
	}
}
