package conformance

import (
	"context"
	"errors"
	"fmt"
	"strconv"

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

// checkSandboxIDExact looks for every pod of the run's batch by its exact
// sandbox ID: pods with several, one and no app containers, every attempt
// of the restarted pod, the host-network pod.
func checkSandboxIDExact(ctx context.Context, s *session) error {
	shared, list, err := s.sharedListed(ctx)
	if err != nil {
		return err
	}
	for _, pod := range shared.batch() {
		if _, err := findForPod(list, pod, ""); err != nil {
			return err
		}
	}
	return nil
}

// checkNoAppContainerIDs compares every listed ID with every app container
// ID of every pod the run has created, and asks GetSandbox for each of them.
func checkNoAppContainerIDs(ctx context.Context, s *session) error {
	if _, err := s.sharedPods(ctx); err != nil {
		return err
	}
	pods := s.created.all()
	var apps int
	for _, pod := range pods {
		apps += len(pod.ContainerIDs)
	}
	if apps == 0 {
		return skipf("app containers not supported by the %s fixture", s.fixture.Name())
	}
	list, err := s.list(ctx)
	if err != nil {
		return err
	}
	for _, sb := range list {
		if _, pod, ok := appContainerOf(sb.ID, pods); ok {
			return mismatch(fmt.Sprintf("pod %s (%s) is %s", pod.Spec.Name, appContainerCount(len(pod.ContainerIDs)),
				diagnoseID(pod.SandboxID, sb.ID, pod)), pod.SandboxID, sb.ID)
		}
	}
	s.note("compared %d listed IDs with the %d app container IDs of the run's %d pods", len(list), apps, len(pods))
	for _, pod := range pods {
		for _, appID := range pod.ContainerIDs {
			sb, err := s.get(ctx, appID)
			if !errors.Is(err, runtime.ErrNotFound) {
				return mismatch(fmt.Sprintf("GetSandbox of app container %s of pod %s did not report ErrNotFound", appID, pod.Spec.Name),
					"an error wrapping runtime.ErrNotFound", describeGet(sb, err))
			}
		}
	}
	return nil
}

// checkNoDuplicateIDs requires each sandbox ID once per listing: ipamd keys
// each IP by sandbox ID, so two entries under one ID contradict each other
// about the pod that owns it.
func checkNoDuplicateIDs(ctx context.Context, s *session) error {
	if _, err := s.sharedPods(ctx); err != nil {
		return err
	}
	list, err := s.list(ctx)
	if err != nil {
		return err
	}
	return uniqueIDs(list)
}

// checkPodIdentity compares the identity of every pod of the batch, each
// found by its exact sandbox ID.
func checkPodIdentity(ctx context.Context, s *session) error {
	shared, list, err := s.sharedListed(ctx)
	if err != nil {
		return err
	}
	for _, pod := range shared.batch() {
		sb, err := findForPod(list, pod, "")
		if err != nil {
			return err
		}
		if got, want := sandboxIdentity(sb), specIdentity(pod.Spec); got != want {
			return mismatch(fmt.Sprintf("the listed sandbox of pod %s (attempt %d, %s) does not carry its pod's identity",
				podName(pod.Spec), pod.Spec.Attempt, appContainerCount(len(pod.Spec.Containers))), want, got)
		}
	}
	return nil
}

// checkHostNetwork looks at every shared pod of both namespaces: a
// kube-system pod is on the host network only where its spec says so.
func checkHostNetwork(ctx context.Context, s *session) error {
	shared, err := s.sharedPods(ctx)
	if err != nil {
		return err
	}
	if shared.host == nil {
		return skipf("host-network pods not supported by the %s fixture", s.fixture.Name())
	}
	list, err := s.list(ctx)
	if err != nil {
		return err
	}
	for _, pod := range shared.all() {
		sb, err := findForPod(list, pod, "")
		if err != nil {
			return err
		}
		if sb.HostNetwork != pod.Spec.HostNetwork {
			return mismatch(fmt.Sprintf("pod %s: wrong HostNetwork", podName(pod.Spec)),
				"HostNetwork="+strconv.FormatBool(pod.Spec.HostNetwork), "HostNetwork="+strconv.FormatBool(sb.HostNetwork))
		}
	}
	return nil
}

// checkGetSandbox gets the running shared pods of both namespaces, with
// several, one and no app containers, by their sandbox IDs.
func checkGetSandbox(ctx context.Context, s *session) error {
	shared, err := s.sharedPods(ctx)
	if err != nil {
		return err
	}
	for _, pod := range shared.all() {
		sb, err := s.get(ctx, pod.SandboxID)
		if err != nil {
			return mismatch(fmt.Sprintf("GetSandbox of running pod %s failed", podName(pod.Spec)), "the sandbox", err.Error())
		}
		switch {
		case sb.ID != pod.SandboxID:
			return mismatch(fmt.Sprintf("GetSandbox of pod %s returned another ID: %s", pod.Spec.Name,
				diagnoseID(pod.SandboxID, sb.ID, pod)), pod.SandboxID, sb.ID)
		case sandboxIdentity(sb) != specIdentity(pod.Spec):
			return mismatch("GetSandbox returned another identity", specIdentity(pod.Spec), sandboxIdentity(sb))
		case sb.State != runtime.StateReady:
			return mismatch("GetSandbox of a running sandbox", runtime.StateReady.String(), sb.State.String())
		}
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
