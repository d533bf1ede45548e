// Package containerd is the runtime adapter for containerd with its CRI
// plugin, in two modes.
//
// Native mode (the default) reads containerd's own API in the CRI
// plugin's namespace (k8s.io): a pod sandbox is a container labelled
// io.cri-containerd.kind=sandbox, its ID is the sandbox ID the CNI plugin
// receives, and its state is its task's. The pod's identity comes from the
// spec annotations io.kubernetes.cri.sandbox-name, -namespace and -uid,
// which containerd always sets, not from the io.kubernetes.pod.* labels,
// which only kubelet sets. The pod IPs come from the CRI plugin's sandbox
// metadata extension while the sandbox's network namespace exists. Native
// mode keeps working when the CRI service is wedged; it makes one
// container listing plus one task call per sandbox. It first asks
// containerd's introspection service that the CRI plugin is loaded:
// Docker's own containerd, which auto may meet at the default socket,
// runs without it, and its empty k8s.io namespace would otherwise pass
// for a node without pods. Such a containerd is runtime.ErrWrongRuntime.
//
// CRI mode (Config.CRI) lists through containerd's CRI plugin with the
// shared CRI client (package cri), exactly as kubelet and crictl see pods.
package containerd

import (
	"log/slog"

	"github.com/sandboxipam/sandboxipam/adapters/cri"
	"github.com/sandboxipam/sandboxipam/runtime"
)

// AdapterName is the name the adapter reports in Info.
const AdapterName = "containerd"

// New validates cfg and returns the adapter for its mode: a *Native, or a
// *cri.Adapter in CRI mode. Both connect lazily and implement io.Closer.
// A nil logger discards.
func New(cfg Config, log *slog.Logger) (runtime.RuntimeAdapter, error) {
	if cfg.CRI {
		return cri.New(cfg.criConfig(), log)
	}
	return NewNative(cfg, log)
}
