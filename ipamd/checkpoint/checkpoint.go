// Package checkpoint is the on-disk format of ipamd's datastore: a
// snapshot file that holds the whole state, written atomically and
// verified on load, and a journal next to it (see journal.go) of the
// changes made since, one appended record per group commit. Load reads
// both.
//
// The file is a header line followed by a JSON body:
//
//	sandboxipam-checkpoint v1 sha256=<hex of body> len=<bytes of body>
//	{"savedAt":...,"addresses":[...],"assignments":[...]}
//
// The header makes a torn write (short body), a bit flip (checksum) and a
// file from another program or version (magic, version) all fail loudly
// instead of loading as an empty or partial store. JSON keeps the body
// readable by an operator with jq; the checksum, not JSON parsing, is what
// detects damage.
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

// Version is the format version this package writes and reads.
const Version = 1

// magic starts every checkpoint file.
const magic = "sandboxipam-checkpoint"

// maxBody bounds what Decode accepts, so a damaged length field cannot make
// it allocate without limit. 10,000 assignments take about 3 MB.
const maxBody = 256 << 20

// ErrCorrupt: the data is not a checkpoint this package can trust, whether
// torn, bit-flipped, from another version or internally inconsistent.
var ErrCorrupt = errors.New("checkpoint corrupt")

// File is the whole datastore state.
type File struct {
	SavedAt time.Time `json:"savedAt"`
	// Unproven is true while the store could not prove which addresses
	// are free (after a lost checkpoint, until the runtime is adopted).
	Unproven bool `json:"unproven,omitempty"`
	// Cursor is the address handed out last; allocation continues after
	// it so a restart does not change which address comes next.
	Cursor      netip.Addr   `json:"cursor,omitzero"`
	Addresses   []Address    `json:"addresses"`
	Assignments []Assignment `json:"assignments"`
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
	Network    string     `json:"network"`
	SandboxID  string     `json:"sandboxID"`
	IfName     string     `json:"ifName"`
	PodName    string     `json:"pod,omitempty"`
	Namespace  string     `json:"ns,omitempty"`
	UID        string     `json:"uid,omitempty"`
	IP         netip.Addr `json:"ip"`
	AssignedAt time.Time  `json:"at"`
	// ListedAt is when a successful runtime listing first showed the
	// sandbox; zero while no listing has. The reconciler releases only
	// assignments whose sandbox it saw once and no longer sees.
	ListedAt time.Time `json:"listedAt,omitzero"`
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
	return err
}

func checkYear(t time.Time) error {
	if y := t.Year(); y < 0 || y > 9999 {
		return fmt.Errorf("time %s outside the years 0 to 9999", t)
	}
	return nil
}

// Decode verifies and parses data. Every failure wraps ErrCorrupt.
func Decode(data []byte) (File, error) {
	header, body, ok := bytes.Cut(data, []byte("\n"))
	if !ok {
		return File{}, fmt.Errorf("%w: no header line", ErrCorrupt)
	}
	if err := checkHeader(string(header), body); err != nil {
		return File{}, err
	}
	var f File
	if err := json.Unmarshal(body, &f); err != nil {
		return File{}, fmt.Errorf("%w: body: %v", ErrCorrupt, err)
	}
	if err := validate(f); err != nil {
		return File{}, err
	}
	return f, nil
}

// checkHeader checks magic, version, length and checksum of body.
func checkHeader(header string, body []byte) error {
	fields := strings.Fields(header)
	if len(fields) != 4 || fields[0] != magic {
		return fmt.Errorf("%w: header %.80q is not a sandboxipam checkpoint header", ErrCorrupt, header)
	}
	if fields[1] != "v"+strconv.Itoa(Version) {
		return fmt.Errorf("%w: format %.20q, this build reads v%d", ErrCorrupt, fields[1], Version)
	}
	wantSum, okSum := strings.CutPrefix(fields[2], "sha256=")
	lenText, okLen := strings.CutPrefix(fields[3], "len=")
	if !okSum || !okLen {
		return fmt.Errorf("%w: header %.80q lacks sha256= or len=", ErrCorrupt, header)
	}
	wantLen, err := strconv.Atoi(lenText)
	if err != nil || wantLen < 0 || wantLen > maxBody {
		return fmt.Errorf("%w: header length %.20q", ErrCorrupt, lenText)
	}
	if len(body) != wantLen {
		return fmt.Errorf("%w: body is %d bytes, header says %d (torn write?)", ErrCorrupt, len(body), wantLen)
	}
	sum := sha256.Sum256(body)
	if hex.EncodeToString(sum[:]) != wantSum {
		return fmt.Errorf("%w: body checksum mismatch", ErrCorrupt)
	}
	return nil
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
		case !known[a.IP]:
			return fmt.Errorf("%w: assignments[%d]: address %s is not in the address list", ErrCorrupt, i, a.IP)
		case held[a.IP]:
			return fmt.Errorf("%w: assignments[%d]: address %s assigned twice", ErrCorrupt, i, a.IP)
		case keys[k]:
			return fmt.Errorf("%w: assignments[%d]: key listed twice", ErrCorrupt, i)
		}
		held[a.IP] = true
		keys[k] = true
	}
	return nil
}
