// Package aws is ipamd's "aws" IP source: pod addresses are secondary
// private IPv4 addresses of the instance's ENIs, obtained through
// aws-sdk-go-v2.
//
// At start the source reads the instance's identity from IMDS (IMDSv2
// tokens only, no IMDSv1 fallback), reads the instance type's limits with
// DescribeInstanceTypes, and adopts what is already attached: EC2's
// DescribeNetworkInterfaces is the truth for which secondary addresses each
// ENI holds, so a restarted ipamd puts the same addresses back in the pool
// and allocates nothing new. It then deletes detached ENIs that this
// node's ipamd created and leaked, and fills the pool to its targets (see
// awsconf.Config for WARM_IP_TARGET, MINIMUM_IP_TARGET and WARM_ENI_TARGET).
//
// The source manages the primary ENI (never detached; its primary address
// is never a pod address) and the ENIs it created, which carry the tags
// TagNode=<instance ID> and TagCreatedBy=ipamd. Other attached ENIs are
// left alone but still count against the instance's ENI limit. The tags
// go in the CreateNetworkInterface call itself (TagSpecifications) rather
// than a later CreateTags: a crash between two calls would otherwise leave
// an untagged ENI that clean-up cannot tell from someone else's.
//
// The CNI ADD path never waits on EC2: pods get addresses from the
// datastore, and this source only grows and shrinks the datastore's pool
// in the background. Every addition follows a successful EC2 call; every
// removal takes addresses out of the pool (Pool.TakeFree, which never
// takes one a pod holds) before EC2 is asked to unassign them, and gives
// them back when EC2 refuses. No answer is taken on trust (verify.go): an
// assignment is read back and the pool takes only the new secondary
// addresses the ENI shows, never a primary address; a step that added
// nothing defers growth (backoff.go). When a call's outcome is unknown (a timeout)
// the source re-reads the ENIs from EC2 before its next change.
//
// See docs/architecture.md for where this package sits and the life of an
// ADD, a DEL, a reconcile pass and a restart through the daemon.
package aws

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sandboxipam/sandboxipam/ipamd/ipsource"

	"github.com/sandboxipam/sandboxipam/ipamd/ipsource/aws/awsconf"
)

// Errors callers branch on.
var (
	// ErrInstanceLimitReached: the pool is short of its targets and every
	// ENI the instance type allows (or Config.MaxENIs) is attached and full.
	ErrInstanceLimitReached = errors.New("aws: instance ENI and address limit reached")
	// ErrSubnetFull: EC2 has no free address left in the subnet.
	ErrSubnetFull = errors.New("aws: subnet has no free addresses")
	// ErrNotStarted: Adjust or CleanupLeakedENIs before Run finished its
	// initial fill.
	ErrNotStarted = errors.New("aws: source not started")
	// ErrAlreadyRunning: Run was called twice.
	ErrAlreadyRunning = errors.New("aws: source already running")
)

// Name is the source's name in ipamd's config.
const Name = "aws"

// Options are a Source's dependencies that are not configuration.
type Options struct {
	// Logger receives the source's log; nil discards it.
	Logger *slog.Logger
	// Credentials replace the SDK's default credential chain (which, on
	// EC2, reads the instance role through IMDS). Tests pass static ones.
	Credentials awssdk.CredentialsProvider
	// HTTPClient carries the EC2 and IMDS calls; nil is the SDK's.
	HTTPClient awssdk.HTTPClient
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Source is the aws IP source. Create it with New and start it with Run.
type Source struct {
	cfg  targets
	tun  awsconf.Tuning
	opts Options
	log  *slog.Logger

	started atomic.Bool
	ready   chan struct{} // closed when the initial fill is done

	// adjustMu makes the loop, Adjust and CleanupLeakedENIs take turns, so
	// clean-up never sees an ENI that growth created but has not attached.
	adjustMu sync.Mutex

	// Set by start before ready closes; read-only afterwards.
	id     identity
	ec2    ec2API
	limits limits
	pool   ipsource.Pool

	// mu guards what ENIs and Status read; only the adjusting goroutine
	// (holding adjustMu) writes.
	mu         sync.Mutex
	enis       map[string]*eni
	foreign    map[int]string // device index -> attached ENI not managed here
	state      growthState
	lastShrink time.Time
	needResync bool

	backoff growthBackoff // adjusting goroutine only
	refused *prometheus.CounterVec
}

// eni is one ENI the source manages.
type eni struct {
	id           string
	attachmentID string
	deviceIndex  int
	subnetID     string
	subnetCIDR   netip.Prefix
	primary      bool       // device index 0: never detached
	primaryIP    netip.Addr // never a pod address
	ips          []netip.Addr
	// prefixes are the delegated IPv4 /28s (prefix delegation), each in
	// the pool as one block; ipv6Prefixes the /80s (IPv6 mode).
	prefixes     []netip.Prefix
	ipv6Prefixes []netip.Prefix
}

var _ ipsource.Source = (*Source)(nil)

// New checks cfg and tun and returns a Source; it makes no network call.
func New(cfg awsconf.Config, tun awsconf.Tuning, opts Options) (*Source, error) {
	if err := errors.Join(cfg.Validate(), tun.Validate()); err != nil {
		return nil, fmt.Errorf("aws source config: %w", err)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Source{
		cfg:     targets{cfg},
		tun:     tun,
		opts:    opts,
		log:     opts.Logger.With(slog.String("source", Name)),
		ready:   make(chan struct{}),
		enis:    map[string]*eni{},
		foreign: map[int]string{},
		refused: newRefusedCounter(),
	}, nil
}

// Name returns "aws".
func (s *Source) Name() string { return Name }

// Run adopts the attached ENIs into pool, deletes leaked ENIs, fills the
// pool to its targets and then keeps adjusting it until ctx is done.
//
// Run blocks until ctx is done and then returns nil; Ready is closed once
// the initial fill is done. When the start fails (IMDS or EC2 unreachable,
// the first fill refused) Run returns that error at once. Reaching the
// instance or subnet limit during the first fill is not such a failure:
// the node can still run as many pods as it has addresses, so it is logged
// and reported by Status instead.
func (s *Source) Run(ctx context.Context, pool ipsource.Pool) error {
	if !s.started.CompareAndSwap(false, true) {
		return ErrAlreadyRunning
	}
	if err := s.start(ctx, pool); err != nil {
		return err
	}
	close(s.ready)
	st := s.Status()
	s.log.Info("aws source ready", slog.String("instance", st.InstanceID), slog.String("type", st.InstanceType),
		slog.Int("enis", st.ENIs), slog.Int("addresses", st.Total), slog.Int("assigned", st.Assigned))
	s.loop(ctx)
	return nil
}

// Ready is closed once Run has adopted the attached ENIs and done the
// first fill.
func (s *Source) Ready() <-chan struct{} { return s.ready }

// Adjust compares the pool with the targets once and grows or shrinks it,
// as the loop does every PoolCheckInterval. It waits for an adjustment in
// progress to end first.
func (s *Source) Adjust(ctx context.Context) error {
	if !s.isReady() {
		return ErrNotStarted
	}
	s.adjustMu.Lock()
	defer s.adjustMu.Unlock()
	return s.adjust(ctx)
}

func (s *Source) isReady() bool {
	select {
	case <-s.ready:
		return true
	default:
		return false
	}
}

func (s *Source) start(ctx context.Context, pool ipsource.Pool) error {
	s.adjustMu.Lock()
	defer s.adjustMu.Unlock()
	s.pool = pool
	if err := s.connect(ctx); err != nil {
		return err
	}
	if err := s.resync(ctx); err != nil {
		return fmt.Errorf("aws source: adopt attached ENIs: %w", err)
	}
	if _, err := s.cleanupLeaked(ctx); err != nil {
		s.log.Warn("leaked ENI clean-up failed at start; it is retried later", slog.Any("error", err))
	}
	// A first fill that EC2 answered with nothing is not fatal either:
	// the node is Ready with what it has and growth retries after its
	// backoff, rather than loop here while nothing can answer /readyz.
	err := s.adjust(ctx)
	if err != nil && !isCapacityError(err) && !errors.Is(err, ErrNothingAssigned) {
		return fmt.Errorf("aws source: first fill: %w", err)
	}
	s.noteError(err)
	return nil
}

// loop adjusts on every tick, re-reads EC2 every ResyncInterval
// and cleans up leaked ENIs every LeakedENICleanupInterval.
func (s *Source) loop(ctx context.Context) {
	check := time.NewTicker(s.tun.PoolCheckInterval)
	defer check.Stop()
	resync := time.NewTicker(s.tun.ResyncInterval)
	defer resync.Stop()
	cleanup := time.NewTicker(s.tun.LeakedENICleanupInterval)
	defer cleanup.Stop()
	for {
		var step func(context.Context) error
		select {
		case <-ctx.Done():
			return
		case <-check.C:
			step = s.adjust
		case <-resync.C:
			step = s.resync
		case <-cleanup.C:
			step = func(ctx context.Context) error { _, err := s.cleanupLeaked(ctx); return err }
		}
		s.adjustMu.Lock()
		err := step(ctx)
		s.adjustMu.Unlock()
		s.noteError(err)
	}
}

func isCapacityError(err error) bool {
	return errors.Is(err, ErrInstanceLimitReached) || errors.Is(err, ErrSubnetFull)
}
