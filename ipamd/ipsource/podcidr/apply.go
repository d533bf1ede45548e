package podcidr

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/sandboxipam/sandboxipam/ipamd/datastore"
	"github.com/sandboxipam/sandboxipam/ipamd/ipsource"
	"github.com/sandboxipam/sandboxipam/ipamd/ipsource/static"
)

// apply makes the pool follow one observed state of the Node.
func (s *Source) apply(ctx context.Context, ev nodeEvent) error {
	uid := string(ev.node.UID)
	var cidrs []netip.Prefix
	if ev.deleted {
		s.log.Warn("Node deleted: its ranges retire (the controller may give them to another node); the pool waits for the Node to register again",
			slog.String("node", s.cfg.NodeName), slog.String("uid", uid))
		uid = ""
	} else {
		var err error
		if cidrs, err = PodCIDRs(ev.node); err != nil {
			return err
		}
	}
	rec, had := s.store.NodeRecord()
	if had && rec.Name == s.cfg.NodeName && rec.UID == uid && slices.Equal(rec.PodCIDRs, cidrs) {
		s.recordApplied(uid, cidrs)
		return nil
	}
	if len(cidrs) == 0 && had && rec.UID == uid && !ev.deleted {
		// spec.podCIDRs never goes from set to empty on one Node.
		return nil
	}
	if len(cidrs) == 0 {
		s.store.SetPoolWaiting(s.waiting())
	}
	nr := datastore.NodeRanges{Group: Group, Name: s.cfg.NodeName, UID: uid, Current: blocks(cidrs)}
	if err := s.store.SetNodeRanges(ctx, nr); err != nil {
		return fmt.Errorf("podCIDR source: set the ranges of Node %s: %w", s.cfg.NodeName, err)
	}
	s.recordApplied(uid, cidrs)
	if had && rec.UID != "" && rec.UID != uid && uid != "" {
		s.log.Warn("Node registered again under its name: its new ranges replace the old; held old addresses stay held until their pods go",
			slog.String("node", s.cfg.NodeName), slog.String("old_uid", rec.UID), slog.String("uid", uid),
			slog.Any("old_podCIDRs", rec.PodCIDRs), slog.Any("podCIDRs", cidrs))
	}
	if len(cidrs) == 0 {
		s.log.Warn("waiting for the Node's spec.podCIDRs: no address is handed out until kube-controller-manager (--allocate-node-cidrs) assigns them",
			slog.String("node", s.cfg.NodeName), slog.String("uid", uid))
	} else {
		s.log.Info("pool ranges from the Node's spec.podCIDRs", slog.String("node", s.cfg.NodeName),
			slog.String("uid", uid), slog.Any("podCIDRs", cidrs))
	}
	s.opts.OnChange()
	return nil
}

// PodCIDRs reads a Node's spec.podCIDRs (spec.podCIDR when only that is
// set), masked; an unparsable one is an error naming it.
func PodCIDRs(n *corev1.Node) ([]netip.Prefix, error) {
	texts := n.Spec.PodCIDRs
	if len(texts) == 0 && n.Spec.PodCIDR != "" {
		texts = []string{n.Spec.PodCIDR}
	}
	out := make([]netip.Prefix, 0, len(texts))
	for i, t := range texts {
		p, err := netip.ParsePrefix(t)
		if err != nil {
			return nil, fmt.Errorf("podCIDR source: Node %s spec.podCIDRs[%d] %q is not a CIDR", n.Name, i, t)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// blocks turns prefixes into pool blocks under the static rules.
func blocks(ps []netip.Prefix) []ipsource.Range {
	out := make([]ipsource.Range, 0, len(ps))
	for _, p := range ps {
		out = append(out, static.Block(p, Group))
	}
	return out
}

func (s *Source) recordApplied(uid string, cidrs []netip.Prefix) {
	texts := make([]string, len(cidrs))
	for i, p := range cidrs {
		texts[i] = p.String()
	}
	waiting := ""
	if len(cidrs) == 0 {
		waiting = s.waiting()
	}
	s.setStatus(func(st *Status) { st.UID, st.PodCIDRs, st.Waiting = uid, texts, waiting })
}

func (s *Source) setStatus(f func(*Status)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(&s.status)
}

// Status reports the source's view of its Node.
func (s *Source) Status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.status
	st.PodCIDRs = slices.Clone(st.PodCIDRs)
	return st
}
