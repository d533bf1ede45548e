package testenv_test

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/conformance/fixture"
	"github.com/sandboxipam/sandboxipam/internal/testenv"
)

// These tests start instances of their own rather than the shared ones:
// they check what Stop leaves behind, with pods still running.

func TestContainerdStopLeavesNothing(t *testing.T) {
	containerd.Get(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := shortDir(t, "sbxipam-stop-ctd-")
	c, err := testenv.StartContainerd(ctx, testenv.ContainerdOptions{Dir: dir, Logger: slog.New(slog.NewTextHandler(t.Output(), nil))})
	if err != nil {
		t.Fatal(err)
	}
	f, err := fixture.NewCRI(ctx, fixture.CRIConfig{Endpoint: c.Endpoint, CgroupParent: c.CgroupParent})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, spec := range []fixture.PodSpec{
		{Name: "web", Namespace: "ns", UID: "uid-web", Containers: []string{"app"}},
		{Name: "host", Namespace: "ns", UID: "uid-host", HostNetwork: true},
	} {
		if _, err := f.CreatePod(ctx, spec); err != nil {
			t.Fatal(err)
		}
	}
	assertCgroupHasProcesses(t, c.CgroupParent)
	assertBridgeOnlyInNetNS(t, c.NetNSPath)
	if err := c.Stop(ctx); err != nil {
		t.Fatalf("stop: %v", err)
	}
	assertNothingLeft(t, dir, c.CgroupParent, c.PID)
	if err := c.Stop(ctx); err != nil {
		t.Errorf("second stop: %v", err)
	}
}

func TestDockerStopLeavesNothing(t *testing.T) {
	docker.Get(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := shortDir(t, "sbxipam-stop-dkr-")
	d, err := testenv.StartDocker(ctx, testenv.DockerOptions{Dir: dir, Logger: slog.New(slog.NewTextHandler(t.Output(), nil))})
	if err != nil {
		t.Fatal(err)
	}
	f, err := fixture.NewDocker(ctx, fixture.DockerConfig{Host: d.Host, CgroupParent: d.CgroupParent})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.CreatePod(ctx, fixture.PodSpec{Name: "web", Namespace: "ns", UID: "uid-web", Containers: []string{"app"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.CreatePlainContainer(ctx, "plain"); err != nil {
		t.Fatal(err)
	}
	assertCgroupHasProcesses(t, d.CgroupParent)
	if err := d.Stop(ctx); err != nil {
		t.Fatalf("stop: %v", err)
	}
	assertNothingLeft(t, dir, d.CgroupParent, d.PID)
}

func TestStartRejectsForeignDir(t *testing.T) {
	docker.Get(t)
	dir := shortDir(t, "sbxipam-foreign-")
	if err := os.WriteFile(filepath.Join(dir, "precious"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := testenv.StartDocker(context.Background(), testenv.DockerOptions{Dir: dir})
	if !errors.Is(err, testenv.ErrBadDir) {
		t.Fatalf("err = %v, want ErrBadDir", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "precious")); err != nil {
		t.Errorf("foreign file removed: %v", err)
	}
	if _, err := testenv.StartDocker(context.Background(), testenv.DockerOptions{Dir: "relative"}); !errors.Is(err, testenv.ErrBadDir) {
		t.Errorf("relative dir: err = %v, want ErrBadDir", err)
	}
}

// assertBridgeOnlyInNetNS checks the default CNI bridge was created in the
// daemon's network namespace and not in the host's, and that with a pod's
// veth on it it kept the MAC it was made with (a bridge that took its
// port's MAC fails the bridge plugin's CHECK of the pod added before).
func assertBridgeOnlyInNetNS(t *testing.T, netns string) {
	t.Helper()
	const bridge = "sbxipam0"
	out, err := exec.Command("nsenter", "--net="+netns, "ip", "-o", "-4", "addr", "show", "dev", bridge).CombinedOutput()
	if err != nil {
		t.Errorf("bridge %s not in the daemon's netns: %v: %s", bridge, err, out)
	} else if !strings.Contains(string(out), "inet 198.19.0.1/24") {
		t.Errorf("bridge %s address: %s, want 198.19.0.1/24", bridge, out)
	}
	out, err = exec.Command("nsenter", "--net="+netns, "ip", "-o", "link", "show", "master", bridge).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "veth") {
		t.Errorf("no pod's veth on bridge %s: %v: %s", bridge, err, out)
	}
	out, err = exec.Command("nsenter", "--net="+netns, "ip", "-o", "link", "show", "dev", bridge).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "link/ether 02:53:42:58:00:01 ") {
		t.Errorf("bridge %s: %v: %s, want its MAC kept at 02:53:42:58:00:01", bridge, err, out)
	}
	if _, err := net.InterfaceByName(bridge); err == nil {
		t.Errorf("bridge %s exists in the host's network namespace", bridge)
	}
}

// shortDir is a temp dir short enough for unix sockets (t.TempDir's
// names hold the test name and can be too long).
func shortDir(t *testing.T, prefix string) string {
	t.Helper()
	dir, err := os.MkdirTemp("/tmp", prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func assertCgroupHasProcesses(t *testing.T, parent string) {
	t.Helper()
	if n := countCgroupProcs(filepath.Join("/sys/fs/cgroup/pids", parent)); n == 0 {
		t.Fatalf("no process in cgroup %s while pods run", parent)
	}
}

func assertNothingLeft(t *testing.T, dir, cgroupParent string, daemonPID int) {
	t.Helper()
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s still exists (%v)", dir, err)
	}
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(mounts), "\n") {
		if strings.Contains(line, dir) {
			t.Errorf("mount left: %s", line)
		}
	}
	// cri-dockerd has no cgroup parent of its own: its pods are Docker's.
	if cgroupParent != "" {
		matches, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup/*", cgroupParent))
		if len(matches) != 0 {
			t.Errorf("cgroups left: %v", matches)
		}
	}
	if _, err := os.Stat(filepath.Join("/proc", itoa(daemonPID))); err == nil {
		if stat, _ := os.ReadFile(filepath.Join("/proc", itoa(daemonPID), "cmdline")); strings.Contains(string(stat), dir) {
			t.Errorf("daemon %d still running", daemonPID)
		}
	}
	assertNoProcessReferences(t, dir)
}

func assertNoProcessReferences(t *testing.T, dir string) {
	t.Helper()
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(cmdline), dir+"/") {
			t.Errorf("process %s still uses %s: %q", e.Name(), dir, cmdline)
		}
	}
}

func countCgroupProcs(dir string) int {
	n := 0
	_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && d.Name() == "cgroup.procs" {
			data, _ := os.ReadFile(path)
			n += len(strings.Fields(string(data)))
		}
		return nil
	})
	return n
}

func itoa(i int) string { return strconv.Itoa(i) }
