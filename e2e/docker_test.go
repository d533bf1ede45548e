package e2e

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"

	"github.com/sandboxipam/sandboxipam/conformance/fixture"
	"github.com/sandboxipam/sandboxipam/internal/scenario"
	"github.com/sandboxipam/sandboxipam/internal/testenv"
	"github.com/sandboxipam/sandboxipam/ipamd/introspect/schema"
)

// fullID is a full-length Docker container ID: what dockershim passed as
// CNI_CONTAINERID, never the 12-character short form.
var fullID = regexp.MustCompile(`^[0-9a-f]{64}$`)

// dockerPod is one dockershim-style pod with what the CNI plugin was
// called with for it.
type dockerPod struct {
	fixture.Pod
	ref   scenario.PodRef
	netns string // /proc/<pause pid>/ns/net
	pid   int    // the pause process
}

// TestSeedScenarioDocker is the bug report's own setting: Docker Engine with
// pods laid out as dockershim does (a k8s_POD_ pause container plus app
// containers joined to it), and the CNI plugin called, as dockershim did,
// with the pause container's ID. Pods keep their addresses across a SIGKILL
// of ipamd; a DEL after the restart finds its pod by the pause container's
// ID (the bug answered "unknown pod" here, having recorded an app
// container's ID); a DEL that fails while ipamd is down is made good by the
// reconciler once Docker no longer has the pause container.
func TestSeedScenarioDocker(t *testing.T) {
	bin := requireNode(t)
	began := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	// Clean-up must still run after the test's deadline ran out.
	cleanupCtx := context.WithoutCancel(ctx)
	dir := shortDir(t, "sbx-dk-")

	docker, err := testenv.StartDocker(ctx, testenv.DockerOptions{Dir: filepath.Join(dir, "docker")})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := docker.Stop(cleanupCtx); err != nil {
			t.Errorf("stop dockerd: %v", err)
		}
	}()
	// The plugin puts the host end of each veth, and a route, in the
	// namespace it runs in: that must be one of ours, not the machine's.
	hostNS := newHostNetNS(t, filepath.Join(dir, "hostns"))
	defer removeHostNetNS(t, hostNS)

	ipamd, err := scenario.NewIPAMD(scenario.IPAMDConfig{
		Dir: filepath.Join(dir, "ipamd"), BinDir: bin, Adapter: "docker", Endpoint: docker.Host,
		CIDR: "198.18.1.0/28", Grace: 2 * time.Second, Cooldown: time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ipamd.Close() }()
	// ipamd's own log says what went wrong inside it; the test's output
	// is where a failure gets read.
	t.Cleanup(func() {
		if t.Failed() {
			logTail(t, ipamd.LogPath, 80)
		}
	})
	if err := ipamd.Start(ctx); err != nil {
		t.Fatal(err)
	}
	plugin := scenario.CNIPlugin{Binary: filepath.Join(bin, "sandboxipam"), HostNetNS: hostNS, Socket: ipamd.Socket}

	pods, err := fixture.NewDocker(ctx, fixture.DockerConfig{Host: docker.Host, PauseImage: docker.PauseImage, CgroupParent: docker.CgroupParent})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := pods.Cleanup(cleanupCtx); err != nil {
			t.Errorf("remove pods: %v", err)
		}
		_ = pods.Close()
	}()
	engine, err := client.NewClientWithOpts(client.WithHost(docker.Host), client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatalf("docker client for %s: %v", docker.Host, err)
	}
	defer engine.Close()

	// Three pods, each a pause container and an app container; dockershim
	// then ran the CNI plugin with the pause container's ID and netns.
	var created []dockerPod
	want := map[string]string{}
	for i, name := range []string{"web-0", "web-1", "web-2"} {
		spec := fixture.PodSpec{Name: name, Namespace: "shop", UID: "uid-" + name, Containers: []string{"app"}}
		pod, err := pods.CreatePod(ctx, spec)
		if err != nil {
			t.Fatalf("create pod %d: %v", i+1, err)
		}
		if !fullID.MatchString(pod.SandboxID) || len(pod.ContainerIDs) != 1 || pod.ContainerIDs[0] == pod.SandboxID {
			t.Fatalf("pod %d: sandbox %q, app containers %q: want a full ID and one distinct app container", i+1, pod.SandboxID, pod.ContainerIDs)
		}
		p := dockerPod{Pod: pod, ref: scenario.PodRef{Name: spec.Name, Namespace: spec.Namespace, UID: spec.UID}}
		p.pid = pausePID(t, ctx, engine, pod.SandboxID)
		p.netns = fmt.Sprintf("/proc/%d/ns/net", p.pid)
		res, err := plugin.Add(ctx, pod.SandboxID, p.netns, p.ref)
		if err != nil {
			t.Fatalf("CNI ADD of pod %d: %v", i+1, err)
		}
		// The pool is 198.18.1.0/28: network .0 and broadcast .15 are
		// never handed out, and a fresh pool hands out lowest first.
		ip := netip.AddrFrom4([4]byte{198, 18, 1, byte(i + 1)})
		if len(res.IPs) != 1 || res.IPs[0].Address.String() != ip.String()+"/32" {
			t.Fatalf("CNI ADD of pod %d returned IPs %v, want only %s/32 (the plugin puts a host route in the pod)", i+1, res.IPs, ip)
		}
		want[pod.SandboxID] = ip.String()
		created = append(created, p)
	}
	assertDockerPods(t, ctx, ipamd, created, want)
	for i, p := range created {
		inside := addressOnEth0(t, ctx, p.pid)
		if inside != want[p.SandboxID]+"/32" {
			t.Fatalf("pod %d: eth0 has %s inside its netns, want %s/32", i+1, inside, want[p.SandboxID])
		}
	}
	assertHostVeths(t, ctx, hostNS, 3)
	t.Logf("3 pods hold %v after %s", want, time.Since(began).Round(time.Millisecond))

	// SIGKILL ipamd and start it again: nothing is lost, and the docker
	// adapter's listing (pause container IDs) protects every assignment.
	restart := func() {
		t.Helper()
		if err := ipamd.Kill(); err != nil {
			t.Fatal(err)
		}
		if err := ipamd.Start(ctx); err != nil {
			t.Fatal(err)
		}
	}
	restart()
	assertDockerPods(t, ctx, ipamd, created, want)

	// DEL of pod 1 after the restart carries the pause container's ID and
	// finds its assignment (the bug answered "unknown pod" here, leaking
	// the address); only then are its containers removed, as dockershim
	// tore the network down before removing the sandbox.
	if err := plugin.Del(ctx, created[0].SandboxID, created[0].netns, created[0].ref); err != nil {
		t.Fatalf("CNI DEL of pod 1: %v", err)
	}
	delete(want, created[0].SandboxID)
	assertDockerPods(t, ctx, ipamd, created[1:], want)
	assertHostVeths(t, ctx, hostNS, 2)
	if err := pods.RemovePod(ctx, created[0].Pod); err != nil {
		t.Fatalf("remove pod 1: %v", err)
	}

	// Pod 2's DEL while ipamd is down must fail, so that a runtime would
	// retry; here the retries never come, and the pod is removed anyway.
	if err := ipamd.Kill(); err != nil {
		t.Fatal(err)
	}
	err = plugin.Del(ctx, created[1].SandboxID, created[1].netns, created[1].ref)
	if err == nil {
		t.Fatal("CNI DEL of pod 2 with ipamd down succeeded; it must fail so the runtime retries")
	}
	// 11 is CNI's "try again later".
	if !regexp.MustCompile(`"code":\s*11\b`).MatchString(err.Error()) {
		t.Fatalf("CNI DEL of pod 2 with ipamd down: %v; want CNI error code 11 (try again later)", err)
	}
	if err := pods.RemovePod(ctx, created[1].Pod); err != nil {
		t.Fatalf("remove pod 2: %v", err)
	}
	// The plugin removes the veth before it asks ipamd, and the pod's
	// netns is gone with its pause container: no veth of pod 2 is left.
	assertHostVeths(t, ctx, hostNS, 1)
	if err := ipamd.Start(ctx); err != nil {
		t.Fatal(err)
	}
	delete(want, created[1].SandboxID)
	// The reconciler lists sandboxes through the docker adapter, finds no
	// pause container for pod 2 and, past the grace period, releases it.
	// Each pass replaces the last one in /v1/adapter, so watch for the
	// pass that released it while waiting.
	sawRelease := false
	waitFor(t, 20*time.Second, "the reconciler to release pod 2's address", func() (bool, string) {
		if adapter, err := ipamd.Client().Adapter(ctx); err == nil && adapter.Last != nil {
			sawRelease = sawRelease || releases(*adapter.Last, created[1].SandboxID, "198.18.1.2")
		}
		got := ipamdView(t, ctx, ipamd)
		return sameView(got, want), describe(got)
	})
	assertDockerPods(t, ctx, ipamd, created[2:], want)
	adapter, err := ipamd.Client().Adapter(ctx)
	if err != nil {
		t.Fatalf("ipamd /v1/adapter: %v", err)
	}
	if adapter.Runtime.RuntimeName != "docker" || adapter.Runtime.Endpoint != docker.Host || !adapter.Health.Healthy {
		t.Fatalf("adapter: runtime %q at %q, health %+v; want a healthy docker at %s", adapter.Runtime.RuntimeName, adapter.Runtime.Endpoint, adapter.Health, docker.Host)
	}
	sawRelease = sawRelease || (adapter.Last != nil && releases(*adapter.Last, created[1].SandboxID, "198.18.1.2"))
	if sawRelease {
		t.Logf("a reconcile pass in /v1/adapter released pod 2's sandbox %s", created[1].SandboxID)
	} else if logNamesRelease(t, ipamd.LogPath, created[1].SandboxID) {
		// The pass that released it was replaced between two polls;
		// ipamd's log keeps every pass.
		sawRelease = true
		t.Logf("ipamd's log names pod 2's sandbox %s as released", created[1].SandboxID)
	}
	if !sawRelease {
		t.Fatalf("no reconcile pass (last: %+v) and no log line names pod 2's sandbox %s as released", adapter.Last, created[1].SandboxID)
	}
	pool, err := ipamd.Client().Pool(ctx)
	if err != nil {
		t.Fatalf("ipamd /v1/pool: %v", err)
	}
	if pool.Assigned != 1 || pool.Total != 14 {
		t.Fatalf("pool: %d of %d assigned, want 1 of 14", pool.Assigned, pool.Total)
	}

	// ipamctl, Docker and ipamd agree: the one pause container left is
	// the one sandbox that holds an address.
	sandboxes, err := engine.ContainerList(ctx, container.ListOptions{
		All:     true,
		Filters: filters.NewArgs(filters.Arg("label", fixture.LabelDockerType+"="+fixture.DockerTypeSandbox)),
	})
	if err != nil {
		t.Fatalf("list pause containers: %v", err)
	}
	if len(sandboxes) != 1 || sandboxes[0].ID != created[2].SandboxID {
		ids := make([]string, 0, len(sandboxes))
		for _, c := range sandboxes {
			ids = append(ids, c.ID)
		}
		t.Fatalf("docker lists pause containers %v, want only pod 3's %s", ids, created[2].SandboxID)
	}
	out, err := ipamd.RunCtl(ctx, "pods")
	if err != nil {
		t.Fatal(err)
	}
	assertCtlPods(t, out, created, sandboxes[0].ID, want[sandboxes[0].ID]+"/28")
	t.Logf("scenario done after %s", time.Since(began).Round(time.Millisecond))
}

// newHostNetNS makes a network namespace that stands in for the node's,
// bound to path so it outlives the process that made it, with lo up.
func newHostNetNS(t *testing.T, path string) string {
	t.Helper()
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatalf("host netns file: %v", err)
	}
	if out, err := exec.Command("unshare", "--net="+path, "true").CombinedOutput(); err != nil {
		t.Fatalf("create host netns at %s: %v: %s", path, err, out)
	}
	if out, err := exec.Command("nsenter", "--net="+path, "ip", "link", "set", "lo", "up").CombinedOutput(); err != nil {
		removeHostNetNS(t, path)
		t.Fatalf("lo up in host netns %s: %v: %s", path, err, out)
	}
	return path
}

// removeHostNetNS unmounts the namespace's file, which frees the
// namespace (and any veth left in it) once nothing else holds it.
func removeHostNetNS(t *testing.T, path string) {
	t.Helper()
	if err := syscall.Unmount(path, syscall.MNT_DETACH); err != nil {
		t.Errorf("unmount host netns %s: %v", path, err)
	}
	if err := os.Remove(path); err != nil {
		t.Errorf("remove host netns file: %v", err)
	}
}

// assertHostVeths checks how many veths the host netns holds: one per
// pod with a network, the host ends the plugin made there.
func assertHostVeths(t *testing.T, ctx context.Context, hostNS string, want int) {
	t.Helper()
	out, err := exec.CommandContext(ctx, "nsenter", "--net="+hostNS, "ip", "-o", "link", "show", "type", "veth").CombinedOutput()
	if err != nil {
		t.Fatalf("list veths in the host netns: %v: %s", err, out)
	}
	if got := len(slices.Collect(strings.Lines(string(out)))); got != want {
		t.Fatalf("host netns holds %d veth(s), want %d:\n%s", got, want, out)
	}
}

// pausePID is the pause process's PID from the Engine API: dockershim
// found the sandbox's netns the same way.
func pausePID(t *testing.T, ctx context.Context, engine *client.Client, id string) int {
	t.Helper()
	info, err := engine.ContainerInspect(ctx, id)
	if err != nil {
		t.Fatalf("inspect pause container %s: %v", id, err)
	}
	if info.State == nil || !info.State.Running || info.State.Pid == 0 {
		t.Fatalf("pause container %s is not running: %+v", id, info.State)
	}
	return info.State.Pid
}

// addressOnEth0 reads eth0's IPv4 address inside the netns of pid.
func addressOnEth0(t *testing.T, ctx context.Context, pid int) string {
	t.Helper()
	out, err := exec.CommandContext(ctx, "nsenter", fmt.Sprintf("--net=/proc/%d/ns/net", pid),
		"ip", "-4", "-o", "addr", "show", "dev", "eth0").CombinedOutput()
	if err != nil {
		t.Fatalf("read eth0 in the netns of pid %d: %v: %s", pid, err, out)
	}
	// "2: eth0    inet 198.18.1.1/32 scope global eth0 ..."
	fields := strings.Fields(string(out))
	for i, f := range fields {
		if f == "inet" && i+1 < len(fields) {
			return fields[i+1]
		}
	}
	t.Fatalf("no IPv4 address on eth0 in the netns of pid %d: %s", pid, out)
	return ""
}

// assertDockerPods checks that ipamd holds exactly want, each under the
// pause container's full ID with the pod's identity from CNI_ARGS, and no
// app container's ID anywhere.
func assertDockerPods(t *testing.T, ctx context.Context, d *scenario.IPAMD, live []dockerPod, want map[string]string) {
	t.Helper()
	got := ipamdView(t, ctx, d)
	if !sameView(got, want) {
		t.Fatalf("ipamd holds %v, want %v", got, want)
	}
	list, err := d.Client().Pods(ctx)
	if err != nil {
		t.Fatalf("ipamd /v1/pods: %v", err)
	}
	byID := map[string]schema.Pod{}
	for _, p := range list.Pods {
		if !fullID.MatchString(p.SandboxID) {
			t.Fatalf("ipamd holds %s under %q, not a full container ID", p.IP, p.SandboxID)
		}
		byID[p.SandboxID] = p
	}
	for _, p := range live {
		a, ok := byID[p.SandboxID]
		if !ok {
			t.Fatalf("ipamd holds nothing for pod %s's pause container %s", p.ref.Name, p.SandboxID)
		}
		if a.Name != p.ref.Name || a.Namespace != p.ref.Namespace || a.UID != p.ref.UID {
			t.Fatalf("sandbox %s is recorded as pod %s/%s (uid %s), want %s/%s (uid %s)",
				p.SandboxID, a.Namespace, a.Name, a.UID, p.ref.Namespace, p.ref.Name, p.ref.UID)
		}
		for _, app := range p.ContainerIDs {
			if _, ok := byID[app]; ok {
				t.Fatalf("ipamd holds an address under app container %s of pod %s", app, p.ref.Name)
			}
		}
	}
}

// releases reports whether a reconcile pass released id's address ip.
func releases(pass schema.Reconcile, id, ip string) bool {
	return !pass.DryRun && slices.ContainsFunc(pass.Released, func(p schema.Pod) bool { return p.SandboxID == id && p.IP == ip })
}

// logNamesRelease reports whether ipamd's log has a reconciler line
// releasing id's address.
func logNamesRelease(t *testing.T, path, id string) bool {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read ipamd log: %v", err)
	}
	for line := range strings.Lines(string(data)) {
		if strings.Contains(line, id) && strings.Contains(line, "released") && !strings.Contains(line, "dry run") {
			return true
		}
	}
	return false
}

// assertCtlPods checks ipamctl's table: one assignment, the line of
// sandboxID showing prefix, and no pod removed earlier anywhere.
func assertCtlPods(t *testing.T, out string, pods []dockerPod, sandboxID, prefix string) {
	t.Helper()
	var line string
	for l := range strings.Lines(out) {
		if strings.HasPrefix(l, sandboxID+" ") {
			line = l
		}
	}
	if line == "" || !slices.Contains(strings.Fields(line), prefix) || !strings.Contains(out, "\n1 assignment(s)") {
		t.Fatalf("ipamctl pods shows:\n%s\nwant one line: %s with %s", out, sandboxID, prefix)
	}
	for _, p := range pods {
		if p.SandboxID == sandboxID {
			continue
		}
		if strings.Contains(out, p.SandboxID) {
			t.Fatalf("ipamctl pods still shows removed pod %s (%s):\n%s", p.ref.Name, p.SandboxID, out)
		}
	}
}

// logTail prints the last n lines of a log file into the test's output.
func logTail(t *testing.T, path string, n int) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Logf("read %s: %v", filepath.Base(path), err)
		return
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	t.Logf("last %d lines of ipamd's log:\n%s", len(lines), strings.Join(lines, "\n"))
}
