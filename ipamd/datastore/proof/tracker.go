package proof

// Tracker: what an unproven store remembers between listings, beside its
// state (package state holds the unproven flag itself, as it changes what
// every quarantine records). In memory only: a restart starts unproven
// again from the checkpoint's flag, and the first listing decides anew.

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sandboxipam/sandboxipam/ipamd/datastore/state"
)

// noListingYet is what an unproven store waits for before any listing.
const noListingYet = "a successful runtime listing (the adapter has not listed this node's sandboxes yet)"

// Tracker holds the DELs that came while the store was unproven and what
// the last listing could not account for. The zero value is ready to use;
// the store calls it under its lock.
type Tracker struct {
	// dels holds when each DEL arrived, so a listing that started earlier
	// never adopts back a sandbox its DEL already released.
	dels map[state.Key]time.Time
	// unaccounted is what the last listing could not account for; the
	// refusal of every ADD names it.
	unaccounted []string
}

// NoteDel records that key's DEL (or an operator's release) came at at,
// while the store is unproven.
func (t *Tracker) NoteDel(key state.Key, at time.Time) {
	if t.dels == nil {
		t.dels = make(map[state.Key]time.Time)
	}
	t.dels[key] = at
}

// Released reports whether a DEL for key came while the store was
// unproven: the sandbox gave back whatever it held.
func (t *Tracker) Released(key state.Key) bool {
	_, ok := t.dels[key]
	return ok
}

// Going returns the sandboxes of network and ifName whose DEL came after
// a listing started at listedAt: the listing may still show them, and they
// are going; Adoptions leaves them out.
func (t *Tracker) Going(network, ifName string, listedAt time.Time) map[string]struct{} {
	going := map[string]struct{}{}
	for k, at := range t.dels {
		if k.Network == network && k.IfName == ifName && !at.Before(listedAt) {
			going[k.SandboxID] = struct{}{}
		}
	}
	return going
}

// Listed takes what a successful listing could not account for and
// reports whether it proves the store: nothing is left unaccounted. Once
// proven, the DELs no longer matter and are forgotten.
func (t *Tracker) Listed(unaccounted []string) (proven bool) {
	if len(unaccounted) == 0 {
		t.dels, t.unaccounted = nil, nil
		return true
	}
	t.unaccounted = slices.Clone(unaccounted)
	return false
}

// NoteWaiting records why no listing will come (no adapter, or auto
// refused to pick one), so that the refusal of every ADD says what the
// operator must fix.
func (t *Tracker) NoteWaiting(why string) { t.unaccounted = []string{why} }

// Waiting names what an unproven store waits for.
func (t *Tracker) Waiting() []string {
	if len(t.unaccounted) == 0 {
		return []string{noListingYet}
	}
	return slices.Clone(t.unaccounted)
}

// RefusalNames bounds how many unaccounted items an ADD's refusal names.
const RefusalNames = 3

// Refusal names, for the refusal of an ADD, the first RefusalNames of
// waiting in sorted order and counts the rest. Each item names a pod in
// full (some 600 bytes), and kubelet writes the refusal into its log and
// the pod's events on every pod start: a node with 100 unaccounted pods
// returned some 60 KB each time. /readyz, ipamctl check and the log keep
// the whole list.
func Refusal(waiting []string) string {
	sorted := slices.Sorted(slices.Values(waiting))
	if len(sorted) <= RefusalNames {
		return strings.Join(sorted, "; ")
	}
	return fmt.Sprintf("%s; ... and %d more; see ipamctl check or /readyz", strings.Join(sorted[:RefusalNames], "; "), len(sorted)-RefusalNames)
}
