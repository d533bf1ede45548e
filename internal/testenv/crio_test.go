package testenv_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/conformance/fixture"
	"github.com/sandboxipam/sandboxipam/internal/testenv"
	"github.com/sandboxipam/sandboxipam/internal/testsupport"
)

// cniResults is where libcni caches each attachment's result; CRI-O
// cannot be told to use another directory.
const cniResults = "/var/lib/cni/results"

// A private CRI-O runs pods on its bridge in its own network namespace,
// under its PID exactly, and Stop leaves nothing behind: not its Dir,
// mounts, cgroups or processes, not libcni's cached results of its
// network, and not /etc/crio if it was absent before.
func TestCRIOStopLeavesNothing(t *testing.T) {
	testenv.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	_, etcCrioBefore := os.Stat("/etc/crio")
	dir := shortDir(t, "sbxipam-stop-crio-")
	c, err := testenv.StartCRIO(ctx, testenv.CRIOOptions{Dir: dir, Logger: slog.New(slog.NewTextHandler(t.Output(), nil))})
	if errors.Is(err, testenv.ErrUnavailable) {
		testsupport.SkipOrFail(t, "%v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	assertExactPID(t, c.PID, "crio", dir)
	f, err := fixture.NewCRI(ctx, fixture.CRIConfig{Endpoint: c.Endpoint, PauseImage: c.PauseImage, CgroupParent: c.CgroupParent})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pod, err := f.CreatePod(ctx, fixture.PodSpec{Name: "web", Namespace: "ns", UID: "uid-web", Containers: []string{"app"}})
	if err != nil {
		t.Fatal(err)
	}
	if cached, _ := filepath.Glob(filepath.Join(cniResults, "*-"+pod.SandboxID+"-*")); len(cached) != 1 {
		t.Fatalf("CNI results of pod %s: %v, want one: the check below would prove nothing", pod.SandboxID, cached)
	}
	assertCgroupHasProcesses(t, c.CgroupParent)
	assertBridgeOnlyInNetNS(t, c.NetNSPath)
	// Killed pods leave their results: kill the daemon first, as a killed
	// test binary would, then Stop.
	if err := c.StopDaemon(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Stop(ctx); err != nil {
		t.Fatalf("stop: %v", err)
	}
	assertNothingLeft(t, dir, c.CgroupParent, c.PID)
	if cached, _ := filepath.Glob(filepath.Join(cniResults, "*-"+pod.SandboxID+"-*")); len(cached) != 0 {
		t.Errorf("CNI results left: %v", cached)
	}
	if _, err := os.Stat("/etc/crio"); errors.Is(etcCrioBefore, os.ErrNotExist) && err == nil {
		t.Errorf("/etc/crio was created and left behind")
	}
}

// A private cri-dockerd serves CRI for a private dockerd, under its PID
// exactly, without CAP_SYS_RESOURCE (so it cannot set oom_score_adj on the
// host's dockerd and containerd processes), and Stop leaves nothing.
func TestCRIDockerdStopLeavesNothing(t *testing.T) {
	d := docker.Get(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := shortDir(t, "sbxipam-stop-crid-")
	c, err := testenv.StartCRIDockerd(ctx, testenv.CRIDockerdOptions{Dir: dir, Docker: d, Logger: slog.New(slog.NewTextHandler(t.Output(), nil))})
	if errors.Is(err, testenv.ErrUnavailable) {
		testsupport.SkipOrFail(t, "%v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	assertExactPID(t, c.PID, "cri-dockerd", dir)
	if bnd := capBounding(t, c.PID); bnd&(1<<24) != 0 {
		t.Errorf("cri-dockerd's bounding set %x holds CAP_SYS_RESOURCE", bnd)
	}
	f, err := fixture.NewCRI(ctx, fixture.CRIConfig{Endpoint: c.Endpoint, PauseImage: c.PauseImage, CgroupParent: c.CgroupParent})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.CreatePod(ctx, fixture.PodSpec{Name: "web", Namespace: "ns", UID: "uid-web", Containers: []string{"app"}}); err != nil {
		t.Fatal(err)
	}
	assertBridgeOnlyInNetNS(t, c.NetNSPath)
	if err := c.Stop(ctx); err != nil {
		t.Fatalf("stop: %v", err)
	}
	assertNothingLeft(t, dir, "", c.PID)
}

// assertExactPID checks pid is the daemon itself (its command line runs
// binary with dir's config), not a wrapper that started it.
func assertExactPID(t *testing.T, pid int, binary, dir string) {
	t.Helper()
	cmdline, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	if err != nil {
		t.Fatalf("daemon PID %d: %v", pid, err)
	}
	args := strings.Split(string(cmdline), "\x00")
	if filepath.Base(args[0]) != binary || !strings.Contains(string(cmdline), dir) {
		t.Errorf("PID %d runs %q, want %s itself with %s", pid, args, binary, dir)
	}
}

// capBounding reads a process's capability bounding set.
func capBounding(t *testing.T, pid int) uint64 {
	t.Helper()
	status, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "CapBnd:"); ok {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no CapBnd in /proc/PID/status")
	return 0
}
