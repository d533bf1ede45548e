package reconcile

import (
	"testing"

	"github.com/sandboxipam/sandboxipam/ipamd/reconcile/reconcileconf"
)

// TestNewFallsBackToTheConfigDefaults: a zero Config gets exactly the
// defaults ipamd's config states (reconcileconf owns them).
func TestNewFallsBackToTheConfigDefaults(t *testing.T) {
	def, tun := reconcileconf.DefaultSettings(), reconcileconf.DefaultTuning()
	r := New(nil, nil, Config{})
	if got := (reconcileconf.Settings{Interval: r.cfg.Interval, Grace: r.cfg.Grace}); got != def {
		t.Errorf("New's defaults = %+v, want DefaultSettings() %+v", got, def)
	}
	if got := (reconcileconf.Tuning{ListTimeout: r.cfg.ListTimeout, LinkGrace: r.cfg.LinkGrace}); got != tun {
		t.Errorf("New's defaults = %+v, want DefaultTuning() %+v", got, tun)
	}
}
