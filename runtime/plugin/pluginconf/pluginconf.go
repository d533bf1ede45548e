// Package pluginconf is what a host sets about launching and supervising a
// runtime adapter plugin: the supervisor's relaunch backoff and health
// checks, and the launch deadline's default. It is a leaf (standard library
// only), apart from the transport that uses it, so that a host's config
// (ipamd's advanced.adapter) can embed it without compiling go-plugin and
// gRPC.
package pluginconf

import (
	"errors"
	"fmt"
	"time"
)

// DefaultStartTimeout bounds a launch when the launch's StartTimeout is
// zero.
const DefaultStartTimeout = 10 * time.Second

// Defaults of Supervision's fields; the supervisor also uses them for zero
// fields (WithDefaults). This package owns them: ipamd's config
// (advanced.adapter) embeds Supervision and takes its defaults from
// DefaultSupervision, so there is one value of each.
const (
	DefaultMinBackoff     = 500 * time.Millisecond
	DefaultMaxBackoff     = 30 * time.Second
	DefaultHealthInterval = 5 * time.Second
)

// Supervision tunes how a supervisor watches and relaunches its plugin.
// The YAML and desc tags serve a host that reads it from a config file
// (ipamd: advanced.adapter); field comments state the defaults.
type Supervision struct {
	// MinBackoff is the wait before the first relaunch; it doubles with
	// every failed launch or early crash, up to MaxBackoff, and resets
	// once a relaunched plugin passes a health check. Default 500ms. A
	// host's Validate refuses 0s (a crashing plugin would be relaunched
	// in a tight loop); WithDefaults, for callers without a config, fills
	// it.
	MinBackoff time.Duration `yaml:"minBackoff" desc:"first wait before relaunching a dead adapter"`
	// MaxBackoff caps the wait between relaunches. Default 30s.
	MaxBackoff time.Duration `yaml:"maxBackoff" desc:"longest wait between adapter relaunches"`
	// HealthInterval is how often the plugin is pinged, and how long a
	// ping may take. A plugin process that exits is noticed at once.
	// Default 5s; 0s is refused (the ping would have no time).
	HealthInterval time.Duration `yaml:"healthInterval" desc:"how often the adapter's health is checked"`
}

// DefaultSupervision returns the defaults stated on Supervision's fields.
func DefaultSupervision() Supervision {
	return Supervision{MinBackoff: DefaultMinBackoff, MaxBackoff: DefaultMaxBackoff, HealthInterval: DefaultHealthInterval}
}

// Validate reports every invalid field, each named by its YAML name; a
// host that nests Supervision prefixes its own path.
func (s Supervision) Validate() error {
	var errs []error
	if s.MinBackoff <= 0 {
		errs = append(errs, fmt.Errorf("minBackoff must be positive, got %s: a crashing adapter would be relaunched in a tight loop", s.MinBackoff))
	}
	if s.MaxBackoff < s.MinBackoff {
		errs = append(errs, fmt.Errorf("maxBackoff must be at least minBackoff (%s), got %s", s.MinBackoff, s.MaxBackoff))
	}
	if s.HealthInterval <= 0 {
		errs = append(errs, fmt.Errorf("healthInterval must be positive, got %s: it is also the ping's deadline, so every check would fail", s.HealthInterval))
	}
	return errors.Join(errs...)
}

// WithDefaults fills zero fields, as the supervisor documents.
func (s Supervision) WithDefaults() Supervision {
	if s.MinBackoff <= 0 {
		s.MinBackoff = DefaultMinBackoff
	}
	if s.MaxBackoff <= 0 {
		s.MaxBackoff = DefaultMaxBackoff
	}
	if s.MaxBackoff < s.MinBackoff {
		s.MaxBackoff = s.MinBackoff
	}
	if s.HealthInterval <= 0 {
		s.HealthInterval = DefaultHealthInterval
	}
	return s
}
