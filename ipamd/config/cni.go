package config

// CNI is how ipamd announces itself to the runtime.
type CNI struct {
	// ConfListPath, when set, is where ipamd writes its CNI conflist
	// (network name, socket) once it is ready to answer ADD: a runtime
	// sees the network only while ipamd can serve it, and the node stays
	// NotReady until then. Default empty: not written.
	ConfListPath string `yaml:"confListPath" desc:"write the CNI conflist here once ready (empty: not written)"`
	// PortMap maps pods' hostPorts through the CNI reference portmap
	// plugin: the conflist declares the portMappings capability on
	// sandboxipam's entry, so that the runtime passes a pod's hostPorts,
	// and the plugin runs portmap (from CNI_PATH) for a pod that has some,
	// and only for such a pod. The value is portmap's backend: iptables
	// or nftables; auto lets portmap probe (two iptables execs on each of
	// its calls); off maps no hostPorts. Default iptables, as kube-proxy's
	// default mode. A pod without hostPorts never starts portmap.
	PortMap string `yaml:"portMap" desc:"map hostPorts through the portmap plugin, run only for pods with hostPorts, with this backend: iptables, nftables, auto (probed per call) or off"`
}

// Values of cni.portMap.
const (
	PortMapIPTables = "iptables"
	PortMapNFTables = "nftables"
	PortMapAuto     = "auto"
	PortMapOff      = "off"
)
