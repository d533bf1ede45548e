package ipamdlease

import (
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// Where and how a node's ipamd answers "alive" on the data plane: the
// reclaimer's second channel (package cluster/reclaim, condition (e)).
// A Lease says only that the API server cannot hear a node; before the
// reclaimer takes a block, it asks the node's ipamd itself, on the
// node's own addresses, which ipamd records in its Lease.
const (
	// LeaseAddressesAnnotation lists, comma-separated, the host:port
	// addresses where this ipamd serves AlivePath (IPv6 hosts in
	// brackets), for example "10.0.0.5:61682,[fd00::5]:61682". Absent or
	// empty: this ipamd does not answer, and the reclaimer cannot ask it.
	LeaseAddressesAnnotation = "sandboxipam.io/alive-addresses"
	// AlivePath is the HTTP path of the answer: a GET returns Alive as
	// JSON. It only reads, needs no credentials, and may be forged: an
	// answer can delay a reclaim, never cause one.
	AlivePath = "/v1/alive"
	// DefaultAlivePort is the port ipamd's DaemonSet answers on (beside
	// the reclaimer's 61680 and 61681).
	DefaultAlivePort = 61682
	// ConfirmNodeGoneAnnotation, on an IPBlock, is an operator's word that
	// the machine of the block's node is gone: its value must be the
	// block's spec.nodeUID. Only an administrator's RBAC may write it;
	// the admission policy sandboxipam-node-blocks refuses it to ipamd's
	// ServiceAccount.
	ConfirmNodeGoneAnnotation = "sandboxipam.io/confirm-node-gone"
)

// Alive is ipamd's answer on AlivePath.
type Alive struct {
	// Node and NodeUID are the Node this ipamd claims blocks under; UID
	// is empty before ipamd has learned it.
	Node    string `json:"node"`
	NodeUID string `json:"nodeUID"`
	// Blocks are the CIDRs of the blocks it holds.
	Blocks []string `json:"blocks"`
}

// FormatAddresses is the LeaseAddressesAnnotation value of addrs, sorted
// so that the same addresses always write the same value.
func FormatAddresses(addrs []netip.AddrPort) string {
	out := make([]string, 0, len(addrs))
	for _, a := range addrs {
		out = append(out, a.String())
	}
	slices.Sort(out)
	return strings.Join(slices.Compact(out), ",")
}

// ParseAddresses reads a LeaseAddressesAnnotation value. Every entry must
// be an IP address and a port: a host name would make the reclaimer ask
// DNS, which a node cannot be trusted to name.
func ParseAddresses(v string) ([]netip.AddrPort, error) {
	var out []netip.AddrPort
	for _, s := range strings.Split(v, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		a, err := parseAddrPort(s)
		if err != nil {
			return nil, fmt.Errorf("annotation %s: %w", LeaseAddressesAnnotation, err)
		}
		out = append(out, a)
	}
	return out, nil
}

func parseAddrPort(s string) (netip.AddrPort, error) {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("%q is not host:port: %w", s, err)
	}
	ip, err := netip.ParseAddr(host)
	if err != nil || ip.Zone() != "" {
		return netip.AddrPort{}, fmt.Errorf("%q: host %q is not an IP address without a zone", s, host)
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil || p == 0 {
		return netip.AddrPort{}, fmt.Errorf("%q: port %q is not 1-65535", s, port)
	}
	return netip.AddrPortFrom(ip.Unmap(), uint16(p)), nil
}
