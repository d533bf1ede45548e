// Package checkpoint is the on-disk format of ipamd's datastore: a
// snapshot file that holds the whole state, written atomically and
// verified on load, and a journal next to it of the changes made since,
// one appended record per group commit. The journal's format is in
// journal.go, its decoding, replay and Load (which reads both files) in
// journal_load.go, and its writer in journal_writer.go.
//
// The file is a header line followed by a JSON body:
//
//	sandboxipam-checkpoint v2 sha256=<hex of body> len=<bytes of body>
//	{"savedAt":...,"cursors":[...],"addresses":[...],"assignments":[...]}
//
// The header makes a torn write (short body), a bit flip (checksum) and a
// file from another program or version (magic, version) all fail loudly
// instead of loading as an empty or partial store. JSON keeps the body
// readable by an operator with jq; the checksum, not JSON parsing, is what
// detects damage.
//
// Version 2 gives an assignment a list of addresses (one per family of a
// dual-stack pool) and the file one cursor per family. Version 1 files,
// snapshot and journal, are still read (see v1.go) and upgraded in
// memory; the datastore rewrites them as version 2 at its next write. A
// file of a version newer than this build is refused with ErrNewer and
// left untouched: a downgrade never misreads it, and never moves it aside
// as corrupt either, so the newer build finds it again.
//
// See docs/architecture.md for where this package sits and the life of an
// ADD, a DEL, a reconcile pass and a restart through it.
package checkpoint

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// Version is the format version this package writes. It reads it and
// every version back to OldestVersion.
const Version = 2

// OldestVersion is the oldest format version this package reads.
const OldestVersion = 1

// magic starts every checkpoint file.
const magic = "sandboxipam-checkpoint"

// maxBody bounds what Decode accepts, so a damaged length field cannot make
// it allocate without limit. 10,000 assignments take about 3 MB.
const maxBody = 256 << 20

// ErrCorrupt: the data is not a checkpoint this package can trust, whether
// torn, bit-flipped, from another version or internally inconsistent.
var ErrCorrupt = errors.New("checkpoint corrupt")

// ErrNewer: the file was written by a newer sandboxipam, in a format
// version this build does not know. It is not corrupt and must not be
// moved aside or overwritten; run the newer build (or remove the state
// directory on purpose).
var ErrNewer = errors.New("checkpoint written by a newer sandboxipam")

// File is the whole datastore state.
type File struct {
	SavedAt time.Time `json:"savedAt"`
	// Unproven is true while the store could not prove which addresses
	// are free (after a lost checkpoint, until the runtime is adopted).
	Unproven bool `json:"unproven,omitempty"`
	// Cursors are the addresses handed out last, one per family;
	// allocation continues after them so a restart does not change which
	// address comes next.
	Cursors     []netip.Addr `json:"cursors,omitempty"`
	Addresses   []Address    `json:"addresses"`
	Assignments []Assignment `json:"assignments"`
	// Node is the node IP source's record of its Node; nil for other
	// sources. Optional, so it needs no new format version: an older
	// build ignores it. A change to it is always written as a full
	// snapshot, never as a journal record.
	Node *NodeRanges `json:"node,omitempty"`
	// Deleted are the sandboxes whose CNI DEL the datastore answered
	// while a listing still showed them: a stopped sandbox's report of
	// an address is stale for them, after a restart too. Optional, so it
	// needs no new format version: an older build ignores it, and a file
	// without it loads as remembering none.
	Deleted []Deleted `json:"deleted,omitempty"`
}

// Deleted is one sandbox interface whose CNI DEL was answered, and when.
type Deleted struct {
	Network   string    `json:"network"`
	SandboxID string    `json:"sandboxID"`
	IfName    string    `json:"ifName"`
	At        time.Time `json:"at"`
}

// NodeRanges is what the node IP source last read from its Node object,
// so that a restart serves ADD and DEL with the API server unreachable.
type NodeRanges struct {
	// Name and UID identify the Node; a new UID under the same name is a
	// Node deleted and registered again, whose ranges replace the old.
	Name string `json:"name"`
	UID  string `json:"uid"`
	// PodCIDRs are the Node's spec.podCIDRs: the pool's current ranges.
	PodCIDRs []netip.Prefix `json:"podCIDRs"`
	// Retiring are ranges of an earlier UID that still held addresses
	// when the last snapshot was taken: nothing is handed out of them.
	Retiring []netip.Prefix `json:"retiring,omitempty"`
}

// Address is an address whose state must survive a restart: held by an
// assignment, cooling down, or quarantined. Free addresses are not stored:
// the pool itself comes back from the IP sources at every start, so a
// changed config never resurrects addresses it dropped.
type Address struct {
	IP      netip.Addr   `json:"ip"`
	Subnet  netip.Prefix `json:"subnet,omitzero"`
	Gateway netip.Addr   `json:"gw,omitzero"`
	Group   string       `json:"group,omitempty"`
	// Quarantined addresses are never handed out: their state is unknown.
	Quarantined bool `json:"quarantined,omitempty"`
	// ReleasedAt is when the address was last released; it cools down
	// from then.
	ReleasedAt time.Time `json:"releasedAt,omitzero"`
}

// Assignment is one pod interface's address.
type Assignment struct {
	Network   string `json:"network"`
	SandboxID string `json:"sandboxID"`
	IfName    string `json:"ifName"`
	PodName   string `json:"pod,omitempty"`
	Namespace string `json:"ns,omitempty"`
	UID       string `json:"uid,omitempty"`
	// IPs are the interface's addresses, one per family of the pool
	// (two for a dual-stack pod), IPv4 first.
	IPs        []netip.Addr `json:"ips"`
	AssignedAt time.Time    `json:"at"`
	// ListedAt is when a successful runtime listing first showed the
	// sandbox; zero while no listing has. The reconciler releases only
	// assignments whose sandbox it saw once and no longer sees.
	ListedAt time.Time `json:"listedAt,omitzero"`
	// Wiring is how the CNI plugin ran for the ADD that made the
	// assignment: "plugin" (the main plugin: the pod has a pod link),
	// "ipamOnly", or empty (unknown: an older plugin, an adopted
	// assignment, or a file written before the field). Only "plugin", or
	// an empty one on a node whose config says the plugin wires every pod,
	// lets a missing pod link count as evidence that the pod is gone.
	Wiring string `json:"wiring,omitempty"`
	// NetNS is the pod's network namespace as the ADD named it (a
	// /run/netns file or /proc/PID/ns/net); empty for an adopted
	// assignment or a file written before the field. NetNSDev and
	// NetNSIno identify that namespace (its nsfs file's device and inode,
	// read at ADD; zero when ipamd could not open it), so another
	// namespace later at the same path (a reused PID) does not count. A
	// namespace still on the node keeps the address; its absence proves
	// nothing.
	NetNS    string `json:"netns,omitempty"`
	NetNSDev uint64 `json:"netnsDev,omitempty"`
	NetNSIno uint64 `json:"netnsIno,omitempty"`
}

// Encode renders f with its header. It fails only for a time outside the
// years 0 to 9999, which JSON's RFC 3339 cannot carry.
func Encode(f File) ([]byte, error) {
	if err := checkYears(f); err != nil {
		return nil, fmt.Errorf("encode checkpoint: %w", err)
	}
	body := appendFile(make([]byte, 0, 64+len(f.Addresses)*96+len(f.Assignments)*240), f)
	sum := sha256.Sum256(body)
	out := appendHeader(make([]byte, 0, len(body)+128), hex.EncodeToString(sum[:]), len(body))
	return append(out, body...), nil
}

func checkYears(f File) error {
	err := checkYear(f.SavedAt)
	for _, a := range f.Addresses {
		err = errors.Join(err, checkYear(a.ReleasedAt))
	}
	for _, a := range f.Assignments {
		err = errors.Join(err, checkYear(a.AssignedAt), checkYear(a.ListedAt))
	}
	for _, d := range f.Deleted {
		err = errors.Join(err, checkYear(d.At))
	}
	return err
}

func checkYear(t time.Time) error {
	if y := t.Year(); y < 0 || y > 9999 {
		return fmt.Errorf("time %s outside the years 0 to 9999", t)
	}
	return nil
}

// Decode verifies and parses data, upgrading an older version in memory.
// Every failure wraps ErrCorrupt, but for a newer version: ErrNewer.
func Decode(data []byte) (File, error) {
	f, _, err := decode(data)
	return f, err
}

// decode is Decode, also returning the file's format version.
func decode(data []byte) (File, int, error) {
	header, body, ok := bytes.Cut(data, []byte("\n"))
	if !ok {
		return File{}, 0, fmt.Errorf("%w: no header line", ErrCorrupt)
	}
	version, err := checkHeader(string(header), body)
	if err != nil {
		return File{}, 0, err
	}
	var f File
	if version == 1 {
		f, err = decodeV1(body)
	} else if err = json.Unmarshal(body, &f); err != nil {
		err = fmt.Errorf("%w: body: %v", ErrCorrupt, err)
	}
	if err != nil {
		return File{}, 0, err
	}
	if err := validate(f); err != nil {
		return File{}, 0, err
	}
	return f, version, nil
}

// checkHeader checks magic, version, length and checksum of body, and
// returns the version.
func checkHeader(header string, body []byte) (int, error) {
	fields := strings.Fields(header)
	if len(fields) != 4 || fields[0] != magic {
		return 0, fmt.Errorf("%w: header %.80q is not a sandboxipam checkpoint header", ErrCorrupt, header)
	}
	version, err := checkVersion("checkpoint", fields[1], Version)
	if err != nil {
		return 0, err
	}
	wantSum, okSum := strings.CutPrefix(fields[2], "sha256=")
	lenText, okLen := strings.CutPrefix(fields[3], "len=")
	if !okSum || !okLen {
		return 0, fmt.Errorf("%w: header %.80q lacks sha256= or len=", ErrCorrupt, header)
	}
	wantLen, err := strconv.Atoi(lenText)
	if err != nil || wantLen < 0 || wantLen > maxBody {
		return 0, fmt.Errorf("%w: header length %.20q", ErrCorrupt, lenText)
	}
	if len(body) != wantLen {
		return 0, fmt.Errorf("%w: body is %d bytes, header says %d (torn write?)", ErrCorrupt, len(body), wantLen)
	}
	sum := sha256.Sum256(body)
	if hex.EncodeToString(sum[:]) != wantSum {
		return 0, fmt.Errorf("%w: body checksum mismatch", ErrCorrupt)
	}
	return version, nil
}

// checkVersion parses a header's "v<n>" field: a version this build
// reads, or ErrNewer for a higher one (a downgrade), or ErrCorrupt.
func checkVersion(what, field string, current int) (int, error) {
	text, ok := strings.CutPrefix(field, "v")
	n, err := strconv.Atoi(text)
	switch {
	case !ok || err != nil || n < 1:
		return 0, fmt.Errorf("%w: %s format %.20q is not a version", ErrCorrupt, what, field)
	case n > current:
		return 0, fmt.Errorf("%w: %s format v%d, this build reads v%d to v%d; it was written by a newer sandboxipam: run that build, or remove the state directory on purpose (ipamd then starts unproven)",
			ErrNewer, what, n, OldestVersion, current)
	case n < OldestVersion:
		return 0, fmt.Errorf("%w: %s format v%d, this build reads v%d to v%d", ErrCorrupt, what, n, OldestVersion, current)
	}
	return n, nil
}

// validate rejects a body that parses but cannot be a state the datastore
// wrote: an address twice, an assignment without its address, one address
// under two keys.
func validate(f File) error {
	known := make(map[netip.Addr]bool, len(f.Addresses))
	for i, a := range f.Addresses {
		if !a.IP.IsValid() {
			return fmt.Errorf("%w: addresses[%d]: invalid IP", ErrCorrupt, i)
		}
		if known[a.IP] {
			return fmt.Errorf("%w: addresses[%d]: %s listed twice", ErrCorrupt, i, a.IP)
		}
		known[a.IP] = true
	}
	type key struct{ network, sandbox, ifName string }
	keys := make(map[key]bool, len(f.Assignments))
	held := make(map[netip.Addr]bool, len(f.Assignments))
	for i, a := range f.Assignments {
		k := key{a.Network, a.SandboxID, a.IfName}
		switch {
		case a.SandboxID == "":
			return fmt.Errorf("%w: assignments[%d]: empty sandbox ID", ErrCorrupt, i)
		case len(a.IPs) == 0:
			return fmt.Errorf("%w: assignments[%d]: no address", ErrCorrupt, i)
		case keys[k]:
			return fmt.Errorf("%w: assignments[%d]: key listed twice", ErrCorrupt, i)
		}
		for _, ip := range a.IPs {
			switch {
			case !known[ip]:
				return fmt.Errorf("%w: assignments[%d]: address %s is not in the address list", ErrCorrupt, i, ip)
			case held[ip]:
				return fmt.Errorf("%w: assignments[%d]: address %s assigned twice", ErrCorrupt, i, ip)
			}
			held[ip] = true
		}
		keys[k] = true
	}
	return nil
}
