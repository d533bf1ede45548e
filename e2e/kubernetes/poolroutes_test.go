package kubernetes

import (
	"context"
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/internal/testsupport"
)

// checkBlockRoutes: with components/routes beside components/pool, every
// node holds, of ipamd's routes, exactly one per other node's podCIDR and
// one per other node's IPBlock, via that node's address of the family
// (blocks come and go with pods, so each try reads them afresh). Then TCP
// runs between a pod on node 1 and one on node 3 both ways, by addresses
// that are all the pool's: only the block routes carry it.
func (c *cluster) checkBlockRoutes(t *testing.T, state clusterState) {
	t.Helper()
	for _, n := range c.nodes {
		testsupport.WaitFor(t, 2*time.Minute, n.name+"'s routes to the other nodes' podCIDRs and IPBlocks", func(ctx context.Context) error {
			bs, err := c.ipBlocks(ctx)
			if err != nil {
				return err
			}
			var want []string
			for _, m := range c.nodes {
				if m == n {
					continue
				}
				cidrs := state.nodes[m.name].CIDRs
				want = append(want, cidrs[0].String()+" via "+m.v4.String(), cidrs[1].String()+" via "+m.v6.String())
				for _, b := range bs {
					if b.Spec.NodeName != m.name {
						continue
					}
					p, err := b.Spec.Prefix()
					if err != nil {
						return err
					}
					via := m.v6
					if p.Addr().Is4() {
						via = m.v4
					}
					want = append(want, p.String()+" via "+via.String())
				}
			}
			return n.routesEqual(ctx, want)
		})
	}
	first, third := state.pods[state.onNode(c.nodes[0].name)[0]], state.pods[state.onNode(c.nodes[2].name)[0]]
	tcpBetween(t, first, third)
	c.logf(t, "every node routes to the others' IPBlocks; TCP between %s (%v) and %s (%v) both ways, both families",
		first.Node, first.IPs, third.Node, third.IPs)
}
