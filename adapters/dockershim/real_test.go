package dockershim

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"

	"github.com/sandboxipam/sandboxipam/adapters/internal/adaptertest"
	"github.com/sandboxipam/sandboxipam/adapters/internal/critest"
	"github.com/sandboxipam/sandboxipam/conformance/fixture"
	"github.com/sandboxipam/sandboxipam/runtime"
)

// With no endpoint configured and no dockershim socket, the adapter finds
// a real cri-dockerd at its socket and lists its sandboxes, with the
// runtime name "docker". The contract's rules against a real cri-dockerd
// (which answers PodSandboxStatus for an app container's ID and resolves
// short IDs, both of which the adapter must report as not found) are the
// conformance suite's (conformance/e2e TestRealCRIRuntimesConform).
func TestFallsBackToCRIDockerdSocket(t *testing.T) {
	c := criDockerd.Get(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	scenario := adaptertest.BuildScenario(t, ctx, adaptertest.NewCRIFixtureAt(t, ctx, c.Endpoint, c.PauseImage, c.CgroupParent))
	absent := "unix://" + filepath.Join(socketDir(t), "dockershim.sock")
	adapter, err := newWithDefaults(DefaultConfig(), []string{absent, c.Endpoint}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer adapter.Close()
	listed := adaptertest.ListByID(t, ctx, adapter)
	if got, want := adaptertest.SortedIDs(listed), scenario.SandboxIDs(); !slices.Equal(got, want) {
		t.Errorf("listed %v\nwant   %v", got, want)
	}
	if ips := listed[scenario.Web.SandboxID].IPs; len(ips) != 1 {
		t.Errorf("running pod-network sandbox IPs = %v, want the one the CNI plugin gave", ips)
	}
	info, err := adapter.Info(ctx)
	if err != nil || info.Endpoint != c.Endpoint || info.RuntimeName != "docker" || info.AdapterName != "dockershim" {
		t.Errorf("Info = %+v, %v; want docker at %s", info, err, c.Endpoint)
	}
}

// When the dockershim socket exists it is preferred: both defaults here
// lead to the same real cri-dockerd, and Info names the first.
func TestPrefersDockershimSocketWhenPresent(t *testing.T) {
	c := criDockerd.Get(t)
	dir := socketDir(t)
	dockershimSocket, criDockerdSocket := filepath.Join(dir, "dockershim.sock"), filepath.Join(dir, "cri-dockerd.sock")
	for _, link := range []string{dockershimSocket, criDockerdSocket} {
		if err := os.Symlink(c.Address, link); err != nil {
			t.Fatal(err)
		}
	}
	adapter, err := newWithDefaults(DefaultConfig(), []string{"unix://" + dockershimSocket, "unix://" + criDockerdSocket}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer adapter.Close()
	info, err := adapter.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if info.Endpoint != "unix://"+dockershimSocket {
		t.Errorf("Info.Endpoint = %s, want the dockershim socket", info.Endpoint)
	}
}

// A sandbox whose pause container is removed behind cri-dockerd's back
// keeps its checkpoint: cri-dockerd lists it NOTREADY in an unfiltered
// ListPodSandbox only, and answers its PodSandboxStatus with "No such
// container". The adapter reports it as existing, NotReady, in both
// ListSandboxes and GetSandbox (its app containers may still hold its
// network namespace, and cri-dockerd still sends its CNI DEL).
func TestCheckpointOnlySandboxListAndGetAgree(t *testing.T) {
	c := criDockerd.Get(t)
	d := dockerd.Get(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	f := adaptertest.NewCRIFixtureAt(t, ctx, c.Endpoint, c.PauseImage, c.CgroupParent)
	lost := adaptertest.CreatePod(t, ctx, f, fixture.PodSpec{Name: "lost", Namespace: "checkpoint", UID: "uid-lost", Attempt: 2})
	cli, err := client.NewClientWithOpts(client.WithHost(d.Host), client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	if err := cli.ContainerRemove(ctx, lost.SandboxID, container.RemoveOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Endpoint = c.Endpoint
	adapter, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer adapter.Close()
	listed := adaptertest.ListByID(t, ctx, adapter)
	got, ok := listed[lost.SandboxID]
	if !ok {
		t.Fatalf("checkpoint-only sandbox %s not listed; listed %v", lost.SandboxID, adaptertest.SortedIDs(listed))
	}
	// cri-dockerd lists it from its checkpoint, which keeps the pod's
	// name and namespace but neither its UID, its attempt nor its
	// creation time.
	if got.State != runtime.StateNotReady || got.Name != "lost" || got.Namespace != "checkpoint" || len(got.IPs) != 0 {
		t.Errorf("listed as %+v, want lost/checkpoint, NotReady, no IPs", got)
	}
	byGet, err := adapter.GetSandbox(ctx, lost.SandboxID)
	if err != nil || byGet.ID != lost.SandboxID || byGet.State != runtime.StateNotReady {
		t.Errorf("GetSandbox(checkpoint-only) = %+v, %v; want it NotReady, as listed", byGet, err)
	}
	if _, err := adapter.GetSandbox(ctx, critest.NewID()); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("GetSandbox(unknown) error = %v, want ErrNotFound", err)
	}
}
