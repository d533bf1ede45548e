// Package cni is sandboxipam's CNI plugin: the CNI verbs and their dispatch
// (dispatch.go, in place of the library's skel), the client side of
// ipamd's lean wire API, and the veth, address and route set-up in the pod's
// network namespace. cmd/sandboxipam only calls Main.
//
// # Two modes
//
// As a main plugin ("type": "sandboxipam") it asks ipamd for the pod's
// address and wires the pod up itself. As an IPAM plugin (another plugin's
// config carries "ipam": {"type": "sandboxipam"}) it only asks ipamd and
// returns the addresses; the main plugin (bridge, ptp, ...) does the rest.
//
// # Configuration
//
// A conflist for a runtime's CNI conf_dir (containerd 1.6 speaks CNI up to
// 1.0.0; with 1.1.0 a runtime may also call STATUS and GC):
//
//	{
//	  "cniVersion": "1.0.0",
//	  "name": "podnet",
//	  "plugins": [
//	    {
//	      "type": "sandboxipam",
//	      "ipamdSocket": "/run/sandboxipam/ipamd.sock",
//	      "mtu": 1450,
//	      "hostVethPrefix": "sbx",
//	      "timeout": "5s"
//	    }
//	  ]
//	}
//
// Every key but "type" is optional; the defaults are DefaultIPAMDSocket,
// the kernel's MTU, DefaultHostVethPrefix and DefaultTimeout.
//
// hostPorts: with "capabilities": {"portMappings": true} and a "portMap"
// object ({"backend": "iptables"} or "nftables"; {} lets portmap probe) on
// the plugin's entry, the runtime passes a pod's hostPorts in
// runtimeConfig, and the plugin runs the CNI reference portmap plugin,
// found in CNI_PATH, for a pod that has some, as the next plugin of a
// chain would be run (portmap.go). A pod without hostPorts never starts
// portmap. This is the conflist ipamd writes (cni.portMap). The "name"
// should equal ipamd's network setting: its reconciler releases the
// attachments of that network only. As an IPAM plugin the same keys go in
// the "ipam" object, plus "routes" to return as they are:
//
//	"ipam": {"type": "sandboxipam", "routes": [{"dst": "0.0.0.0/0"}]}
//
// # Routing scheme (main plugin)
//
// The scheme is the one Calico and the AWS VPC CNI use, chosen because it
// needs no address on the host side and no bridge:
//
//   - the pod gets its address as a host route (/32, or /128), whatever
//     subnet ipamd reports, so every packet leaves through the veth;
//   - the pod's default route goes via the link-local gateway 169.254.1.1
//     (fe80::ecee:eeff:feee:eeee for IPv6) with the onlink flag, and a
//     permanent neighbour entry maps that gateway to the host veth's fixed
//     MAC ee:ee:ee:ee:ee:ee, so the pod never has to ARP for a gateway no
//     one owns;
//   - the host side gets a /32 (/128) route to the pod address via the host
//     veth. The host veth is named hostVethPrefix plus a hash of the
//     sandbox ID and interface name, so DEL finds it without any state.
//
// ipamd's gateway, when it reports one, is returned in IPAM mode only: in
// the main plugin the host veth is the pod's only neighbour.
//
// A dual-stack pool (ipamd's static CIDRs of both families) gives the pod
// one address of each family; both go on the pod interface, each with its
// default route and host route. IPv6 is usable the moment ADD returns: the
// pod's address is added with IFA_F_NODAD (no duplicate address detection
// for an address ipamd made unique), and the host veth gets a permanent
// neighbour entry for the pod's IPv6 address, so the host never waits on
// neighbour discovery, which the kernel sends only once the veth's own
// link-local address has finished its DAD. The plugin therefore sets no
// sysctl; it needs IPv6 enabled in the pod's namespace (a runtime that
// creates namespaces with net.ipv6.conf.*.disable_ipv6=1 makes ADD fail
// with a message saying so). Forwarding pod traffic beyond the node
// (net.ipv4.ip_forward, net.ipv6.conf.all.forwarding) is the node's own
// set-up.
//
// # Identity
//
// The datastore key is (network name, CNI_CONTAINERID, CNI_IFNAME).
// K8S_POD_NAME and K8S_POD_NAMESPACE are required for ADD (ipamd records
// them for operators and the reconciler's logs); K8S_POD_UID is optional.
// When K8S_POD_INFRA_CONTAINER_ID is given it must equal CNI_CONTAINERID:
// a mismatch is exactly the bug this project exists for (an ID that is not
// the infra sandbox's), so ADD refuses it before anything is assigned. DEL
// ignores it and always uses CNI_CONTAINERID, so a DEL is never refused.
//
// # Failure policy
//
// Every input is validated before ipamd is asked, so a bad config assigns
// nothing. Once an address is assigned, any later failure of ADD releases
// it again and removes the veth: a failed ADD leaks nothing.
//
// DEL is idempotent: a missing netns, interface or assignment is success.
// When ipamd cannot be reached, DEL fails (CNI code 11, try again later)
// instead of pretending success: the runtime retries a failed DEL, while a
// successful one would make it forget the sandbox and leak the address
// silently. ipamd's reconciler is the safety net for a DEL that never comes.
//
// STATUS reports CNI code 50 (plugin not available) when ipamd cannot be
// reached or is not ready. GC hands cni.dev/valid-attachments to ipamd,
// which releases every other attachment of the network; host veths of gone
// pods disappear with their netns, so GC has no link to remove.
//
// # Start-up
//
// The plugin is exec'd once per call, so it links no grpc: it speaks the
// wire framing (package wire) with messages encoded by hand in protobuf's
// binary format (package msg), and opens one netlink socket per namespace
// it touches. It does not link the CNI library's skel either: skel imports
// pkg/utils, whose regexp is compiled at every exec (dispatch.go says what
// that cost and what replaces it), nor the library's invoke package to run
// portmap, which brings OpenTelemetry and net/http (portmap.go measures
// both ways).
//
// See docs/architecture.md for where this package sits and the life of an
// ADD, a DEL, a reconcile pass and a restart through it.
package cni
