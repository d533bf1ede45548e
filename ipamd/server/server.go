// Package server is ipamd's CNI-facing API on top of the datastore: the
// lean wire framing the CNI plugin speaks (package wire: the protobuf
// messages of ipamd/api/v1 in a small frame), served on one owner-only
// unix socket by Endpoint.
//
// Every request is validated before it reaches the datastore; a bad field
// is answered with CodeInvalidArgument and a message that names it
// (attachment.ifname "eth0/x" contains '/'). The methods return wire
// errors (*wire.Error): package apierr's one table says which code each
// store or server error gets, and what the plugin prints for it. Health
// and readiness are on the introspection HTTP listener, where kubelet's
// probes can reach them.
//
// Nothing here talks to the container runtime: ADD and DEL never wait on
// the adapter.
//
// See docs/architecture.md for where this package sits and the life of an
// ADD, a DEL, a reconcile pass and a restart through it.
package server

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"net/netip"
	"strings"
	"time"

	"github.com/sandboxipam/sandboxipam/ipamd/api/apierr"
	ipamdv1 "github.com/sandboxipam/sandboxipam/ipamd/api/v1"
	"github.com/sandboxipam/sandboxipam/ipamd/datastore"
)

// Observer receives the duration and outcome of every call, by method name
// ("Add", "Del", ...). It is the metrics hook; it must not block.
type Observer func(method string, took time.Duration, err error)

// Options configure New.
type Options struct {
	// Logger receives the server's log; nil discards it.
	Logger *slog.Logger
	// Observe, when set, is called after every call.
	Observe Observer
	// RefuseIPAMOnly, when set, refuses an ADD from the plugin running as
	// IPAM only: the config says the plugin wires every pod (its pod link
	// then proves a pod's address), and such a pod would have none. The
	// string is the config's reason, quoted in the refusal.
	RefuseIPAMOnly string
	// OnWiringRefused, when set, is called for every ADD RefuseIPAMOnly
	// refused (a metrics hook).
	OnWiringRefused func()
	// Readiness, when set, answers the STATUS verb: whether a new pod
	// would get an address now, and every reason it would not. The daemon
	// sets it to the one function /readyz and ipamctl ask too; nil asks
	// the store alone.
	Readiness func() datastore.Readiness
	// NetNSIdentity, when set, identifies the network namespace an ADD
	// names (hostlinks.NetNSIdentity), recorded with the assignment so
	// that a later namespace at the same path is not taken for the pod's.
	// Nil, or an error (ipamd may not see the host's namespaces), records
	// the path alone.
	NetNSIdentity func(path string) (dev, ino uint64, err error)
}

// Server answers the CNI-facing methods on a datastore.
type Server struct {
	store   *datastore.Store
	log     *slog.Logger
	observe Observer
	opts    Options
	// readiness is Options.Readiness, or the store's.
	readiness func() datastore.Readiness
}

// New returns a Server on store.
func New(store *datastore.Store, opts Options) *Server {
	s := &Server{store: store, log: opts.Logger, observe: opts.Observe, opts: opts}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.observe == nil {
		s.observe = func(string, time.Duration, error) {}
	}
	s.readiness = opts.Readiness
	if s.readiness == nil {
		s.readiness = store.Readiness
	}
	return s
}

// Add assigns an address to the attachment, or returns the one it has.
func (s *Server) Add(ctx context.Context, req *ipamdv1.AddRequest) (resp *ipamdv1.AddResponse, err error) {
	defer s.track("Add", time.Now(), &err)
	key, pod, err := validateAdd(req)
	if err != nil {
		return nil, err
	}
	wiring, err := s.wiring(req.GetWiring())
	if err != nil {
		s.log.Error("ADD refused: the CNI plugin runs as IPAM only on a node configured as the plugin wiring every pod",
			slog.Any("key", key), slog.Any("pod", pod), slog.String("config", s.opts.RefuseIPAMOnly))
		return nil, err
	}
	a, err := s.store.AssignFrom(ctx, key, pod, datastore.Origin{Wiring: wiring, NetNS: s.netns(req.GetNetns())})
	if err != nil {
		s.log.Warn("ADD failed", slog.Any("key", key), slog.Any("pod", pod), slog.Any("error", err))
		return nil, err
	}
	s.log.Debug("ADD", slog.Any("key", key), slog.Any("pod", pod), slog.Any("ips", a.IPs()))
	return &ipamdv1.AddResponse{Ips: ipConfigs(a)}, nil
}

// wiring maps the request's Wiring onto the datastore's, refusing IPAM
// only when the config says the plugin wires every pod.
func (s *Server) wiring(w ipamdv1.Wiring) (datastore.Wiring, error) {
	switch w {
	case ipamdv1.Wiring_WIRING_MAIN_PLUGIN:
		return datastore.WiringMainPlugin, nil
	case ipamdv1.Wiring_WIRING_IPAM_ONLY:
		if s.opts.RefuseIPAMOnly == "" {
			return datastore.WiringIPAMOnly, nil
		}
		if s.opts.OnWiringRefused != nil {
			s.opts.OnWiringRefused()
		}
		return "", fmt.Errorf("%w: the sandboxipam CNI plugin runs as IPAM only (an \"ipam\" section of another main plugin), but ipamd is configured as the plugin wiring every pod (%s): "+
			"set podLinks.podWiring to ipamOnly (and empty cni.confListPath), or make sandboxipam the main plugin", apierr.ErrWiringRefused, s.opts.RefuseIPAMOnly)
	}
	return datastore.WiringUnknown, nil
}

// netns is the pod's network namespace as the ADD names it, identified
// when it can be opened here.
func (s *Server) netns(path string) datastore.NetNS {
	ns := datastore.NetNS{Path: path}
	if path == "" || s.opts.NetNSIdentity == nil {
		return ns
	}
	dev, ino, err := s.opts.NetNSIdentity(path)
	if err != nil {
		s.log.Debug("the ADD's network namespace cannot be identified here; recording its path alone",
			slog.String("netns", path), slog.Any("error", err))
		return ns
	}
	ns.Dev, ns.Ino = dev, ino
	return ns
}

// Del releases the attachment's address. An attachment ipamd holds nothing
// for succeeds with Released false: CNI DEL must be idempotent.
func (s *Server) Del(ctx context.Context, req *ipamdv1.DelRequest) (resp *ipamdv1.DelResponse, err error) {
	defer s.track("Del", time.Now(), &err)
	key, err := attachmentKey("attachment", req.GetAttachment())
	if err != nil {
		return nil, err
	}
	a, found, err := s.store.Release(ctx, key)
	if err != nil {
		s.log.Warn("DEL failed", slog.Any("key", key), slog.Any("error", err))
		return nil, err
	}
	if !found {
		s.log.Info("DEL of an attachment ipamd holds nothing for; nothing to release", slog.Any("key", key))
		return &ipamdv1.DelResponse{Released: false}, nil
	}
	s.log.Debug("DEL", slog.Any("key", key), slog.Any("ips", a.IPs()))
	return &ipamdv1.DelResponse{Released: true}, nil
}

// Check returns what ipamd holds for the attachment, NotFound if nothing.
func (s *Server) Check(_ context.Context, req *ipamdv1.CheckRequest) (resp *ipamdv1.CheckResponse, err error) {
	defer s.track("Check", time.Now(), &err)
	key, err := attachmentKey("attachment", req.GetAttachment())
	if err != nil {
		return nil, err
	}
	a, ok := s.store.Lookup(key)
	if !ok {
		return nil, fmt.Errorf("%w for network %q sandbox %q ifname %q", apierr.ErrNotHeld,
			key.Network, key.SandboxID, key.IfName)
	}
	return &ipamdv1.CheckResponse{Ips: ipConfigs(a)}, nil
}

// GC releases every attachment of the network that is not listed valid.
func (s *Server) GC(ctx context.Context, req *ipamdv1.GCRequest) (resp *ipamdv1.GCResponse, err error) {
	defer s.track("GC", time.Now(), &err)
	keep, err := validateGC(req)
	if err != nil {
		return nil, err
	}
	released, err := s.store.GC(ctx, req.GetNetwork(), keep)
	if err != nil {
		return nil, err
	}
	resp = &ipamdv1.GCResponse{Released: make([]*ipamdv1.Attachment, 0, len(released))}
	for _, a := range released {
		resp.Released = append(resp.Released, &ipamdv1.Attachment{Network: a.Network, SandboxId: a.SandboxID, Ifname: a.IfName})
	}
	if len(released) > 0 {
		s.log.Info("GC released attachments", slog.String("network", req.GetNetwork()), slog.Int("released", len(released)))
	}
	return resp, nil
}

// Status says whether ipamd can hand out an address to a new pod now, and
// when not, every reason: the answer of Options.Readiness (the daemon's,
// which asks the store and adds the socket and the conflist), or of the
// store alone. It is the same answer /readyz and ipamctl give.
func (s *Server) Status(_ context.Context, _ *ipamdv1.StatusRequest) (resp *ipamdv1.StatusResponse, err error) {
	defer s.track("Status", time.Now(), &err)
	r := s.readiness()
	return &ipamdv1.StatusResponse{
		Ready:   r.Ready(),
		Free:    uint32(min(r.Free, math.MaxUint32)),
		Message: strings.Join(r.Reasons, "; "),
	}, nil
}

// track observes a call and turns its error into the wire error it is
// answered with (apierr's table), in this one place for every method.
func (s *Server) track(method string, start time.Time, err *error) {
	if *err != nil {
		*err = apierr.ToWire(*err)
	}
	s.observe(method, time.Since(start), *err)
}

// ipConfigs renders an assignment's addresses (one per family, IPv4
// first: two for a dual-stack pod) as the API's CIDR-notation addresses.
func ipConfigs(a datastore.Assignment) []*ipamdv1.IPConfig {
	all := a.All()
	out := make([]*ipamdv1.IPConfig, 0, len(all))
	for _, addr := range all {
		bits := addr.Subnet.Bits()
		if bits < 0 {
			bits = addr.IP.BitLen()
		}
		c := &ipamdv1.IPConfig{Address: netip.PrefixFrom(addr.IP, bits).String()}
		if addr.Gateway.IsValid() {
			c.Gateway = addr.Gateway.String()
		}
		out = append(out, c)
	}
	return out
}
