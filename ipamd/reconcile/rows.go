package reconcile

import (
	"slices"
	"time"

	"github.com/sandboxipam/sandboxipam/ipamd/datastore"
	"github.com/sandboxipam/sandboxipam/ipamd/join"
)

// The pass picks assignments by their join rows; these are the pickers.

// pick returns the assignments whose row (the view was joined from
// assignments, in order) keep accepts.
func pick(assignments []datastore.Assignment, view join.View, keep func(join.AssignmentRow) bool) []datastore.Assignment {
	var out []datastore.Assignment
	for i, row := range view.Assignments {
		if keep(row) {
			out = append(out, assignments[i])
		}
	}
	return out
}

// unlisted: the listing does not show the sandbox as a pod-network one.
func unlisted(row join.AssignmentRow) bool { return !row.PodListed() }

// staleBy: a listing once showed the sandbox (ListedAt set), this one
// does not (host-network sandboxes do not count), and the assignment was
// made before cutoff.
func staleBy(cutoff time.Time) func(join.AssignmentRow) bool {
	return func(row join.AssignmentRow) bool {
		return !row.PodListed() && !row.ListedAt.IsZero() && row.AssignedAt.Before(cutoff)
	}
}

// missingBy: no listing has shown the sandbox yet, it was made before
// cutoff, and this listing lacks it (host-network sandboxes count as
// seen): CNI added it and the adapter does not see it.
func missingBy(cutoff time.Time) func(join.AssignmentRow) bool {
	return func(row join.AssignmentRow) bool {
		return !row.Listed() && row.ListedAt.IsZero() && row.AssignedAt.Before(cutoff)
	}
}

// sandboxIDs returns the assignments' sandbox IDs, sorted, without repeats.
func sandboxIDs(as []datastore.Assignment) []string {
	ids := make([]string, len(as))
	for i, a := range as {
		ids[i] = a.SandboxID
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}
