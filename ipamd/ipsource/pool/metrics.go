package pool

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Collectors are the pool source's metrics, read from its status: claims,
// conflicts and returns since start, adopted and restored blocks, blocks
// another node claimed under addresses held here, the current blocks,
// and whether growth waits (an exhausted node answers ADD "try again
// later" while it does).
func (s *Source) Collectors() []prometheus.Collector {
	counter := func(name, help string, f func(Status) int) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: "ipamd", Subsystem: "pool", Name: name, Help: help},
			func() float64 { return float64(f(s.Status())) })
	}
	gauge := func(name, help string, f func(Status) int) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "ipamd", Subsystem: "pool", Name: name, Help: help},
			func() float64 { return float64(f(s.Status())) })
	}
	return []prometheus.Collector{
		counter("claims_total", "Blocks claimed (IPBlock creates that won) since ipamd started.", func(st Status) int { return st.Claims }),
		counter("claim_conflicts_total", "IPBlock creates answered AlreadyExists (another node holds the block) since ipamd started.",
			func(st Status) int { return st.Conflicts }),
		counter("returns_total", "Empty blocks returned (IPBlocks deleted) since ipamd started.", func(st Status) int { return st.Returns }),
		counter("adopted_total", "IPBlocks of this Node adopted at start that the checkpoint lacked.", func(st Status) int { return st.Adopted }),
		counter("restored_total", "IPBlocks claimed again since ipamd started: gone from the API server while addresses of their blocks were busy here.",
			func(st Status) int { return st.Restored }),
		gauge("foreign_blocks", "Blocks with addresses busy here that the API server records as another node's, or as nobody's while this Node is gone: another node may hand them out again.",
			func(st Status) int { return len(st.Foreign) }),
		gauge("overlapping_cidrs", "CIDRs of this node's IPPool that overlap another IPPool's: no block of them is claimed until one pool changes.",
			func(st Status) int { return len(st.Overlaps) }),
		gauge("blocks", "Blocks this node holds (current, not retiring).", func(st Status) int { return len(st.Blocks) }),
		gauge("fenced", "1 while no new address of this node's blocks is handed out because its Lease lapsed (or is not yet renewed since start), else 0.",
			func(st Status) int { return btoi(st.Fenced != "") }),
		gauge("growth_waiting", "1 while the pool cannot grow (the reason is in the log and ADD's answer), else 0.",
			func(st Status) int { return btoi(st.Waiting != "") }),
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
