package aws

import "github.com/sandboxipam/sandboxipam/ipamd/ipsource/aws/awsconf"

// targets is the source's settings (package awsconf owns them) with the
// rules that read them: the VPC CNI's arithmetic of the three targets
// (policy.go).
type targets struct{ awsconf.Config }

// prefixSize is how many addresses one delegated IPv4 prefix (/28) holds.
const prefixSize = 16

// warmPrefixes is WarmPrefixTarget, 1 when 0, as in the VPC CNI, for
// callers that build a Config without awsconf.DefaultConfig: ipamd's
// config refuses a written 0 where it would decide (awsconf.Config.Validate).
func (c targets) warmPrefixes() int {
	if c.WarmPrefixTarget > 0 {
		return c.WarmPrefixTarget
	}
	return 1
}

// ipTargetsSet reports whether the IP targets decide, as in the VPC CNI.
func (c targets) ipTargetsSet() bool { return c.WarmIPTarget > 0 || c.MinimumIPTarget > 0 }
