package testenv

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/conformance/fixture"
)

// TestStaleInstanceIsTornDownOnNextStart plays a test binary that was
// killed with a containerd and a pod running: its record names an owner
// that is gone. The next Start of any instance must remove all of it.
func TestStaleInstanceIsTornDownOnNextStart(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping real-runtime test in -short mode")
	}
	Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	logger := slog.New(slog.NewTextHandler(t.Output(), nil))
	staleDir := tempDir(t, "sbxipam-stale-")
	stale, err := StartContainerd(ctx, ContainerdOptions{Dir: staleDir, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	defer stale.Stop(ctx)
	sandboxID := runPod(ctx, t, stale)
	forgeDeadOwner(t, staleDir)

	next, err := StartDocker(ctx, DockerOptions{Dir: tempDir(t, "sbxipam-next-"), Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	defer next.Stop(ctx)
	if _, err := os.Stat(staleDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stale dir %s survived (%v)", staleDir, err)
	}
	if procs := cgroupProcs(filepath.Join(cgroupRoot, "pids", stale.CgroupParent)); len(procs) != 0 {
		t.Errorf("stale pod processes survived: %v", procs)
	}
	if points, _ := mountPointsUnder(staleDir); len(points) != 0 {
		t.Errorf("stale mounts survived: %v", points)
	}
	if _, err := os.Stat(recordPath(staleDir)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stale record survived (%v)", err)
	}
	// No CNI DEL ran for the killed pod: teardown removes libcni's cache.
	if cached, _ := filepath.Glob(filepath.Join(cniCacheDir, "*-"+sandboxID+"-*")); len(cached) != 0 {
		t.Errorf("CNI cache of the stale pod survived: %v", cached)
	}
}

// runPod creates a pod with one app container and returns its sandbox ID.
func runPod(ctx context.Context, t *testing.T, c *Containerd) string {
	t.Helper()
	f, err := fixture.NewCRI(ctx, fixture.CRIConfig{Endpoint: c.Endpoint, CgroupParent: c.CgroupParent})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pod, err := f.CreatePod(ctx, fixture.PodSpec{Name: "web", Namespace: "ns", UID: "uid", Containers: []string{"app"}})
	if err != nil {
		t.Fatal(err)
	}
	if cached, _ := filepath.Glob(filepath.Join(cniCacheDir, "*-"+pod.SandboxID+"-*")); len(cached) == 0 {
		t.Fatalf("no CNI cache for pod %s: the check below would prove nothing", pod.SandboxID)
	}
	return pod.SandboxID
}

// forgeDeadOwner rewrites dir's record as if a process that has exited
// had started the instance.
func forgeDeadOwner(t *testing.T, dir string) {
	t.Helper()
	rec, err := readRecord(recordPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	rec.OwnerPID, rec.OwnerStart = dead.Process.Pid, "0"
	if err := writeRecord(rec); err != nil {
		t.Fatal(err)
	}
}

// tempDir is a temp dir short enough for unix sockets.
func tempDir(t *testing.T, prefix string) string {
	t.Helper()
	dir, err := os.MkdirTemp("/tmp", prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}
