package reconcile

import (
	"errors"
	"io/fs"
	"log/slog"

	"github.com/sandboxipam/sandboxipam/ipamd/datastore"
	"github.com/sandboxipam/sandboxipam/ipamd/hostlinks"
)

// A pod's network namespace is a trace of the pod, like its pod link, and
// it is only ever a reason to keep: a pod wired by another main plugin
// has no pod link of ours, but its namespace is still there while it
// lives. Its absence proves nothing: ipamd may run where it cannot see the
// host's /run/netns or PIDs, and a runtime may name a path that only its
// own mount namespace has.
//
// The namespace counts when the path the ADD named opens as a network
// namespace and, when ipamd identified it at ADD (device and inode of its
// nsfs file), is that same namespace: a /proc/PID/ns/net of a reused PID
// is another one. One it identified at ADD and cannot look at now (an
// error other than absence) counts too: it fails shut. Namespace inode
// numbers are reused by the kernel, so a new namespace at the same path
// may still be taken for the pod's; that also fails shut.

// netnsOnNode reports whether the network namespace a's ADD named is still
// on the node, and why when it is.
func (r *Reconciler) netnsOnNode(a datastore.Assignment) (bool, string) {
	return NetNSOnNode(r.cfg.NetNSIdentity, a.NetNS)
}

// NetNSOnNode reports whether the pod's network namespace ns is still on
// the node, as identify (hostlinks.NetNSIdentity) sees it, and says why
// when it is; nil identify sees nothing.
func NetNSOnNode(identify func(path string) (dev, ino uint64, err error), ns datastore.NetNS) (bool, string) {
	if ns.Path == "" || identify == nil {
		return false, ""
	}
	dev, ino, err := identify(ns.Path)
	switch {
	case err == nil && ns.Identified() && (dev != ns.Dev || ino != ns.Ino):
		return false, "" // another namespace at the pod's path
	case err == nil:
		return true, "its network namespace " + ns.Path + " is on the node"
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, hostlinks.ErrNotNetNS):
		return false, ""
	case ns.Identified():
		return true, "its network namespace " + ns.Path + ", seen at ADD, cannot be checked now (" + err.Error() + ")"
	}
	// Never identified, and cannot be opened here now either: ipamd does
	// not see it, which says nothing.
	return false, ""
}

// keptByNetNS reports whether a, absent from the listing, keeps its address
// because its network namespace is still on the node.
func (r *Reconciler) keptByNetNS(a datastore.Assignment) bool {
	on, why := r.netnsOnNode(a)
	if on {
		r.cfg.Logger.Warn("the runtime no longer lists a sandbox whose network namespace is still on the node; keeping its address",
			slog.String("sandbox_id", a.SandboxID), slog.String("ip", a.Address.IP.String()), slog.String("netns", a.NetNS.Path), slog.String("why", why))
	}
	return on
}
