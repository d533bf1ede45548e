package config

import (
	"time"

	"github.com/sandboxipam/sandboxipam/ipamd/ipsource/aws/awsconf"
	"github.com/sandboxipam/sandboxipam/ipamd/reconcile/reconcileconf"
	"github.com/sandboxipam/sandboxipam/runtime/plugin/pluginconf"
)

// Advanced holds the tuning knobs most operators never touch: their
// defaults suit a node, and a wrong value costs more than it saves.
type Advanced struct {
	// Adapter tunes the runtime adapter's launch and supervision.
	Adapter AdapterTuning `yaml:"adapter"`
	// Reconcile tunes the reconciler's listing deadline and, after a lost
	// checkpoint, how long a pod may still be being wired; package
	// reconcileconf owns it (Tuning, defaults DefaultTuning).
	Reconcile reconcileconf.Tuning `yaml:"reconcile"`
	// AWS tunes the aws source's intervals and EC2 retries; package
	// awsconf owns it (Tuning, defaults DefaultTuning).
	AWS awsconf.Tuning `yaml:"aws"`
}

// AdapterTuning tunes the adapter's launch and its supervisor; the
// supervisor's part is package runtime/plugin/pluginconf's Supervision,
// with its defaults and validation.
type AdapterTuning struct {
	// StartTimeout bounds one adapter launch, handshake and first ping
	// included. Default 10s (pluginconf.DefaultStartTimeout). 0s is
	// refused: every launch would time out at once.
	StartTimeout time.Duration `yaml:"startTimeout" desc:"deadline of one adapter launch"`
	// Supervision: relaunch backoff and health checks. Defaults 500ms,
	// 30s and 5s (pluginconf.DefaultSupervision).
	pluginconf.Supervision `yaml:",inline"`
}

func defaultAdvanced() Advanced {
	return Advanced{
		Adapter:   AdapterTuning{StartTimeout: pluginconf.DefaultStartTimeout, Supervision: pluginconf.DefaultSupervision()},
		Reconcile: reconcileconf.DefaultTuning(),
		AWS:       awsconf.DefaultTuning(),
	}
}

// validate checks every knob; the aws tuning only matters, and is only
// checked, with ipSource.type aws.
func (a Advanced) validate(v *validator, source string) {
	v.positive("advanced.adapter.startTimeout", a.Adapter.StartTimeout, "every adapter launch would time out at once")
	v.nested("advanced.adapter.", a.Adapter.Supervision.Validate())
	v.nested("advanced.reconcile.", a.Reconcile.Validate())
	if source == SourceAWS {
		v.nested("advanced.", a.AWS.Validate()) // its errors say aws.<field>
	}
}
