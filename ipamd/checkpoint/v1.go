package checkpoint

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"time"
)

// Version 1 of the snapshot and the journal, read only: one cursor, and
// one address per assignment. A v1 state upgrades without loss: its
// cursor is the cursor of its address's family, its assignment's address
// the only one in the list.

type fileV1 struct {
	SavedAt     time.Time      `json:"savedAt"`
	Unproven    bool           `json:"unproven,omitempty"`
	Cursor      netip.Addr     `json:"cursor,omitzero"`
	Addresses   []Address      `json:"addresses"`
	Assignments []assignmentV1 `json:"assignments"`
}

type assignmentV1 struct {
	Network    string     `json:"network"`
	SandboxID  string     `json:"sandboxID"`
	IfName     string     `json:"ifName"`
	PodName    string     `json:"pod,omitempty"`
	Namespace  string     `json:"ns,omitempty"`
	UID        string     `json:"uid,omitempty"`
	IP         netip.Addr `json:"ip"`
	AssignedAt time.Time  `json:"at"`
	ListedAt   time.Time  `json:"listedAt,omitzero"`
}

type recordV1 struct {
	Seq             uint64          `json:"seq"`
	Seal            string          `json:"seal,omitempty"`
	Unproven        bool            `json:"unproven,omitempty"`
	Cursor          netip.Addr      `json:"cursor,omitzero"`
	Addresses       []Address       `json:"addresses,omitempty"`
	DropAddresses   []netip.Addr    `json:"dropAddresses,omitempty"`
	Assignments     []assignmentV1  `json:"assignments,omitempty"`
	DropAssignments []AssignmentKey `json:"dropAssignments,omitempty"`
}

func (a assignmentV1) upgrade() Assignment {
	out := Assignment{Network: a.Network, SandboxID: a.SandboxID, IfName: a.IfName,
		PodName: a.PodName, Namespace: a.Namespace, UID: a.UID, AssignedAt: a.AssignedAt, ListedAt: a.ListedAt}
	if a.IP.IsValid() {
		out.IPs = []netip.Addr{a.IP}
	}
	return out
}

func upgradeAssignments(in []assignmentV1) []Assignment {
	if in == nil {
		return nil
	}
	out := make([]Assignment, len(in))
	for i, a := range in {
		out[i] = a.upgrade()
	}
	return out
}

func upgradeCursor(c netip.Addr) []netip.Addr {
	if !c.IsValid() {
		return nil
	}
	return []netip.Addr{c}
}

// decodeV1 parses a v1 snapshot body into the current form.
func decodeV1(body []byte) (File, error) {
	var v fileV1
	if err := json.Unmarshal(body, &v); err != nil {
		return File{}, fmt.Errorf("%w: v1 body: %v", ErrCorrupt, err)
	}
	return File{SavedAt: v.SavedAt, Unproven: v.Unproven, Cursors: upgradeCursor(v.Cursor),
		Addresses: v.Addresses, Assignments: upgradeAssignments(v.Assignments)}, nil
}

// decodeRecord parses one journal record's payload of the given version.
func decodeRecord(version int, payload []byte) (Record, error) {
	if version != 1 {
		var r Record
		err := json.Unmarshal(payload, &r)
		return r, err
	}
	var v recordV1
	if err := json.Unmarshal(payload, &v); err != nil {
		return Record{}, err
	}
	return Record{Seq: v.Seq, Seal: v.Seal, Unproven: v.Unproven, Cursors: upgradeCursor(v.Cursor),
		Addresses: v.Addresses, DropAddresses: v.DropAddresses,
		Assignments: upgradeAssignments(v.Assignments), DropAssignments: v.DropAssignments}, nil
}
