// Package pool is the IP source of a cluster pool: the node claims address
// blocks of an IPPool through the Kubernetes API server as it needs them,
// and returns them when it no longer does (ipSource.type "pool").
//
// A claim is the creation of the block's IPBlock, whose name is the
// block's canonical CIDR, so the API server's create-if-absent is the
// atomic claim (AlreadyExists: another node holds it, try the next). A
// block is claimed only when a family's free addresses fall below
// lowWatermark, and it is recorded in ipamd's checkpoint (the node record
// of datastore.SetNodeRanges, which the node source also uses) before an
// ADD can get an address of it. A block is returned (deleted with its
// UID and resourceVersion as preconditions) only when it has been empty
// for returnGrace and its family keeps more than highWatermark free
// addresses, and at least lowWatermark without it.
//
// Nothing here is on the CNI ADD or DEL path: the datastore hands out
// addresses of the recorded blocks, and this source only compares the
// pool's usage with the watermarks every interval. With the API server
// down, ADD and DEL go on inside the claimed blocks (the checkpoint has
// them); only growth waits, and an ADD that finds no free address is
// answered "try again later" (CNI code 11) naming the wait
// (datastore.SetGrowthWaiting).
//
// At start, blocks whose spec.nodeUID is this Node's UID are adopted: a
// crash between the create and the record leaks nothing. Every pass, a
// block whose IPBlock has gone from the API server retires, and is
// claimed again while any of its addresses is busy here, so no other
// node can claim it and hand those addresses out again (guard.go).
//
// The informers watch every IPPool (a few objects), this node's IPBlocks
// (label-selected by v1alpha1.NodeLabel) and this Node (field-selected).
//
// Geometry (issue 37). A node claims only from its pool when the pool's
// spec.nodeSelector selects its Node, and never from a CIDR that overlaps
// another IPPool's (said, Status.Overlaps, ipamd_pool_overlapping_cidrs).
// A block no longer inside the pool's CIDRs at its block size (a CIDR
// removed from spec.cidrs: the way to retire one) retires: nothing new
// is handed out of it, and its IPBlock is deleted once its addresses are
// all free. IPBlocks of this Node's UID in a pool it no longer uses are
// deleted the same way. A claim creates no block overlapping any block
// it can see (its datastore's and the informer's), but it sees only its
// own: two nodes claiming overlapping blocks of different sizes at once
// would both win, since create-if-absent guards only equal names. What
// closes that is geometry the API server holds: a pool's block size is
// fixed once set (CRD rule), so one pool's blocks never overlap; a claim
// by ipamd overlapping another pool's CIDRs is refused by admission
// (components/pool), and overlapping pools are claimed from by no node.
// A pool's CIDRs cannot move under its blocks either: admission
// (components/pool/pool-admission.yaml) refuses to delete a pool, drop a
// CIDR or a family, or re-create it at another size while a block of it
// exists, and any pool a CIDR overlapping another pool's block. A CIDR
// retires through spec.*.retiringCIDRs: nothing is claimed there, this
// source retires its blocks in it (retireOutside), and it leaves once
// they are gone (docs/cluster.md "Retiring a CIDR").
//
// See docs/architecture.md for where this package sits and the life of an
// ADD, a DEL, a reconcile pass and a restart through the daemon.
package pool

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net/netip"
	"slices"
	"sync"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"

	"github.com/sandboxipam/sandboxipam/ipamd/datastore"
	"github.com/sandboxipam/sandboxipam/ipamd/ipsource"
	"github.com/sandboxipam/sandboxipam/ipamd/ipsource/pool/lease"
	"github.com/sandboxipam/sandboxipam/ipamd/ipsource/pool/poolconf"
	"github.com/sandboxipam/sandboxipam/ipamd/ipsource/static"
)

// Group is the pool group of the pool source's blocks.
const Group = "pool"

// maxProbes bounds the creates one claim tries before it waits for the
// next pass, so a full pool costs a bounded number of requests.
const maxProbes = 64

// Store is what the pool source needs of the datastore.
type Store interface {
	NodeRecord() (datastore.NodeRecord, bool)
	SetNodeRanges(ctx context.Context, nr datastore.NodeRanges) error
	SetPoolWaiting(why string)
	SetGrowthWaiting(why string)
	SetFenced(why string)
	RemoveRange(ctx context.Context, prefix netip.Prefix) (bool, error)
	Ranges() []datastore.RangeInfo
	Assignments() []datastore.Assignment
	Unproven() bool
}

// Options are the pool source's non-config inputs.
type Options struct {
	// Logger; nil discards.
	Logger *slog.Logger
	// OnChange is called after the pool's blocks changed; nil for none.
	OnChange func()
	// Now is the clock of the return grace; nil is time.Now.
	Now func() time.Time
	// Tick, when set, replaces the interval's ticker: a pass runs on each
	// receive (tests drive passes with it).
	Tick <-chan time.Time
	// OnClaim, when set, is called after each pass that claimed blocks
	// (the scale benchmark's figures).
	OnClaim func(Claim)
	// LeaseClock is the monotonic clock of this ipamd's Lease renews and
	// fence (package lease); the real one when nil.
	LeaseClock clock.WithTicker
	// LeaseKube writes the Lease; nil is the source's own client (tests
	// that count the source's requests pass another).
	LeaseKube kubernetes.Interface
	// AliveAddresses are where this ipamd answers the reclaimer's alive
	// probe, recorded in its Lease (package lease); nil for none.
	AliveAddresses []netip.AddrPort
}

// Claim is one pass's claims: the blocks won, the time from the first
// create to the record on disk, and the creates answered AlreadyExists on
// the way.
type Claim struct {
	Blocks    []netip.Prefix
	Took      time.Duration
	Conflicts int
}

// Source claims and returns the node's blocks.
type Source struct {
	cfg      poolconf.Config
	nodeName string
	kube     kubernetes.Interface
	dyn      dynamic.Interface
	store    Store
	opts     Options
	log      *slog.Logger

	nodes, pools, blocks cache.SharedIndexInformer

	// renewer renews this ipamd's Lease and raises fence when it lapses.
	renewer *lease.Renewer
	fence   *fence
	// events records Events on this Node (nil before Run).
	events events.EventRecorder

	// Owned by the run loop.
	uid        string
	current    []netip.Prefix
	adopted    bool
	emptySince map[netip.Prefix]time.Time
	// full holds, per family, a failed probe of a full pool until its
	// backoff ends.
	full map[string]fullPool
	// cursor is, per family, where in the probe order the next claim
	// starts.
	cursor map[string]int

	mu     sync.Mutex
	status Status
	// unseen holds the blocks this source created whose IPBlock the
	// informer has not delivered yet: missing from its cache, they are
	// not gone (guard asks the API server only about the others, so a
	// claim costs its create and nothing more). A failed watch clears it
	// (watchFailed).
	unseenMu sync.Mutex
	unseen   map[netip.Prefix]bool
	passes   chan struct{}
}

// Status is the source's view for introspection and tests.
type Status struct {
	Pool    string   `json:"pool"`
	Node    string   `json:"node"`
	UID     string   `json:"uid,omitempty"`
	Blocks  []string `json:"blocks"`
	Synced  bool     `json:"synced"`
	Waiting string   `json:"waiting,omitempty"`
	// Claims, Conflicts and Returns count creates that won, creates
	// answered AlreadyExists, and blocks given back, since start.
	Claims    int `json:"claims"`
	Conflicts int `json:"conflicts"`
	Returns   int `json:"returns"`
	Adopted   int `json:"adopted"`
	// Restored counts IPBlocks claimed again since start: gone from the
	// API server while addresses of their blocks were busy here.
	Restored int `json:"restored"`
	// FenceLiftWrites counts the IPBlock updates sent before a fence lift
	// (writeBlocks), since start: one per held block for every lift, the
	// only writes besides claims and returns.
	FenceLiftWrites int `json:"fenceLiftWrites"`
	// Foreign maps each block with busy addresses here that the API
	// server records as another node's to that node, or to "" when it
	// records none while this Node is gone (see guard).
	Foreign map[string]string `json:"foreign,omitempty"`
	// Overlaps names each CIDR of the pool that overlaps another
	// IPPool's: no block of it is claimed.
	Overlaps  []string `json:"overlaps,omitempty"`
	LastError string   `json:"lastError,omitempty"`
	// Fenced, while set, is why no new address of the blocks is handed
	// out: this ipamd's Lease lapsed (package lease).
	Fenced string `json:"fenced,omitempty"`
}

// New checks cfg. kube reads the Node; dyn the IPPool and IPBlocks.
func New(cfg poolconf.Config, nodeName string, kube kubernetes.Interface, dyn dynamic.Interface, store Store, opts Options) (*Source, error) {
	if nodeName == "" {
		return nil, fmt.Errorf("pool source: the node name is empty (ipSource.nodeName, NODE_NAME)")
	}
	if err := cfg.Validate("ipSource.pool"); err != nil {
		return nil, err
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.OnChange == nil {
		opts.OnChange = func() {}
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	s := &Source{cfg: cfg, nodeName: nodeName, kube: kube, dyn: dyn, store: store, opts: opts, fence: &fence{store: store},
		log: opts.Logger, emptySince: map[netip.Prefix]time.Time{}, full: map[string]fullPool{}, cursor: map[string]int{}, unseen: map[netip.Prefix]bool{}, passes: make(chan struct{}, 1),
		status: Status{Pool: cfg.Pool, Node: nodeName, Blocks: []string{}}}
	leaseKube := opts.LeaseKube
	if leaseKube == nil {
		leaseKube = kube
	}
	r, err := lease.New(leaseKube, lease.Options{Namespace: cfg.Lease.Namespace, Node: nodeName, RenewInterval: cfg.Lease.RenewInterval,
		FenceAfter: cfg.Lease.FenceAfter, Clock: opts.LeaseClock, Logger: opts.Logger, OnFence: s.fenced, AliveAddresses: opts.AliveAddresses})
	if err != nil {
		return nil, fmt.Errorf("pool source: %w", err)
	}
	s.renewer = r
	return s, nil
}

// fenced raises the fence when the Lease lapsed, and says so as an Event.
func (s *Source) fenced(why string) {
	s.fence.raise(why)
	s.event(EventFenced, "No new address of node %s's blocks until its Lease is renewed and its blocks read again: %s", s.nodeName, why)
}

// Name is "pool".
func (s *Source) Name() string { return Group }

// recordName is the node record's name: the pool's and the node's, so a
// record the node source wrote is never read as blocks, nor the reverse.
func (s *Source) recordName() string { return "ippool/" + s.cfg.Pool + "/node/" + s.nodeName }

// Restore fills the pool from the checkpoint's record of the claimed
// blocks, so ADD and DEL work before (or without) the API server. It
// reports whether the record had a block.
func (s *Source) Restore(ctx context.Context) (bool, error) {
	s.fence.raise(fmt.Sprintf("this ipamd has not yet renewed its Lease %s and read its blocks from the API server since it started (nothing says how long it was away)",
		s.renewer.Name()))
	s.store.SetPoolWaiting(s.waitingFirst())
	s.store.SetGrowthWaiting(s.growthWhy("the IPPool, this Node and its IPBlocks to be listed"))
	rec, ok := s.store.NodeRecord()
	if !ok || rec.Name != s.recordName() {
		return false, nil
	}
	nr := datastore.NodeRanges{Group: Group, Name: rec.Name, UID: rec.UID,
		Current: toRanges(rec.PodCIDRs), Retiring: toRanges(rec.Retiring)}
	if err := s.store.SetNodeRanges(ctx, nr); err != nil {
		return false, fmt.Errorf("pool source: restore the blocks of IPPool %s from the checkpoint: %w", s.cfg.Pool, err)
	}
	s.uid, s.current = rec.UID, rec.PodCIDRs
	s.renewer.SetUID(rec.UID)
	s.publish()
	s.log.Info("pool blocks restored from the checkpoint", slog.String("pool", s.cfg.Pool),
		slog.String("uid", rec.UID), slog.Any("blocks", rec.PodCIDRs), slog.Any("retiring", rec.Retiring))
	return len(rec.PodCIDRs) > 0, nil
}

func (s *Source) waitingFirst() string {
	return fmt.Sprintf("a first block of IPPool %s, claimed through the API server", s.cfg.Pool)
}

func (s *Source) growthWhy(reason string) string {
	return fmt.Sprintf("a new block of IPPool %s: %s", s.cfg.Pool, reason)
}

// toRanges turns blocks into pool ranges under the static rules (an IPv4
// block leaves out its first and last address), as the node source does
// with a podCIDR: each block is a subnet the plugin routes on its own.
func toRanges(ps []netip.Prefix) []ipsource.Range {
	out := make([]ipsource.Range, 0, len(ps))
	for _, p := range ps {
		out = append(out, static.Block(p, Group))
	}
	return out
}

// Status reports the source's view.
func (s *Source) Status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.status
	st.Blocks = append([]string(nil), st.Blocks...)
	st.Foreign = maps.Clone(st.Foreign)
	st.Overlaps = slices.Clone(st.Overlaps)
	s.fence.mu.Lock()
	st.Fenced = s.fence.why
	s.fence.mu.Unlock()
	return st
}

func (s *Source) setStatus(f func(*Status)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(&s.status)
}

// publish copies the run loop's state into the status.
func (s *Source) publish() {
	texts := make([]string, len(s.current))
	for i, p := range s.current {
		texts[i] = p.String()
	}
	s.setStatus(func(st *Status) { st.UID, st.Blocks = s.uid, texts })
}

// Passes receives after every pass of the run loop (tests wait on it).
func (s *Source) Passes() <-chan struct{} { return s.passes }
