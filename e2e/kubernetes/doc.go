// Package kubernetes runs sandboxipam under a real kubelet ("make
// e2e-kubernetes"): kubelet v1.37.2 built by tools/kubernetes, in
// standalone mode with static pods, against the private containerd that
// internal/testenv starts (and again against its private CRI-O, ipamd's pod
// template then the crio overlay's), with the project's image
// (internal/image) imported and ipamd run as a static pod made from the
// DaemonSet's own pod template (deploy/kubernetes); and a one-node cluster (etcd,
// kube-apiserver, kube-controller-manager, kube-scheduler and a kubelet
// registered to them, all on 127.0.0.1) to which the static-one-node overlay is
// applied, as kubectl apply -k would. The control plane comes from
// internal/kubeenv.
//
// TestThreeNodeCluster runs a cluster of three nodes on this one machine.
// A "hub" network namespace holds a bridge and the control plane
// (kube-controller-manager assigning each node an IPv4 and an IPv6
// podCIDR); nothing is routed to or from the host's namespace, so nothing
// can leave the machine. There is no kube-proxy (but in the conformance
// tests, below): the hub holds the kubernetes Service's address and the API server listens on port 443, so
// ipamd's in-cluster config reaches it as on a real cluster. Each node is a
// network namespace with a veth to the bridge and a mount namespace, held
// by a shell started as "nsenter --net=NETNS unshare --mount --propagation
// private" (not "ip netns exec", which remounts /sys), with overlays over
// /etc, /var and /opt, a tmpfs on /run and directories of its own for
// /etc/cni/net.d, /opt/cni/bin, /var/lib/sandboxipam and kubelet;
// containerd (testenv's InNode) and kubelet run in both namespaces, so the
// DaemonSet's host paths are the node's own and three ipamds share no
// file. The test then checks, with exact addresses, the API server against
// every node's runtime and ipamctl, and leaves the host's links, routes,
// sysctls, mounts and cgroups as it found them. TestThreeNodePool runs
// the same cluster in pool mode with the reclaimer, and walks issue 23's
// scenarios: a claim interrupted by SIGKILL (a proxy in the test holds the
// API server's answer), a dead node's blocks kept for its pods, then
// reclaimed and reused, and pods started and stopped with the API server
// down. TestClusterScaleBenchmark
// (SANDBOXIPAM_E2E_BENCH=1, make bench-kubernetes) times 110 pods on one
// of its nodes, sandboxipam against bridge + host-local.
//
// TestConformancePool, TestGranularChecksPool and TestGranularChecksNode
// (SANDBOXIPAM_E2E_CONFORMANCE=1, make e2e-conformance; .ci/run runs the
// first) run Kubernetes' own network tests, e2e.test v1.37.2 unmodified,
// on the same cluster: the [sig-network] Conformance tests in pool mode,
// the Networking Granular Checks for Pods and Services in both modes. For them the cluster gains what a real one has: kube-proxy
// (iptables mode) on every node, run as kubelet is, in the node's
// namespaces, so its rules are the node's alone; CoreDNS (tools/coredns)
// as kubeadm installs it, kubelet's clusterDNS; the framework's images
// (agnhost, pause) built here and imported under the names it expects, so
// nothing is pulled; and the hub routing to the pods, as a control-plane
// node would, for the API server's proxy to them. e2e.test runs in the
// hub, where the API server listens.
//
// The tests run only when SANDBOXIPAM_E2E_KUBERNETES=1, so that a plain
// "go test ./..." never builds or starts a kubelet; then they need root,
// and skip where the runtime cannot run unless CI=true.
//
// kubelet changes host settings it should not own on a test machine: it
// sets kernel.panic, kernel.panic_on_oops and vm.overcommit_memory, and
// writes under /var/lib/kubelet and /var/log/containers whatever its root
// directory says. It therefore runs in a mount namespace of its own, with
// stand-in files over those sysctls and tmpfs over those directories; only
// its root directory is a shared mount, so the volumes it mounts reach
// containerd. It also runs in the private containerd's network namespace,
// where hostNetwork pods (ipamd) live, so its probes reach ipamd on
// 127.0.0.1 exactly as on a node; the cluster's control plane listens on
// that namespace's loopback too, so its ports never meet the host's.
package kubernetes
