package datastore

// Open's side of persistence: the checkpoint loaded into the state, or
// a store started empty or unproven.

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"

	"github.com/sandboxipam/sandboxipam/ipamd/checkpoint"
	"github.com/sandboxipam/sandboxipam/ipamd/datastore/state"
)

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
		if st.Old {
			s.log.Info("datastore checkpoint of an older format: upgraded in memory, rewritten in the current format at the next write",
				slog.String("path", s.path), slog.Int("version", checkpoint.Version))
		}
		if err := s.commit.Resume(st); err != nil {
			return fmt.Errorf("open datastore: %w", err)
		}
		s.recovery = Recovery{Checkpoint: RecoveryLoaded, Assignments: s.st.Len()}
		if s.st.Unproven() {
			s.recovery.Detail = "the checkpoint was lost before and the runtime listing has not proven the pool yet; Assign is refused until a listing accounts for every pod's address"
			s.log.Warn("datastore loaded in unproven mode", slog.String("path", s.path))
		}
		s.log.Info("datastore checkpoint loaded", slog.String("path", s.path),
			slog.Int("assignments", s.st.Len()), slog.Int("addresses", s.st.TakenCount()),
			slog.Int("journal_records", st.Journal.Records))
		return nil
	case errors.Is(err, checkpoint.ErrMissing) && s.proveWhenMissing:
		s.apply(state.SetUnproven(true))
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
	s.apply(state.SetUnproven(true))
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
	if err := s.commit.Compact(s.snapshotLocked()); err != nil {
		return fmt.Errorf("open datastore: persist unproven state: %w", err)
	}
	return nil
}

// restore rebuilds the state and the node record from a verified
// checkpoint. What it loaded is on disk: nothing of it is touched.
func (s *Store) restore(f checkpoint.File) {
	s.st = state.FromFile(f, s.cooldown)
	if n := f.Node; n != nil {
		s.node = &NodeRecord{Name: n.Name, UID: n.UID, PodCIDRs: n.PodCIDRs, Retiring: n.Retiring}
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
