// Package awsconf is the aws (ENI) IP source's part of ipamd's
// configuration: the fields, their defaults and their validation. It is a
// leaf (standard library only) so that package config can compose it
// without compiling the AWS SDK, and parsing or fuzzing the config touches
// only the config; package ipsource/aws runs a source from these values.
package awsconf

import (
	"errors"
	"fmt"
	"net/url"
	"time"
)

// Config is what ipamd reads under ipSource.aws and embeds as it is: this
// package owns the fields, their defaults and validation; the desc and
// envAlias tags feed ipamd config-reference and the loader's alias
// variables. Field comments give the default (DefaultConfig) and the environment variable that overrides the field;
// the env tags carry the same names. They are not a second scheme: ipamd's
// config loader derives every variable from the YAML path (IPAMD_ and the
// path upper-cased, "." -> "_", so ipSource.aws.warmIPTarget is
// IPAMD_IPSOURCE_AWS_WARMIPTARGET), and package config's tests check that
// these tags name exactly the derived variables. The three targets also
// answer to the AWS VPC CNI's own variables WARM_IP_TARGET,
// MINIMUM_IP_TARGET and WARM_ENI_TARGET; when both are set, the IPAMD_
// variable wins.
//
// The three targets follow the AWS VPC CNI: when WarmIPTarget or
// MinimumIPTarget is above zero they decide and WarmENITarget is ignored;
// the pool then keeps at least WarmIPTarget free addresses and at least
// MinimumIPTarget addresses in all. With neither set, the pool keeps
// WarmENITarget whole ENIs' worth of free addresses and grows and shrinks
// by whole ENIs.
type Config struct {
	// WarmIPTarget is how many free addresses the pool keeps ready for new
	// pods. Default 0: no IP target. A written 0 means the same, as in the
	// VPC CNI: 0 free addresses is no target, and with minimumIPTarget also
	// 0 the ENI (or prefix) target decides.
	// Env IPAMD_IPSOURCE_AWS_WARMIPTARGET (or WARM_IP_TARGET).
	WarmIPTarget int `yaml:"warmIPTarget" env:"IPAMD_IPSOURCE_AWS_WARMIPTARGET" envAlias:"WARM_IP_TARGET" desc:"free IPs to keep attached (0: unset)"`
	// MinimumIPTarget is the fewest addresses the pool holds, free or
	// not. Default 0: no minimum (a written 0 means the same).
	// Env IPAMD_IPSOURCE_AWS_MINIMUMIPTARGET (or MINIMUM_IP_TARGET).
	MinimumIPTarget int `yaml:"minimumIPTarget" env:"IPAMD_IPSOURCE_AWS_MINIMUMIPTARGET" envAlias:"MINIMUM_IP_TARGET" desc:"IPs to hold at least (0: unset)"`
	// WarmENITarget is how many ENIs' worth of free addresses the pool
	// keeps when neither IP target is set. Default 1. 0 is used as
	// written while an IP target is set (it is ignored then); with none,
	// it is refused: the pool would never grow.
	// Env IPAMD_IPSOURCE_AWS_WARMENITARGET (or WARM_ENI_TARGET).
	WarmENITarget int `yaml:"warmENITarget" env:"IPAMD_IPSOURCE_AWS_WARMENITARGET" envAlias:"WARM_ENI_TARGET" desc:"spare ENIs' worth of free IPs when no IP target is set"`
	// EnablePrefixDelegation assigns IPv4 /28 prefixes to the ENIs' slots
	// (AssignPrivateIpAddresses with Ipv4PrefixCount) instead of single
	// secondary addresses, as the VPC CNI's ENABLE_PREFIX_DELEGATION: each
	// slot then holds 16 pod addresses. The targets still count addresses;
	// a prefix goes back to EC2 only when no address in it is held.
	// Default false.
	// Env IPAMD_IPSOURCE_AWS_ENABLEPREFIXDELEGATION (or ENABLE_PREFIX_DELEGATION).
	EnablePrefixDelegation bool `yaml:"enablePrefixDelegation" env:"IPAMD_IPSOURCE_AWS_ENABLEPREFIXDELEGATION" envAlias:"ENABLE_PREFIX_DELEGATION" desc:"assign IPv4 /28 prefixes (16 addresses a slot) instead of single secondary IPs"`
	// WarmPrefixTarget is how many prefixes' worth of free addresses (16
	// each) the pool keeps with prefix delegation when neither IP target
	// is set. Default 1. 0 is refused with prefix delegation and no IP
	// target (the pool would keep no free prefix and never grow), and
	// ignored otherwise.
	// Env IPAMD_IPSOURCE_AWS_WARMPREFIXTARGET (or WARM_PREFIX_TARGET).
	WarmPrefixTarget int `yaml:"warmPrefixTarget" env:"IPAMD_IPSOURCE_AWS_WARMPREFIXTARGET" envAlias:"WARM_PREFIX_TARGET" desc:"prefixes' worth of free IPs to keep with prefix delegation when no IP target is set"`
	// EnableIPv6 runs the pool on one IPv6 /80 prefix of the primary ENI
	// (AssignIpv6Addresses with Ipv6PrefixCount), as the VPC CNI's
	// ENABLE_IPv6: pods get IPv6 addresses only, and the prefix's 2^48
	// addresses need no growth and no warm target. Default false.
	// Env IPAMD_IPSOURCE_AWS_ENABLEIPV6 (or ENABLE_IPv6).
	EnableIPv6 bool `yaml:"enableIPv6" env:"IPAMD_IPSOURCE_AWS_ENABLEIPV6" envAlias:"ENABLE_IPv6" desc:"IPv6 pods: one /80 prefix on the primary ENI"`
	// MaxENIs caps the ENIs the node uses, primary included, below the
	// instance type's limit. Default 0: no cap below the instance type's
	// limit (a written 0 means the same; no node runs on 0 ENIs, the
	// primary counts).
	// Env IPAMD_IPSOURCE_AWS_MAXENIS.
	MaxENIs int `yaml:"maxENIs" env:"IPAMD_IPSOURCE_AWS_MAXENIS" desc:"most ENIs to use, primary included (0: the instance type's limit)"`
	// Region of the EC2 endpoint. Default "" (the instance's region, read
	// from IMDS). Env IPAMD_IPSOURCE_AWS_REGION.
	Region string `yaml:"region" env:"IPAMD_IPSOURCE_AWS_REGION" desc:"EC2 region (empty: from IMDS)"`
	// EC2Endpoint replaces the regional EC2 endpoint, for a VPC endpoint
	// or a test server. Default "" (the SDK's endpoint).
	// Env IPAMD_IPSOURCE_AWS_EC2ENDPOINT.
	EC2Endpoint string `yaml:"ec2Endpoint" env:"IPAMD_IPSOURCE_AWS_EC2ENDPOINT" desc:"EC2 API endpoint URL (empty: the SDK's)"`
	// IMDSEndpoint replaces the instance metadata endpoint. Default ""
	// (the SDK's, http://169.254.169.254).
	// Env IPAMD_IPSOURCE_AWS_IMDSENDPOINT.
	IMDSEndpoint string `yaml:"imdsEndpoint" env:"IPAMD_IPSOURCE_AWS_IMDSENDPOINT" desc:"instance metadata endpoint URL (empty: the SDK's)"`
}

// DefaultConfig returns the defaults stated on Config's fields.
func DefaultConfig() Config {
	return Config{WarmENITarget: 1, WarmPrefixTarget: 1}
}

// Tuning holds the source's intervals and retries, which ipamd reads
// under advanced.aws: knobs most operators never touch. Field comments
// give the default (DefaultTuning) and the variable, as on Config.
type Tuning struct {
	// PoolCheckInterval is how often the pool is compared with the
	// targets. Default 1s; 0s is refused (a busy loop).
	// Env IPAMD_ADVANCED_AWS_POOLCHECKINTERVAL.
	PoolCheckInterval time.Duration `yaml:"poolCheckInterval" env:"IPAMD_ADVANCED_AWS_POOLCHECKINTERVAL" desc:"how often the pool is compared with the targets"`
	// ShrinkInterval is the least time between two shrinks, so a burst
	// of pod deletions followed by creations does not return addresses to
	// EC2 only to ask for them again. Default 30s; 0s is used as
	// written: the pool shrinks as soon as it has a surplus.
	// Env IPAMD_ADVANCED_AWS_SHRINKINTERVAL.
	ShrinkInterval time.Duration `yaml:"shrinkInterval" env:"IPAMD_ADVANCED_AWS_SHRINKINTERVAL" desc:"least time between two shrinks of the pool"`
	// ResyncInterval is how often the attached ENIs are read back from
	// EC2 and every address they hold is put in the pool again, which
	// repairs the pool after a call whose outcome was unknown.
	// Default 1m; 0s is refused (EC2 would be read in a busy loop).
	// Env IPAMD_ADVANCED_AWS_RESYNCINTERVAL.
	ResyncInterval time.Duration `yaml:"resyncInterval" env:"IPAMD_ADVANCED_AWS_RESYNCINTERVAL" desc:"how often attached ENIs are re-read from EC2"`
	// LeakedENICleanupInterval is how often detached ENIs this node's
	// ipamd created are deleted (also once at start). Default 30m; 0s is
	// refused (EC2 would be listed in a busy loop).
	// Env IPAMD_ADVANCED_AWS_LEAKEDENICLEANUPINTERVAL.
	LeakedENICleanupInterval time.Duration `yaml:"leakedENICleanupInterval" env:"IPAMD_ADVANCED_AWS_LEAKEDENICLEANUPINTERVAL" desc:"how often detached ENIs this node leaked are deleted"`
	// MaxAttempts is how many times the SDK's standard retryer tries one
	// EC2 call (throttling included) before the source sees the error.
	// Default 10; 0 is refused (the SDK would read it as its own
	// default, 3). Env IPAMD_ADVANCED_AWS_MAXATTEMPTS.
	MaxAttempts int `yaml:"maxAttempts" env:"IPAMD_ADVANCED_AWS_MAXATTEMPTS" desc:"tries of one EC2 call, throttling included"`
	// MaxBackoff caps the retryer's exponential backoff with jitter.
	// Default 20s; 0s is refused (retries would hammer a throttled API).
	// Env IPAMD_ADVANCED_AWS_MAXBACKOFF.
	MaxBackoff time.Duration `yaml:"maxBackoff" env:"IPAMD_ADVANCED_AWS_MAXBACKOFF" desc:"longest backoff between EC2 retries"`
}

// DefaultTuning returns the defaults stated on Tuning's fields.
func DefaultTuning() Tuning {
	return Tuning{
		PoolCheckInterval:        time.Second,
		ShrinkInterval:           30 * time.Second,
		ResyncInterval:           time.Minute,
		LeakedENICleanupInterval: 30 * time.Minute,
		MaxAttempts:              10,
		MaxBackoff:               20 * time.Second,
	}
}

// Validate reports every invalid field, each named aws.<field>; ipamd
// prefixes "advanced.".
func (t Tuning) Validate() error {
	var errs []error
	positive := func(name string, d time.Duration, why string) {
		if d <= 0 {
			errs = append(errs, fmt.Errorf("aws.%s must be > 0, got %s: %s", name, d, why))
		}
	}
	positive("poolCheckInterval", t.PoolCheckInterval, "the pool would be checked in a busy loop")
	positive("resyncInterval", t.ResyncInterval, "EC2 would be read in a busy loop")
	positive("leakedENICleanupInterval", t.LeakedENICleanupInterval, "EC2 would be listed in a busy loop")
	positive("maxBackoff", t.MaxBackoff, "retries would hammer a throttled EC2 API")
	if t.ShrinkInterval < 0 {
		errs = append(errs, fmt.Errorf("aws.shrinkInterval must be >= 0, got %s", t.ShrinkInterval))
	}
	if t.MaxAttempts < 1 {
		errs = append(errs, fmt.Errorf("aws.maxAttempts must be >= 1, got %d: the SDK would read 0 as its own default, 3", t.MaxAttempts))
	}
	return errors.Join(errs...)
}

// Validate reports every invalid field, each named as in the config file.
func (c Config) Validate() error {
	var errs []error
	nonNegative := func(name string, v int) {
		if v < 0 {
			errs = append(errs, fmt.Errorf("aws.%s must be >= 0, got %d", name, v))
		}
	}
	nonNegative("warmIPTarget", c.WarmIPTarget)
	nonNegative("minimumIPTarget", c.MinimumIPTarget)
	nonNegative("warmENITarget", c.WarmENITarget)
	nonNegative("maxENIs", c.MaxENIs)
	nonNegative("warmPrefixTarget", c.WarmPrefixTarget)
	if c.WarmIPTarget <= 0 && c.MinimumIPTarget <= 0 && c.WarmENITarget <= 0 {
		errs = append(errs, errors.New("aws.warmIPTarget, aws.minimumIPTarget or aws.warmENITarget must be > 0, got all 0: the pool would never grow"))
	}
	if c.EnablePrefixDelegation && c.WarmIPTarget <= 0 && c.MinimumIPTarget <= 0 && c.WarmPrefixTarget <= 0 {
		errs = append(errs, fmt.Errorf("aws.warmPrefixTarget must be > 0 with aws.enablePrefixDelegation and no IP target, got %d: "+
			"the pool would keep no free prefix and never grow", c.WarmPrefixTarget))
	}
	errs = append(errs, validEndpoint("ec2Endpoint", c.EC2Endpoint), validEndpoint("imdsEndpoint", c.IMDSEndpoint))
	return errors.Join(errs...)
}

func validEndpoint(name, endpoint string) error {
	if endpoint == "" {
		return nil
	}
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("aws.%s must be an http or https URL, got %q", name, endpoint)
	}
	return nil
}
