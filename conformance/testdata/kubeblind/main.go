// Command kubeblind is a deliberately broken adapter, built only by the
// conformance suite's own tests. It leaves the pods of the kube-*
// namespaces out of its listing, as an adapter whose author took them all
// for host-network pods that hold no pod IP would. CoreDNS is not one:
// ipamd would release its address while it runs. GetSandbox still finds
// them. The suite must fail it on every check that looks for a
// kube-system pod in a listing, on either base (see package brokenbase).
package main

import (
	"context"
	"slices"
	"strings"

	"github.com/sandboxipam/sandboxipam/conformance/testdata/brokenbase"
	"github.com/sandboxipam/sandboxipam/runtime"
)

// kubeBlind is the base adapter with the kube-* namespaces filtered out.
type kubeBlind struct {
	runtime.RuntimeAdapter
}

// ListSandboxes drops every sandbox of a kube-* namespace.
func (k kubeBlind) ListSandboxes(ctx context.Context) ([]runtime.Sandbox, error) {
	list, err := k.RuntimeAdapter.ListSandboxes(ctx)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(list, func(sb runtime.Sandbox) bool {
		return strings.HasPrefix(sb.Namespace, "kube-")
	}), nil
}

func main() {
	brokenbase.Serve("kubeblind", func(base runtime.RuntimeAdapter) runtime.RuntimeAdapter {
		return kubeBlind{RuntimeAdapter: base}
	})
}
