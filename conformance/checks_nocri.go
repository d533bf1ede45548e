package conformance

import (
	"context"
	"errors"
	"fmt"

	"github.com/sandboxipam/sandboxipam/runtime"
)

// ruleNoCRI is what the containerd-without-cri-refused check verifies: rule
// 2 applied to the runtime a Docker or cri-dockerd node has at containerd's
// default socket. Docker's own containerd runs without the CRI plugin, so
// its k8s.io namespace is empty: an adapter that read it and answered "no
// pods" would make ipamd release every address on the node.
const ruleNoCRI = rule2 + "; " + ruleWrong + " (a containerd without its CRI plugin is another runtime)"

// checkNoCRI points the adapter at a containerd whose CRI plugin is
// disabled and requires Info and ListSandboxes to fail with
// ErrWrongRuntime, and GetSandbox never to report a sandbox gone.
func checkNoCRI(ctx context.Context, s *session) error {
	if s.cfg.NoCRIEndpoint == "" {
		return skipf("containerd without CRI not configured (no NoCRIEndpoint, --no-cri-endpoint)")
	}
	if s.cfg.EndpointArgs == nil {
		return skipf("containerd without CRI needs EndpointArgs to point the adapter at %s", s.cfg.NoCRIEndpoint)
	}
	client, _, err := s.launch(ctx, s.cfg.EndpointArgs(s.cfg.NoCRIEndpoint))
	if err != nil {
		// Refusing to start is safe: ipamd sees no adapter, not "no pods".
		s.note("the adapter refused to start against a containerd without CRI: %v", err)
		return nil
	}
	callCtx, cancel := s.callCtx(ctx)
	defer cancel()
	info, err := client.Info(callCtx)
	if !errors.Is(err, runtime.ErrWrongRuntime) {
		return mismatch("Info against a containerd without its CRI plugin did not report runtime.ErrWrongRuntime",
			"an error wrapping runtime.ErrWrongRuntime", describeResult(fmt.Sprintf("runtime %q version %q, no error", info.RuntimeName, info.RuntimeVersion), err))
	}
	s.note("Info: %v", err)
	list, err := client.ListSandboxes(callCtx)
	if !errors.Is(err, runtime.ErrWrongRuntime) {
		return mismatch("ListSandboxes against a containerd without its CRI plugin did not report runtime.ErrWrongRuntime: "+
			"an empty list would tell ipamd that every pod is gone",
			"an error wrapping runtime.ErrWrongRuntime", describeResult(fmt.Sprintf("%d sandboxes, no error", len(list)), err))
	}
	sb, err := client.GetSandbox(callCtx, randomSandboxID())
	if err == nil || errors.Is(err, runtime.ErrNotFound) {
		return mismatch("GetSandbox against a containerd without its CRI plugin reported the sandbox present or gone",
			"an error other than runtime.ErrNotFound", describeGet(sb, err))
	}
	return expectFailFast(ctx, s, client, "against a containerd without its CRI plugin")
}

// describeResult describes a call's result for a report: its error when it
// failed, else what it returned.
func describeResult(success string, err error) string {
	if err != nil {
		return "error: " + err.Error()
	}
	return success
}
