// Command namekeyed is a deliberately broken adapter, built only by the
// conformance suite's own tests. It remembers each pod's UID and addresses
// by the pod's namespace and name, from the first sandbox it sees of that
// name, and reports them for every later sandbox of the name, as an
// adapter that caches pod identity under "namespace/name" would. A
// StatefulSet's web-0, deleted and made again, comes back under its name
// with a new UID and a new address: this adapter lists the new sandbox
// with the old pod's UID and address, and ipamd would treat a live pod's
// address as another's. Sandbox IDs, attempts and states stay right. The
// suite must fail it on recreated-pod-own-identity, and only there, on
// either base (see package brokenbase).
package main

import (
	"context"
	"net/netip"
	"slices"
	"sync"

	"github.com/sandboxipam/sandboxipam/conformance/testdata/brokenbase"
	"github.com/sandboxipam/sandboxipam/runtime"
)

// remembered is what the adapter keeps of a pod, by namespace and name.
type remembered struct {
	uid string
	ips []netip.Addr
}

// nameKeyed is the base adapter behind a cache keyed by pod name.
type nameKeyed struct {
	runtime.RuntimeAdapter
	mu    sync.Mutex
	byPod map[string]remembered
}

// ListSandboxes reports each sandbox with what was remembered of its name.
func (n *nameKeyed) ListSandboxes(ctx context.Context) ([]runtime.Sandbox, error) {
	list, err := n.RuntimeAdapter.ListSandboxes(ctx)
	if err != nil {
		return nil, err
	}
	for i := range list {
		n.recall(&list[i])
	}
	return list, nil
}

// GetSandbox reports the sandbox with what was remembered of its name.
func (n *nameKeyed) GetSandbox(ctx context.Context, id string) (runtime.Sandbox, error) {
	sb, err := n.RuntimeAdapter.GetSandbox(ctx, id)
	if err != nil {
		return sb, err
	}
	n.recall(&sb)
	return sb, nil
}

// recall remembers sb's pod on first sight of its name, and otherwise
// overwrites its UID and addresses with the remembered ones.
func (n *nameKeyed) recall(sb *runtime.Sandbox) {
	key := sb.Namespace + "/" + sb.Name
	n.mu.Lock()
	defer n.mu.Unlock()
	pod, ok := n.byPod[key]
	if !ok {
		n.byPod[key] = remembered{uid: sb.UID, ips: slices.Clone(sb.IPs)}
		return
	}
	sb.UID = pod.uid
	if len(pod.ips) > 0 && len(sb.IPs) > 0 {
		sb.IPs = slices.Clone(pod.ips)
	}
}

func main() {
	brokenbase.Serve("namekeyed", func(base runtime.RuntimeAdapter) runtime.RuntimeAdapter {
		return &nameKeyed{RuntimeAdapter: base, byPod: map[string]remembered{}}
	})
}
