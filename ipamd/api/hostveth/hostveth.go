// Package hostveth names the host side of the veth pair the CNI plugin
// makes for each pod attachment. The plugin and ipamd share it: ipamd
// finds a pod's link on the node by the same name when it must account
// for an address the runtime does not report (see ipamd/hostlinks).
//
// See docs/architecture.md for where this package sits and the life of an
// ADD, a DEL, a reconcile pass and a restart through the daemon.
package hostveth

import (
	"crypto/sha256"
	"encoding/hex"
)

// DefaultPrefix starts every host-side veth name unless the network
// config sets hostVethPrefix.
const DefaultPrefix = "sbx"

// maxIfNameLen is the kernel's limit on interface names (IFNAMSIZ - 1).
const maxIfNameLen = 15

// Name is the host-side veth of one attachment: prefix plus the first hex
// characters of SHA-256(sandboxID "/" ifName), 15 characters in all. DEL
// recomputes it, so no state is kept on the node.
func Name(prefix, sandboxID, ifName string) string {
	sum := sha256.Sum256([]byte(sandboxID + "/" + ifName))
	return prefix + hex.EncodeToString(sum[:])[:maxIfNameLen-len(prefix)]
}
