// Package server is ipamd's CNI-facing API on top of the datastore: the
// lean wire framing the CNI plugin speaks (package wire: the protobuf
// messages of ipamd/api/v1 in a small frame), served on one owner-only
// unix socket by Endpoint.
//
// Every request is validated before it reaches the datastore; a bad field
// is answered with CodeInvalidArgument and a message that names it
// (attachment.ifname "eth0/x" contains '/'). The methods keep gRPC status
// codes internally, the wire codes being the same numbers; nothing serves
// gRPC on the socket (health and readiness are on the introspection HTTP
// listener, where kubelet's probes can reach them).
//
// Nothing here talks to the container runtime: ADD and DEL never wait on
// the adapter.
package server

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"net/netip"
	"strings"
	"syscall"
	"time"

	ipamdv1 "github.com/sandboxipam/sandboxipam/ipamd/api/v1"
	"github.com/sandboxipam/sandboxipam/ipamd/datastore"
	"github.com/sandboxipam/sandboxipam/ipamd/ipsource"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
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
}

// Server answers the CNI-facing methods on a datastore.
type Server struct {
	store   *datastore.Store
	log     *slog.Logger
	observe Observer
}

// New returns a Server on store.
func New(store *datastore.Store, opts Options) *Server {
	s := &Server{store: store, log: opts.Logger, observe: opts.Observe}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.observe == nil {
		s.observe = func(string, time.Duration, error) {}
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
	a, err := s.store.Assign(ctx, key, pod)
	if err != nil {
		s.log.Warn("ADD failed", slog.Any("key", key), slog.Any("pod", pod), slog.Any("error", err))
		return nil, toStatus(err)
	}
	s.log.Debug("ADD", slog.Any("key", key), slog.Any("pod", pod), slog.Any("ips", a.IPs()))
	return &ipamdv1.AddResponse{Ips: ipConfigs(a)}, nil
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
		return nil, toStatus(err)
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
		return nil, status.Errorf(codes.NotFound, "no address held for network %q sandbox %q ifname %q",
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
		return nil, toStatus(err)
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

// Status says whether ipamd can hand out an address now.
func (s *Server) Status(_ context.Context, _ *ipamdv1.StatusRequest) (resp *ipamdv1.StatusResponse, err error) {
	defer s.track("Status", time.Now(), &err)
	free, short := freeForAnADD(s.store.Ranges())
	resp = &ipamdv1.StatusResponse{Ready: true, Free: uint32(min(free, math.MaxUint32))}
	switch {
	case s.store.Unproven():
		resp.Ready, resp.Message = false, "datastore unproven (no trusted checkpoint): waiting for "+strings.Join(s.store.Proof().Waiting, "; ")
	case free == 0 && short != "":
		resp.Ready, resp.Message = false, "address pool exhausted: no free "+short+" address"
	case free == 0:
		resp.Ready, resp.Message = false, "address pool exhausted"
	}
	return resp, nil
}

// freeForAnADD is how many ADDs the pool can answer now: an ADD takes one
// address of each family (two for a dual-stack pool), so the family with
// the fewest free addresses decides; short names it when it has none in
// a dual-stack pool.
func freeForAnADD(ranges []datastore.RangeInfo) (free uint64, short string) {
	byFamily := map[string]uint64{}
	for _, r := range ranges {
		if r.Retiring {
			continue
		}
		taken := r.Assigned + r.Cooling + r.Quarantined
		byFamily[r.Family] = ipsource.SatAdd(byFamily[r.Family], r.Size-min(taken, r.Size))
	}
	first := true
	for _, family := range []string{"ipv4", "ipv6"} {
		n, ok := byFamily[family]
		if !ok {
			continue
		}
		if first || n < free {
			free, first = n, false
		}
		if n == 0 && len(byFamily) > 1 {
			short = family
		}
	}
	return free, short
}

func (s *Server) track(method string, start time.Time, err *error) {
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

// toStatus maps datastore errors onto the codes the CNI plugin branches
// on: an unproven pool, a closing store and a state disk that is full or
// read-only are conditions that clear (or that an operator clears) while
// the runtime retries, so they are Unavailable, which the plugin answers
// with CNI code 11 (try again later); exhaustion has its own code.
func toStatus(err error) error {
	var code codes.Code
	switch {
	case errors.Is(err, datastore.ErrPoolExhausted):
		code = codes.ResourceExhausted
	case errors.Is(err, datastore.ErrUnproven), errors.Is(err, datastore.ErrPoolNotReady), errors.Is(err, datastore.ErrClosed), diskCondition(err):
		code = codes.Unavailable
	case errors.Is(err, datastore.ErrInvalidKey):
		code = codes.InvalidArgument
	case errors.Is(err, context.DeadlineExceeded):
		code = codes.DeadlineExceeded
	case errors.Is(err, context.Canceled):
		code = codes.Canceled
	default:
		code = codes.Internal
	}
	return status.Error(code, err.Error())
}

// diskCondition reports whether err is the state disk being full, out of
// quota or read-only.
func diskCondition(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) || errors.Is(err, syscall.EROFS)
}
