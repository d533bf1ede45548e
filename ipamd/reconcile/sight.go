package reconcile

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sandboxipam/sandboxipam/ipamd/datastore"
	"github.com/sandboxipam/sandboxipam/ipamd/join"
	"github.com/sandboxipam/sandboxipam/runtime"
)

// Blindness is a property of the adapter, proven per adapter, not per
// sandbox.
//
// An adapter has shown that it sees what CNI sees once one of its
// successful listings, which started after the ADD, shows a sandbox that
// a CNI ADD gave an address (not one adopted from the runtime: that the
// adapter listed it proves nothing). It lists this node's pods, and its
// listing is not older than the ADD. The ADD may predate this ipamd: a
// node whose pool leaks filled before a restart has no free address for
// a new ADD to prove anything with, while its live pods are still
// there to be listed. Until then, any assignment made by ADD that no
// listing has shown, past the grace, means the adapter may be blind or
// looking at another runtime (Docker's own containerd lists no pod at
// all, successfully), and the pass releases nothing.
//
// An adapter that has shown it is not made blind by a sandbox that lived
// and died between two listings (a crash-looping pod whose DEL was lost):
// such a never-listed assignment, past the grace, is released once the
// adapter, asked about it directly, says it is gone (GetSandbox:
// ErrNotFound), or, for a pod the plugin wired itself, the node has no
// pod link for it. It is blind after all, and nothing is released, when
// the node still has the missing sandbox's pod link or the network
// namespace its ADD named (see netns.go), or GetSandbox finds a sandbox
// its listing left out; it must then show it again.

// maxLookups bounds the GetSandbox calls of one pass; the rest wait for
// the next pass.
const maxLookups = 256

// sight is what the reconciler knows of its adapter's sight.
type sight struct {
	// sees: a listing showed a sandbox CNI added.
	sees bool
	// proof names that sandbox, for the log and ipamctl adapter.
	proof string
}

// earnSight notes whether this listing shows a sandbox that a CNI ADD,
// made before the listing started, gave an address. An adopted
// assignment is recorded as listed when it was made (ListedAt equals
// AssignedAt), and does not count.
func (r *Reconciler) earnSight(view join.View, started time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sight.sees {
		return
	}
	for _, a := range view.Assignments {
		adopted := !a.ListedAt.IsZero() && a.ListedAt.Equal(a.AssignedAt)
		if a.PodListed() && !adopted && a.AssignedAt.Before(started) {
			r.sight = sight{sees: true, proof: a.SandboxID}
			r.cfg.Logger.Info("the adapter sees what CNI sees: its listing shows a sandbox CNI added",
				"sandbox_id", a.SandboxID)
			return
		}
	}
}

// Sees reports whether the adapter has shown that it sees what CNI sees,
// and the sandbox that showed it.
func (r *Reconciler) Sees() (bool, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sight.sees, r.sight.proof
}

// settleMissing decides what to do with the never-listed assignments
// past the grace: it returns those proven gone, or why the adapter is
// blind (then nothing is released).
func (r *Reconciler) settleMissing(ctx context.Context, missing []datastore.Assignment, view join.View, n node) (gone []datastore.Assignment, blind error) {
	if sees, _ := r.Sees(); !sees {
		return nil, fmt.Errorf("%w: none of its listings has shown a sandbox CNI added", ErrAdapterBlind)
	}
	for j, a := range missing {
		if i, ok := view.Assigned(a.Network, a.SandboxID, a.IfName); ok && view.Assignments[i].LinkFound {
			return nil, r.loseSight(fmt.Errorf("%w: it does not list sandbox %s, whose pod link is on the node", ErrAdapterBlind, a.SandboxID))
		}
		if on, why := r.netnsOnNode(a); on {
			return nil, r.loseSight(fmt.Errorf("%w: it does not list sandbox %s, and %s", ErrAdapterBlind, a.SandboxID, why))
		}
		if j >= maxLookups {
			continue
		}
		_, err := r.adapter.GetSandbox(ctx, a.SandboxID)
		switch {
		case err == nil:
			return nil, r.loseSight(fmt.Errorf("%w: its listing leaves out sandbox %s, which GetSandbox finds", ErrAdapterBlind, a.SandboxID))
		case errors.Is(err, runtime.ErrNotFound):
			gone = append(gone, a)
		case n.err == nil && r.noLinkMeansGone(a):
			// The plugin wired this pod, and the node has no trace of it.
			gone = append(gone, a)
		default:
			r.cfg.Logger.Warn("a sandbox CNI added was never listed and the adapter cannot say whether it is gone; keeping its address",
				"sandbox_id", a.SandboxID, "error", err)
		}
	}
	return gone, nil
}

// noLinkMeansGone reports whether a missing pod link is evidence for a:
// the plugin wired it itself (as it said on ADD, or, when it did not say,
// as the config says of every pod).
func (r *Reconciler) noLinkMeansGone(a datastore.Assignment) bool {
	switch a.Wiring {
	case datastore.WiringMainPlugin:
		return true
	case datastore.WiringIPAMOnly:
		return false
	}
	return r.cfg.PluginWiresEveryPod
}

// loseSight makes the adapter prove again that it sees what CNI sees.
func (r *Reconciler) loseSight(why error) error {
	r.mu.Lock()
	r.sight = sight{}
	r.mu.Unlock()
	return why
}
