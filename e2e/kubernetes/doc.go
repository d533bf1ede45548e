// Package kubernetes runs sandboxipam under a real kubelet ("make
// e2e-kubernetes"): kubelet v1.37.2 built by tools/kubernetes, in
// standalone mode with static pods, against the private containerd that
// internal/testenv starts, with the project's image (internal/image)
// imported and ipamd run as a static pod made from the DaemonSet's own pod
// template (deploy/kubernetes); and a one-node cluster (etcd,
// kube-apiserver, kube-controller-manager, kube-scheduler and a kubelet
// registered to them, all on 127.0.0.1) to which the containerd overlay is
// applied, as kubectl apply -k would.
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
