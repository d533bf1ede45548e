package datastore

import (
	"github.com/sandboxipam/sandboxipam/ipamd/join"
)

// JoinAssignments returns what join.Join needs of the assignments, in order.
func JoinAssignments(as []Assignment) []join.Assignment {
	out := make([]join.Assignment, len(as))
	for i := range as {
		out[i] = joinAssignmentOf(as[i])
	}
	return out
}

func joinAssignmentOf(a Assignment) join.Assignment {
	return join.Assignment{Network: a.Network, SandboxID: a.SandboxID, IfName: a.IfName, IPs: a.IPs(),
		IPAMOnly: a.Wiring == WiringIPAMOnly, AssignedAt: a.AssignedAt, ListedAt: a.ListedAt}
}

// DeletedSandboxes returns the sandbox IDs whose CNI DEL this store
// answered and still remembers (see noteDeletedLocked): a stopped
// sandbox's report of an address is stale for them. ipamctl check passes
// them to join.Join as Observe does.
func (s *Store) DeletedSandboxes() map[string]struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]struct{}, s.st.DeletedLen())
	for k := range s.st.DeletedKeys() {
		out[k.SandboxID] = struct{}{}
	}
	return out
}

// viewLocked joins the evidence with the store's assignments as they are
// now: the one judgement Observe adopts and quarantines by.
func (s *Store) viewLocked(ev Evidence) join.View {
	in := join.Input{Assignments: make([]join.Assignment, 0, s.st.Len()),
		Holdings: make([]join.Holding, len(ev.Holdings)), Deleted: map[string]struct{}{}}
	for a := range s.st.Assignments() {
		in.Assignments = append(in.Assignments, joinAssignmentOf(a))
	}
	for i, h := range ev.Holdings {
		in.Holdings[i] = join.Holding{IP: h.IP, SandboxID: h.SandboxID, Ready: h.Ready, Source: h.Source}
	}
	for k := range s.st.DeletedKeys() {
		if k.Network == ev.Network && k.IfName == ev.IfName {
			in.Deleted[k.SandboxID] = struct{}{}
		}
	}
	return join.Join(in)
}
