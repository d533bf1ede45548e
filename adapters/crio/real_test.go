package crio_test

import (
	"context"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/adapters/internal/adaptertest"
	"github.com/sandboxipam/sandboxipam/internal/testsupport"
	"github.com/sandboxipam/sandboxipam/runtime"
)

// Over a real CRI-O with the adapter's defaults (runtime name "cri-o"):
// the listing holds the IDs crictl shows, with CRI-O's pod IPs and
// states. The contract's rules against a real CRI-O are the conformance
// suite's (conformance/e2e TestRealCRIRuntimesConform).
func TestListsRealCRIOSandboxes(t *testing.T) {
	c := realCRIO.Get(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	scenario := adaptertest.BuildScenario(t, ctx, adaptertest.NewCRIFixtureAt(t, ctx, c.Endpoint, c.PauseImage, c.CgroupParent))
	adapter := newAdapter(t, c.Endpoint, "")
	listed := adaptertest.ListByID(t, ctx, adapter)
	if ips := listed[scenario.Web.SandboxID].IPs; len(ips) != 1 || !strings.HasPrefix(ips[0].String(), "198.19.0.") {
		t.Errorf("running pod-network sandbox IPs = %v, want one from 198.19.0.0/24", ips)
	}
	if ips := listed[scenario.Host.SandboxID].IPs; len(ips) != 0 {
		t.Errorf("host-network sandbox IPs = %v, want none", ips)
	}
	info, err := adapter.Info(ctx)
	if err != nil || info.RuntimeName != "cri-o" || info.AdapterName != "crio" || info.Endpoint != c.Endpoint {
		t.Errorf("Info = %+v, %v; want cri-o through crio at %s", info, err, c.Endpoint)
	}
	// ID truth: the IDs crictl reads from the same CRI-O.
	out, err := exec.CommandContext(ctx, testsupport.Tool(t, "crictl"), "--runtime-endpoint", c.Endpoint,
		"pods", "-q", "--no-trunc").Output()
	if err != nil {
		t.Fatalf("crictl pods: %v", err)
	}
	crictlIDs := strings.Fields(string(out))
	slices.Sort(crictlIDs)
	if got := adaptertest.SortedIDs(listed); !slices.Equal(got, crictlIDs) {
		t.Errorf("adapter listed %v\ncrictl pods   %v", got, crictlIDs)
	}
	// CRI-O keeps reporting a stopped sandbox's address after its CNI
	// DEL (containerd clears it): ipamd must treat it as stale (see
	// ipamd's adoption), the adapter reports what the runtime says.
	t.Logf("stopped sandbox %s reports IPs %v", scenario.Stopped.SandboxID, listed[scenario.Stopped.SandboxID].IPs)
	if st := listed[scenario.Stopped.SandboxID].State; st != runtime.StateNotReady {
		t.Errorf("stopped sandbox state %s, want NotReady", st)
	}
}
