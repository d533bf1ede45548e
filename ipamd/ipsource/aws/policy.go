package aws

// poolCounts is the pool as the targets see it: only the addresses of the
// ENIs this source manages.
type poolCounts struct {
	total int // addresses in the pool
	free  int // neither held by a pod nor cooling: what an ADD can get now
}

// shortfall is how many addresses the pool lacks to meet the targets.
func (c targets) shortfall(p poolCounts, perENI int) int {
	if c.ipTargetsSet() {
		return max(c.WarmIPTarget-p.free, c.MinimumIPTarget-p.total, 0)
	}
	if c.EnablePrefixDelegation {
		// WARM_PREFIX_TARGET in addresses: whole prefixes' worth free.
		return max(c.warmPrefixes()*prefixSize-p.free, 0)
	}
	return max(c.WarmENITarget*perENI-p.free, 0)
}

// surplus is how many free addresses can go back to EC2 with the targets
// still met. Only the IP targets shrink by address; with WarmENITarget
// alone the pool shrinks by whole ENIs (see canReleaseENI), as in the VPC
// CNI, so it never calls UnassignPrivateIpAddresses.
func (c targets) surplus(p poolCounts) int {
	if !c.ipTargetsSet() {
		return 0
	}
	return max(min(p.free-c.WarmIPTarget, p.total-c.MinimumIPTarget), 0)
}

// canReleaseENI reports whether an ENI whose eniFree addresses are all
// free can be detached with the targets still met afterwards.
func (c targets) canReleaseENI(p poolCounts, eniFree, perENI int) bool {
	after := poolCounts{total: p.total - eniFree, free: p.free - eniFree}
	if c.ipTargetsSet() {
		return c.surplus(p) >= eniFree && c.shortfall(after, perENI) == 0
	}
	return c.shortfall(after, perENI) == 0
}

// growsByENI reports whether growth fills whole ENIs (WarmENITarget alone)
// rather than asking for exactly the shortfall.
func (c targets) growsByENI() bool { return !c.ipTargetsSet() && !c.EnablePrefixDelegation }
