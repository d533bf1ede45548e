package config

// CNI is how ipamd announces itself to the runtime.
type CNI struct {
	// ConfListPath, when set, is where ipamd writes its CNI conflist
	// (network name, socket) once it is ready to answer ADD: a runtime
	// sees the network only while ipamd can serve it, and the node stays
	// NotReady until then. Default empty: not written.
	ConfListPath string `yaml:"confListPath" desc:"write the CNI conflist here once ready (empty: not written)"`
	// PortMap chains the CNI reference portmap plugin after sandboxipam in
	// that conflist, with the portMappings capability, so that the runtime
	// passes a pod's hostPorts and they reach the pod, as flannel and
	// Calico chain it. The value is portmap's backend: iptables or
	// nftables; auto lets portmap probe on every ADD and DEL (two
	// iptables execs each, even for a pod without hostPorts); off chains
	// nothing. Default iptables, as kube-proxy's default mode: a pod
	// without hostPorts then costs portmap only its start.
	PortMap string `yaml:"portMap" desc:"chain the portmap plugin (hostPorts) with this backend: iptables, nftables, auto (probed per call) or off"`
}

// Values of cni.portMap.
const (
	PortMapIPTables = "iptables"
	PortMapNFTables = "nftables"
	PortMapAuto     = "auto"
	PortMapOff      = "off"
)
