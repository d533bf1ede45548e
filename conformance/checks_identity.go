package conformance

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/sandboxipam/sandboxipam/conformance/fixture"
	"github.com/sandboxipam/sandboxipam/runtime"
)

// appContainer is the name of the application container the suite's pods
// run next to their sandbox.
const appContainer = "app"

func checkInfo(ctx context.Context, s *session) error {
	callCtx, cancel := s.callCtx(ctx)
	defer cancel()
	info, err := s.adapter.Info(callCtx)
	if err != nil {
		return failf("Info failed: %v", err)
	}
	s.note("adapter %q version %q; runtime %q version %q at %q",
		info.AdapterName, info.AdapterVersion, info.RuntimeName, info.RuntimeVersion, info.Endpoint)
	if info.AdapterName == "" || info.RuntimeName == "" {
		return mismatch("Info leaves a name empty", "AdapterName and RuntimeName set",
			fmt.Sprintf("AdapterName=%q RuntimeName=%q", info.AdapterName, info.RuntimeName))
	}
	return nil
}

func checkSandboxIDExact(ctx context.Context, s *session) error {
	shared, err := s.sharedPods(ctx)
	if err != nil {
		return err
	}
	pods := shared.all()
	list, err := s.list(ctx)
	if err != nil {
		return err
	}
	for _, pod := range pods {
		if _, ok := findByID(list, pod.SandboxID); ok {
			continue
		}
		sb, ok := findForPod(list, pod)
		if !ok {
			return mismatch(fmt.Sprintf("pod %s is not listed at all", pod.Spec.Name), pod.SandboxID, listedIDs(list))
		}
		return mismatch(fmt.Sprintf("pod %s: %s", pod.Spec.Name, diagnoseID(pod.SandboxID, sb.ID, pod)), pod.SandboxID, sb.ID)
	}
	return nil
}

func checkNoAppContainerIDs(ctx context.Context, s *session) error {
	shared, err := s.sharedPods(ctx)
	if err != nil {
		return err
	}
	pod := shared.multi
	if len(pod.ContainerIDs) == 0 {
		return skipf("app containers not supported by the %s fixture", s.fixture.Name())
	}
	list, err := s.list(ctx)
	if err != nil {
		return err
	}
	for _, sb := range list {
		if appID, _, ok := appContainerOf(sb.ID, []fixture.Pod{pod}); ok {
			return mismatch(fmt.Sprintf("listed application container %s of pod %s as a sandbox: this is the seed bug "+
				"(ipamd records the IP under an ID that no CNI DEL ever carries, so the IP leaks)", appID, pod.Spec.Name),
				pod.SandboxID, sb.ID)
		}
	}
	for _, appID := range pod.ContainerIDs {
		sb, err := s.get(ctx, appID)
		if !errors.Is(err, runtime.ErrNotFound) {
			return mismatch(fmt.Sprintf("GetSandbox of application container %s did not report ErrNotFound", appID),
				"an error wrapping runtime.ErrNotFound", describeGet(sb, err))
		}
	}
	return nil
}

func checkPodIdentity(ctx context.Context, s *session) error {
	shared, err := s.sharedPods(ctx)
	if err != nil {
		return err
	}
	list, err := s.list(ctx)
	if err != nil {
		return err
	}
	// The multi-container pod first: an adapter that takes identity from
	// whichever container it meets shows it there.
	for _, pod := range shared.all() {
		sb, ok := findForPod(list, pod)
		if !ok {
			return mismatch(fmt.Sprintf("pod %s is listed neither under its sandbox ID nor its UID", pod.Spec.Name),
				specIdentity(pod.Spec), listedIDs(list))
		}
		if got, want := sandboxIdentity(sb), specIdentity(pod.Spec); got != want {
			return mismatch(fmt.Sprintf("the listed sandbox of pod %s (%d app containers) does not carry its pod's identity",
				pod.Spec.Name, len(pod.Spec.Containers)), want, got)
		}
	}
	return nil
}

func checkHostNetwork(ctx context.Context, s *session) error {
	shared, err := s.sharedPods(ctx)
	if err != nil {
		return err
	}
	if shared.host == nil {
		return skipf("host-network pods not supported by the %s fixture", s.fixture.Name())
	}
	pods := []fixture.Pod{shared.plain, *shared.host}
	list, err := s.list(ctx)
	if err != nil {
		return err
	}
	for _, pod := range pods {
		sb, ok := findForPod(list, pod)
		if !ok {
			return mismatch(fmt.Sprintf("pod %s is not listed", pod.Spec.Name), pod.SandboxID, listedIDs(list))
		}
		if sb.HostNetwork != pod.Spec.HostNetwork {
			return mismatch(fmt.Sprintf("pod %s: wrong HostNetwork", pod.Spec.Name),
				"HostNetwork="+strconv.FormatBool(pod.Spec.HostNetwork), "HostNetwork="+strconv.FormatBool(sb.HostNetwork))
		}
	}
	return nil
}

func checkGetSandbox(ctx context.Context, s *session) error {
	shared, err := s.sharedPods(ctx)
	if err != nil {
		return err
	}
	pod := shared.multi
	sb, err := s.get(ctx, pod.SandboxID)
	if err != nil {
		return mismatch(fmt.Sprintf("GetSandbox of running pod %s failed", pod.Spec.Name), "the sandbox", err.Error())
	}
	switch {
	case sb.ID != pod.SandboxID:
		return mismatch("GetSandbox returned another ID", pod.SandboxID, sb.ID)
	case sandboxIdentity(sb) != specIdentity(pod.Spec):
		return mismatch("GetSandbox returned another identity", specIdentity(pod.Spec), sandboxIdentity(sb))
	case sb.State != runtime.StateReady:
		return mismatch("GetSandbox of a running sandbox", runtime.StateReady.String(), sb.State.String())
	}
	return nil
}

func checkGetEmptyID(ctx context.Context, s *session) error {
	sb, err := s.get(ctx, "")
	if !errors.Is(err, runtime.ErrInvalidArgument) {
		return mismatch("GetSandbox(\"\") did not report ErrInvalidArgument",
			"an error wrapping runtime.ErrInvalidArgument", describeGet(sb, err))
	}
	return nil
}

// describeGet formats what a GetSandbox call returned, for a failure.
func describeGet(sb runtime.Sandbox, err error) string {
	if err != nil {
		return "error: " + err.Error()
	}
	return fmt.Sprintf("sandbox %s (%s, %s), no error", sb.ID, sandboxIdentity(sb), sb.State)
}
