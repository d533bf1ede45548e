package datastore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/sandboxipam/sandboxipam/ipamd/checkpoint"
	"github.com/sandboxipam/sandboxipam/ipamd/ipsource"
)

// snapshotLocked copies the state into the checkpoint form. Encoding and
// writing happen outside the lock.
func (s *Store) snapshotLocked() checkpoint.File {
	now := s.now()
	s.pruneLocked(now)
	f := checkpoint.File{
		SavedAt:     now,
		Unproven:    s.unproven,
		Cursors:     s.cursorList(),
		Addresses:   make([]checkpoint.Address, 0, len(s.assignments)+len(s.marked)),
		Assignments: make([]checkpoint.Assignment, 0, len(s.assignments)),
	}
	for _, a := range s.assignments {
		for _, addr := range a.All() {
			f.Addresses = append(f.Addresses, addressRecord(addr))
		}
	}
	for ip := range s.marked {
		e := s.addrs[ip]
		cooling := e.cooling(now, s.cooldown)
		// While unproven every address is quarantined on arrival anyway;
		// only a quarantine that outlives it needs recording.
		quarantined := e.quarantined && !s.unproven
		if e.held || (!cooling && !quarantined) {
			continue
		}
		c := addressRecord(e.addr)
		c.Quarantined = quarantined
		if cooling {
			c.ReleasedAt = e.releasedAt
		}
		f.Addresses = append(f.Addresses, c)
	}
	for _, a := range s.assignments {
		f.Assignments = append(f.Assignments, assignmentRecord(a))
	}
	if rec := s.nodeCheckpointLocked(); rec != nil {
		f.Node = &checkpoint.NodeRanges{Name: rec.Name, UID: rec.UID, PodCIDRs: rec.PodCIDRs, Retiring: rec.Retiring}
	}
	return f
}

func assignmentRecord(a *Assignment) checkpoint.Assignment {
	return checkpoint.Assignment{
		Network: a.Network, SandboxID: a.SandboxID, IfName: a.IfName,
		PodName: a.Pod.Name, Namespace: a.Pod.Namespace, UID: a.Pod.UID,
		IPs: a.IPs(), AssignedAt: a.AssignedAt, ListedAt: a.ListedAt, Wiring: string(a.Wiring),
		NetNS: a.NetNS.Path, NetNSDev: a.NetNS.Dev, NetNSIno: a.NetNS.Ino,
	}
}

// cursorList is the cursors as the checkpoint records them.
func (s *Store) cursorList() []netip.Addr {
	var out []netip.Addr
	for _, c := range s.cursors {
		if c.IsValid() {
			out = append(out, c)
		}
	}
	return out
}

// addressStateLocked is what a snapshot taken now would record for ip, as
// snapshotLocked decides it, or false when it would not list ip.
func (s *Store) addressStateLocked(ip netip.Addr, now time.Time) (checkpoint.Address, bool) {
	e, ok := s.addrs[ip]
	if !ok {
		return checkpoint.Address{}, false
	}
	if e.held {
		if a, ok := s.assignments[e.holder]; ok {
			for _, addr := range a.All() {
				if addr.IP == ip {
					return addressRecord(addr), true
				}
			}
		}
		return addressRecord(e.addr), true
	}
	cooling := e.cooling(now, s.cooldown)
	quarantined := e.quarantined && !s.unproven
	if !cooling && !quarantined {
		return checkpoint.Address{}, false
	}
	c := addressRecord(e.addr)
	c.Quarantined = quarantined
	if cooling {
		c.ReleasedAt = e.releasedAt
	}
	return c, true
}

func addressRecord(a ipsource.Address) checkpoint.Address {
	return checkpoint.Address{IP: a.IP, Subnet: a.Subnet, Gateway: a.Gateway, Group: a.Group}
}

// load fills a new store from its snapshot and journal, or decides it
// starts empty or unproven.
func (s *Store) load(ctx context.Context) error {
	s.removeStaleTemps()
	st, err := checkpoint.Load(s.path)
	switch {
	case errors.Is(err, checkpoint.ErrNewer):
		// Not corrupt: written by a newer build. Moving it aside would
		// lose a state that build can read; reading it could misread it.
		s.log.Error("DATASTORE CHECKPOINT IS OF A NEWER FORMAT: refusing to start; run the newer build, or remove the state directory on purpose",
			slog.String("path", s.path), slog.Any("error", err))
		return fmt.Errorf("open datastore: %w", err)
	case err == nil:
		s.restore(st.File)
		// restore marked what it loaded as changed: it is all on disk.
		clear(s.dirtyIPs)
		clear(s.dirtyKeys)
		// An older format is rewritten as a whole at the first write:
		// a new record is never appended to an old journal.
		s.needFull = st.Journal.Sealed || st.Old
		if st.Old {
			s.log.Info("datastore checkpoint of an older format: upgraded in memory, rewritten in the current format at the next write",
				slog.String("path", s.path), slog.Int("version", checkpoint.Version))
		}
		if err := s.openJournal(st); err != nil {
			return fmt.Errorf("open datastore: %w", err)
		}
		s.recovery = Recovery{Checkpoint: RecoveryLoaded, Assignments: len(s.assignments)}
		if s.unproven {
			s.recovery.Detail = "the checkpoint was lost before and the runtime listing has not proven the pool yet; Assign is refused until a listing accounts for every pod's address"
			s.log.Warn("datastore loaded in unproven mode", slog.String("path", s.path))
		}
		s.log.Info("datastore checkpoint loaded", slog.String("path", s.path),
			slog.Int("assignments", len(s.assignments)), slog.Int("addresses", len(s.addrs)),
			slog.Int("journal_records", st.Journal.Records))
		return nil
	case errors.Is(err, checkpoint.ErrMissing) && s.proveWhenMissing:
		s.unproven = true
		s.recovery = Recovery{Checkpoint: RecoveryMissing,
			Detail: "no checkpoint: a first start and a lost state directory look the same, so no address is handed out until a runtime listing (and the node) accounts for every pod's address"}
		s.log.Warn("NO DATASTORE CHECKPOINT: starting unproven; no address is handed out until a runtime listing shows no pod, or accounts for every pod's address",
			slog.String("path", s.path))
		return s.persistNow(ctx)
	case errors.Is(err, checkpoint.ErrMissing):
		s.recovery = Recovery{Checkpoint: RecoveryMissing}
		s.log.Info("no datastore checkpoint: first start, empty store", slog.String("path", s.path))
		return nil
	default:
		return s.startUnproven(ctx, err)
	}
}

// openJournal gets the journal ready for appends after a load: a torn
// tail (an append a crash cut short, never acknowledged) is cut off; a
// missing journal (a store from before the journal) or a stale one (a
// crash between a compaction's snapshot and its fresh journal) is replaced
// at once by an empty one following the snapshot, so the next compaction
// never meets a journal that follows an older snapshot.
func (s *Store) openJournal(st checkpoint.State) error {
	path := checkpoint.JournalPath(s.path)
	if !st.Journal.Present || st.Journal.Stale {
		if st.Journal.Stale {
			s.log.Info("checkpoint journal already compacted into the snapshot: starting a fresh one", slog.String("path", path))
		}
		j, err := checkpoint.CreateJournal(path, st.Sum)
		if err != nil {
			return err
		}
		s.journal = j
		return nil
	}
	if st.Journal.Torn > 0 {
		s.log.Warn("checkpoint journal ends in a torn record, an unacknowledged write cut short by a crash: cutting it off",
			slog.String("path", path), slog.Int64("bytes", st.Journal.Torn), slog.Int("records_kept", st.Journal.Records))
	}
	j, err := checkpoint.OpenJournal(path, st.Journal)
	if err != nil {
		return err
	}
	s.journal = j
	return nil
}

// startUnproven handles a checkpoint that exists but cannot be trusted:
// keep it (snapshot and journal) aside for a human, refuse to hand out
// addresses, and persist that refusal at once so a crash now does not
// restart as "missing". The snapshot is moved first: a crash between the
// two moves leaves a journal without its snapshot, which loads as corrupt
// again, never as a trusted snapshot that lost its journal.
func (s *Store) startUnproven(ctx context.Context, cause error) error {
	suffix := ".corrupt-" + strconv.FormatInt(s.now().Unix(), 10)
	aside := s.path + suffix
	jpath := checkpoint.JournalPath(s.path)
	snapErr := os.Rename(s.path, aside)
	jErr := os.Rename(jpath, jpath+suffix)
	snapGone, jGone := errors.Is(snapErr, fs.ErrNotExist), errors.Is(jErr, fs.ErrNotExist)
	switch {
	case snapErr != nil && !snapGone:
		return fmt.Errorf("open datastore: %w: %v, and it could not be kept aside: %w", ErrCheckpointCorrupt, cause, snapErr)
	case jErr != nil && !jGone:
		return fmt.Errorf("open datastore: %w: %v, and its journal could not be kept aside: %w", ErrCheckpointCorrupt, cause, jErr)
	case snapGone && jGone:
		return fmt.Errorf("open datastore: %w: %v, and it vanished before it could be kept aside", ErrCheckpointCorrupt, cause)
	}
	kept := aside
	switch {
	case snapGone:
		kept = jpath + suffix
	case !jGone:
		kept = aside + " and " + jpath + suffix
	}
	s.unproven = true
	s.recovery = Recovery{
		Checkpoint: RecoveryCorrupt,
		Detail:     fmt.Sprintf("%v; kept as %s; no address is handed out until the runtime listing is adopted", cause, kept),
	}
	s.log.Error("DATASTORE CHECKPOINT CORRUPT OR UNREADABLE: starting unproven, every address quarantined until the runtime listing is adopted",
		slog.String("path", s.path), slog.String("kept_as", kept), slog.Any("error", cause))
	return s.persistNow(ctx)
}

// persistNow writes the unproven state (a snapshot and a fresh journal)
// before Open returns, so a crash right after does not restart as a
// trusted first start.
func (s *Store) persistNow(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("open datastore: %w", err)
	}
	if err := s.compact(s.snapshotLocked()); err != nil {
		return fmt.Errorf("open datastore: persist unproven state: %w", err)
	}
	return nil
}

// restore rebuilds the in-memory state from a verified checkpoint. Its
// addresses are not in the pool until a source adds them again.
func (s *Store) restore(f checkpoint.File) {
	s.unproven = f.Unproven
	if n := f.Node; n != nil {
		s.node = &NodeRecord{Name: n.Name, UID: n.UID, PodCIDRs: n.PodCIDRs, Retiring: n.Retiring}
	}
	for _, c := range f.Cursors {
		s.cursors[familyIndex(c)] = c
	}
	for _, c := range f.Addresses {
		s.addrs[c.IP] = &entry{
			addr:        ipsource.Address{IP: c.IP, Subnet: c.Subnet, Gateway: c.Gateway, Group: c.Group},
			quarantined: c.Quarantined, releasedAt: c.ReleasedAt,
		}
		if c.Quarantined || !c.ReleasedAt.IsZero() {
			s.marked[c.IP] = struct{}{}
		}
	}
	for _, c := range f.Assignments {
		a := &Assignment{
			Key:        Key{Network: c.Network, SandboxID: c.SandboxID, IfName: c.IfName},
			Pod:        Pod{Name: c.PodName, Namespace: c.Namespace, UID: c.UID},
			Address:    s.addrs[c.IPs[0]].addr,
			AssignedAt: c.AssignedAt,
			ListedAt:   c.ListedAt,
			Wiring:     Wiring(c.Wiring),
			NetNS:      NetNS{Path: c.NetNS, Dev: c.NetNSDev, Ino: c.NetNSIno},
		}
		for _, ip := range c.IPs[1:] {
			a.Extra = append(a.Extra, s.addrs[ip].addr)
		}
		s.holdLocked(a)
	}
}

// removeStaleTemps deletes temporary files a crash left mid-write; they
// were never renamed into place, so they hold nothing acknowledged.
func (s *Store) removeStaleTemps() {
	matches, _ := filepath.Glob(s.path + ".tmp-*")
	journalTemps, _ := filepath.Glob(checkpoint.JournalPath(s.path) + ".tmp-*")
	for _, m := range append(matches, journalTemps...) {
		if err := os.Remove(m); err == nil {
			s.log.Info("removed an unfinished checkpoint write", slog.String("path", m))
		}
	}
}
