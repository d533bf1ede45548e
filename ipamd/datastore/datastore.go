// Package datastore is ipamd's record of which pod interface holds which
// address, and of the pool those addresses come from.
//
// An assignment is keyed by (network name, infra sandbox ID, interface
// name): exactly what the CNI plugin receives on ADD and DEL. Pod name,
// namespace and UID are kept as metadata for operators and are never
// matched on, because StatefulSets reuse pod names with new sandboxes.
//
// Every change is on disk before the call that made it returns:
// concurrent callers share one journal append and one fdatasync (group
// commit), and the journal is compacted into a new snapshot now and then;
// package persist owns both, and its doc says when and why.
//
// A failed write fails every caller of that batch. Their changes are
// not rolled back in memory (a later change may already build on them);
// they stay in memory, are never handed out twice, and are written by the
// next successful write. Any later Assign, Release, ReleaseAssignments or GC,
// including a repeated ADD or DEL that changes nothing, returns only once
// the state it saw is on disk. So nothing acknowledged is
// ever lost, and an ADD whose write failed leaves at worst an assignment
// that the CNI's DEL or the reconciler releases.
//
// The pool is a list of blocks (ranges.go): a block costs the same whether
// it is a /30 or an IPv6 /64, and only taken addresses (assigned, cooling,
// quarantined) have an entry. The checkpoint holds assignments, cooling
// releases (with their release time) and quarantine, not the pool: the IP
// sources add the pool again at every start, so a config that drops a CIDR
// never brings its addresses back. An assignment whose address has left
// the pool is kept, and the address is handed out again only once it is
// back in the pool and free.
//
// A pool with blocks of both families is dual-stack: one Assign hands the
// key one address of each family, and Release frees them together.
//
// Allocation is round-robin over each family's sorted blocks from the
// address handed out last (the family's cursor, also in the checkpoint):
// deterministic given the state, and it avoids reusing a just-cooled
// address first.
//
// One process at a time: Open takes an exclusive flock on <path>.lock and
// fails with ErrLocked while another store holds it.
//
// A lost checkpoint is never mistaken for an empty node. A damaged or
// unreadable snapshot, a journal damaged anywhere but in its last record
// (a torn last record is an append a crash cut short, never acknowledged,
// and is cut off), or a journal without its snapshot is kept aside (both
// files), and the store starts unproven: every
// address is quarantined and Assign fails with ErrUnproven until Observe
// rebuilds the assignments from the container runtime's listing and the
// node, and proves the rest of the pool free.
//
// The concerns, by package and file. The assignment state (the taken
// addresses, the assignments, the cursors, the unproven flag) is package
// state's value, changed only by applying its change records (Hold,
// Release, Quarantine, Clear, Cursor, SetUnproven, Prune, Drop, Repool,
// Confirm), each noting the addresses and keys it touched: what the next
// journal record holds. The Store never sets an entry itself; its
// operations build changes and apply them (commit.go apply). Group commit,
// the journal and compaction are package persist's Committer, which reads
// the state only through the Source methods in commit.go, under the
// Store's lock. Allocation is ranges.go over package allocator's pure
// walk; the pool's blocks, and so whether an address is in the pool, stay
// here. The operations are ops.go; Observe, adoption, quarantine and
// proof (observe.go, adopt.go, quarantine.go, proof.go) apply what package
// proof decides from one join.Join (join.go), the join the
// reconciler and ipamctl check read too, and its Tracker keeps what an
// unproven store remembers between listings. Load and the unproven start
// are load.go; the one read model is view.go (Store.View). The node
// source's record (NodeRecord, retire.go) stays a Store field: it is not
// assignment state, and every change to it is written as a snapshot.
// Dependencies run one way: datastore imports state, persist, allocator
// and proof; persist and state import package checkpoint, never the
// datastore.
//
// See docs/architecture.md for where this package sits and the life of an
// ADD, a DEL, a reconcile pass and a restart through it.
package datastore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/sandboxipam/sandboxipam/ipamd/api/apierr"
	"github.com/sandboxipam/sandboxipam/ipamd/datastore/persist"
	"github.com/sandboxipam/sandboxipam/ipamd/datastore/proof"
	"github.com/sandboxipam/sandboxipam/ipamd/datastore/state"
	"github.com/sandboxipam/sandboxipam/ipamd/ipsource"
)

// DefaultCooldown is how long a released address waits before reuse, so
// that a late packet or a slow DEL of the old pod never reaches a new one.
const DefaultCooldown = 30 * time.Second

// NoCooldown, as Options.Cooldown, makes a released address reusable at
// once. Options' zero value means DefaultCooldown, so a caller that means
// "none" (ipamd's config with cooldown: 0s) says so with this.
const NoCooldown time.Duration = -1

// Errors callers branch on.
var (
	// ErrPoolExhausted: no address is free and past its cooldown. It and
	// ErrClosed, ErrUnproven and ErrInvalidKey are package apierr's, whose
	// table says what the CNI plugin prints for each.
	ErrPoolExhausted = apierr.ErrPoolExhausted
	// ErrCheckpointCorrupt: the checkpoint could not be trusted.
	ErrCheckpointCorrupt = errors.New("checkpoint corrupt")
	// ErrClosed: the store was closed.
	ErrClosed = apierr.ErrClosed
	// ErrPoolNotReady: the pool has no address yet because its source
	// waits for something (the podCIDR source: the Node's podCIDRs); the
	// error names it. A condition that clears: try again later.
	ErrPoolNotReady = apierr.ErrPoolNotReady
	// ErrUnproven: there is no trusted checkpoint and the runtime has not yet
	// proven which addresses are free, so none is handed out.
	ErrUnproven = apierr.ErrUnproven
	// ErrInvalidKey: a key lacks its network, sandbox ID or interface name.
	ErrInvalidKey = apierr.ErrInvalidKey
	// ErrFenced: the IP source fenced the pool (SetFenced); the error
	// names why.
	ErrFenced = apierr.ErrFenced
	// ErrLocked: another process has the checkpoint open.
	ErrLocked = errors.New("checkpoint is in use by another process")
)

// Options configure Open.
type Options struct {
	// Path is the checkpoint's snapshot file; its journal is Path +
	// ".journal". Their directory is created 0700.
	Path string
	// Cooldown is how long a released address waits before reuse;
	// zero means DefaultCooldown, and NoCooldown (any negative value)
	// none.
	Cooldown time.Duration
	// Logger receives the store's log; nil discards it.
	Logger *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// ProveWhenMissing starts a store without a checkpoint unproven, as
	// after a corrupt one, instead of trusting it as a first start. ipamd
	// always sets it: a lost state directory looks exactly like a first
	// start, and only a runtime listing can tell them apart. Tests and
	// tools that own the whole pool leave it off.
	ProveWhenMissing bool
	// OnEvent, when set, receives every assignment made, adopted or
	// released, after the write that holds it; it must not call back into
	// the store.
	OnEvent func([]Event)
}

// Recovery says how Open found the checkpoint.
type Recovery struct {
	// Checkpoint is how the checkpoint was found.
	Checkpoint RecoveryState
	// Detail explains a corrupt or unproven checkpoint.
	Detail string
	// Assignments is how many assignments were loaded.
	Assignments int
	// Quarantined is how many addresses are quarantined right now.
	Quarantined int
}

// RecoveryState is how Open found the checkpoint.
type RecoveryState string

// Recovery outcomes.
const (
	// RecoveryLoaded: the checkpoint was read and verified.
	RecoveryLoaded RecoveryState = "loaded"
	// RecoveryMissing: there was none (a first start, or a lost state
	// directory: the two look the same).
	RecoveryMissing RecoveryState = "missing"
	// RecoveryCorrupt: it was unreadable or damaged and was kept aside.
	RecoveryCorrupt RecoveryState = "corrupt"
)

// Stats counts the pool's addresses. Total counts addresses in the pool;
// Assigned counts assignments, including any whose address has left the
// pool; Quarantined counts what ipamd cannot prove free (while the store
// is unproven, every pool address nobody holds).
type Stats struct{ Total, Assigned, Free, Cooling, Quarantined int }

// Store is the datastore. It is safe for concurrent use and implements
// ipsource.Pool.
type Store struct {
	path     string
	lock     *os.File
	cooldown time.Duration
	// proveWhenMissing: see Options.ProveWhenMissing.
	proveWhenMissing bool
	log              *slog.Logger
	now              func() time.Time
	onEvent          func([]Event)
	// adoptedEvents collects Observe's adoptions under the lock, for emit.
	adoptedEvents []Event

	mu sync.Mutex
	// st is the assignment state (package state): the taken addresses,
	// the assignments, the cursors and the unproven flag. It changes only
	// by apply, which notes what each change touched in touched: what
	// changed since the last journal record was taken.
	st      *state.State
	touched state.Touched
	// ranges is the pool, sorted by first address.
	ranges []*poolRange
	// node is the podCIDR source's record (see retire.go); nil for
	// other sources.
	node *NodeRecord
	// poolWaiting, while the pool has no block, is what it waits for;
	// Assign then fails with ErrPoolNotReady naming it.
	poolWaiting string
	// growthWaiting, while set, is what an exhausted pool waits for to
	// grow (SetGrowthWaiting); see growth.go.
	growthWaiting string
	// fenced, while set, is why no new address is handed out at all
	// (SetFenced); see fence.go.
	fenced string
	// proof is what an unproven store remembers between listings: the
	// DELs that came meanwhile and what ErrUnproven names (package proof).
	proof    proof.Tracker
	recovery Recovery
	closed   bool
	// commit writes the changes (package persist): group commit, the
	// journal and compaction, reading the state through the Source
	// methods in commit.go under mu.
	commit *persist.Committer
}

var _ ipsource.Pool = (*Store)(nil)

// Open loads the checkpoint at opts.Path, or starts empty when there is
// none, and starts the writer. See Recovery for what it found.
func Open(ctx context.Context, opts Options) (*Store, error) {
	if opts.Path == "" {
		return nil, errors.New("open datastore: Options.Path is empty")
	}
	if err := os.MkdirAll(filepath.Dir(opts.Path), 0o700); err != nil {
		return nil, fmt.Errorf("open datastore: %w", err)
	}
	lock, err := lockFile(opts.Path + ".lock")
	if err != nil {
		return nil, fmt.Errorf("open datastore: %w", err)
	}
	s := newStore(opts)
	s.lock = lock
	if err := s.load(ctx); err != nil {
		_ = s.commit.Close()
		s.unlock()
		return nil, err
	}
	s.commit.Start()
	return s, nil
}

func newStore(opts Options) *Store {
	s := &Store{
		path:             opts.Path,
		cooldown:         opts.Cooldown,
		proveWhenMissing: opts.ProveWhenMissing,
		log:              opts.Logger,
		now:              opts.Now,
		onEvent:          opts.OnEvent,
	}
	switch {
	case s.cooldown == 0:
		s.cooldown = DefaultCooldown
	case s.cooldown < 0:
		s.cooldown = 0
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.now == nil {
		s.now = time.Now
	}
	s.st = state.New(s.cooldown)
	s.commit = persist.New(persist.Config{Path: s.path, Lock: &s.mu, Source: (*source)(s), Log: s.log})
	return s
}

// unlock releases the checkpoint lock.
func (s *Store) unlock() {
	if s.lock != nil {
		_ = s.lock.Close()
		s.lock = nil
	}
}

// Cooldown is how long a released address waits before reuse: the
// cooldown in force, after Options' zero and NoCooldown were resolved.
func (s *Store) Cooldown() time.Duration { return s.cooldown }

// Recovery reports how Open found the checkpoint; Unproven is current.
func (s *Store) Recovery() Recovery {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.recovery
	r.Quarantined = s.statsLocked().Quarantined
	return r
}

// Unproven reports whether Assign is refused with ErrUnproven: the store
// has no trusted checkpoint and no Observe of a runtime listing has yet
// accounted for every address the node shows (package proof decides).
func (s *Store) Unproven() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st.Unproven()
}

// Close writes any pending change, stops the writer and fails later calls
// with ErrClosed.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	err := s.commit.Close()
	s.unlock()
	if err != nil {
		return fmt.Errorf("close datastore: last write: %w", err)
	}
	return nil
}
