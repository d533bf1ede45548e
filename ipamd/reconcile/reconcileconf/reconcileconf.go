// Package reconcileconf is the reconciler's part of ipamd's configuration:
// the fields, their defaults and their validation. It is a leaf (standard
// library only) so that package config can compose it without compiling
// the reconciler, and parsing or fuzzing the config touches only the
// config; package reconcile takes its defaults from here.
package reconcileconf

import (
	"errors"
	"fmt"
	"time"
)

// Defaults of the fields; reconcile.New also uses them for zero fields.
const (
	DefaultInterval    = 60 * time.Second
	DefaultGrace       = 30 * time.Second
	DefaultListTimeout = 10 * time.Second
	// DefaultLinkGrace: the CNI plugin wires a pod milliseconds after
	// ipamd answers its ADD; this leaves room for a busy node.
	DefaultLinkGrace = 10 * time.Second
)

// Settings is what ipamd reads under reconcile and embeds as it is
// (package config only composes). The daemon hands the values to
// reconcile.New. The knobs most operators never touch are in Tuning,
// which ipamd reads under advanced.reconcile.
type Settings struct {
	// Interval between passes; one pass also runs at start. Default 60s.
	// 0s is refused: passes would run back to back.
	Interval time.Duration `yaml:"interval" desc:"time between reconcile passes (one also runs at start)"`
	// Grace: an assignment younger than this is never released, so a pod
	// whose ADD raced the listing keeps its IP. Default 30s. 0s is
	// refused: a runtime may list a sandbox only once its CNI ADD has
	// returned, so a pod wired during a pass would lose its address while
	// it runs (or make the adapter look blind).
	Grace time.Duration `yaml:"grace" desc:"minimum age of an assignment before the reconciler may release it"`
}

// DefaultSettings returns the defaults stated on Settings' fields.
func DefaultSettings() Settings {
	return Settings{Interval: DefaultInterval, Grace: DefaultGrace}
}

// Validate reports every invalid field, each named by its YAML name; ipamd
// prefixes "reconcile.".
func (s Settings) Validate() error {
	return positive(
		namedDuration{"interval", s.Interval, "passes would run back to back"},
		namedDuration{"grace", s.Grace, "a pod whose ADD raced the runtime listing would lose its address while it runs"})
}

// Tuning is the reconciler's share of ipamd's advanced block: deadlines
// whose defaults suit a node, owned here like Settings.
type Tuning struct {
	// ListTimeout bounds one ListSandboxes call. Default 10s. 0s is
	// refused: every listing would time out, so nothing is reconciled.
	ListTimeout time.Duration `yaml:"listTimeout" desc:"deadline of one sandbox listing through the adapter"`
	// LinkGrace: after a lost checkpoint, when podLinks.podWiring resolves to
	// "plugin", a pod made before ipamd started that the runtime reports
	// no IP for and that has no pod link yet is waited for this long after
	// start (an ADD answered just before the restart may still be wiring
	// it) before it counts as holding nothing. Default 10s. 0s is
	// refused: such a pod would count as holding nothing at once, and its
	// address could go to another pod.
	LinkGrace time.Duration `yaml:"linkGrace" desc:"after a lost checkpoint, when the plugin wires every pod (podLinks.podWiring), how long a pod without IP or pod link may still be being wired"`
}

// Validate reports every invalid field, each named by its YAML name; ipamd
// prefixes "advanced.reconcile.".
func (t Tuning) Validate() error {
	return positive(
		namedDuration{"listTimeout", t.ListTimeout, "every runtime listing would time out, so nothing would be reconciled"},
		namedDuration{"linkGrace", t.LinkGrace, "a pod still being wired at a restart would count as holding nothing, and its address could go to another pod"})
}

// DefaultTuning returns the defaults stated on Tuning's fields.
func DefaultTuning() Tuning {
	return Tuning{ListTimeout: DefaultListTimeout, LinkGrace: DefaultLinkGrace}
}

// namedDuration is a field that must be positive, with why for the
// operator who wrote 0s.
type namedDuration struct {
	name string
	d    time.Duration
	why  string
}

// positive reports every field that is not above zero, with the reason.
func positive(fields ...namedDuration) error {
	var errs []error
	for _, f := range fields {
		if f.d <= 0 {
			errs = append(errs, fmt.Errorf("%s must be positive, got %s: %s", f.name, f.d, f.why))
		}
	}
	return errors.Join(errs...)
}
