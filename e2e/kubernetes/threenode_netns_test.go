package kubernetes

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/sandboxipam/sandboxipam/internal/testsupport"
)

// ipamOnlyConfList is the operator's conflist on an IPAM-only node: the
// reference bridge plugin wires pods, sandboxipam gives their addresses
// through ipamd's socket where the DaemonSet puts it.
const (
	ipamOnlyConfList     = "10-bridge-sandboxipam.conflist"
	ipamOnlyConfListJSON = `{"cniVersion": "1.0.0", "name": "ipam-only", "plugins": [{"type": "bridge", "bridge": "sbx-ipam0",
  "ipam": {"type": "sandboxipam", "ipamdSocket": "/run/sandboxipam/ipamd.sock"}}]}`
)

// TestThreeNodeIPAMOnlyNetNSKeepsAddress is the cluster's side of
// ipamd/daemon's TestIPAMOnlyPodWhoseNetNSStaysKeepsItsAddress (issue 39
// item 4): on one node of the three, a pod's network namespace is made
// where the node's containerd makes them (/var/run/netns) and the node's
// installed plugin ADDs it as IPAM only, under a sandbox ID containerd
// never lists, as a pod whose runtime lost it while its namespace stays.
// ipamd in its DaemonSet pod, with the shipped netns mount, sees the
// namespace: every reconcile pass keeps the address and says why. Once the
// namespace is gone the address is released. Without the mount ipamd
// never sees the namespace and releases the address after the grace.
func TestThreeNodeIPAMOnlyNetNSKeepsAddress(t *testing.T) {
	c := startCluster(t)
	t.Cleanup(func() { c.removeWorkloads(t) })
	// An IPAM-only node as an operator runs one: another plugin (the
	// reference bridge) wires the pods and calls sandboxipam as its IPAM,
	// from the operator's conflist; ipamd writes none (IPAM-only ADDs are
	// refused on a node set to, or inferring, "plugin").
	for _, n := range c.nodes {
		if err := os.WriteFile(filepath.Join(n.private("/etc/cni/net.d"), ipamOnlyConfList), []byte(ipamOnlyConfListJSON), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c.installDaemonSetWith(t, ipamOnlyConfList, func(ds *appsv1.DaemonSet) {
		ctr := &ds.Spec.Template.Spec.Containers[0]
		ctr.Env = append(ctr.Env, corev1.EnvVar{Name: "IPAMD_PODLINKS_PODWIRING", Value: "ipamOnly"},
			corev1.EnvVar{Name: "IPAMD_CNI_CONFLISTPATH", Value: ""})
	})
	n, ctx := c.nodes[1], context.Background()
	// A pod the runtime runs, wired by the bridge with sandboxipam as its
	// IPAM: ipamd releases nothing while its adapter has never listed a
	// sandbox that CNI added (the blind-adapter guard), so the node needs
	// one before the IPAM-only ADD below can be judged on its namespace.
	if err := c.api.create(ctx, "/apis/apps/v1/namespaces/default/deployments", spreadDeployment(1, n.name)); err != nil {
		t.Fatal(err)
	}
	testsupport.WaitFor(t, 3*time.Minute, "a pod on "+n.name+" runs on the operator's conflist", func(ctx context.Context) error {
		pods, err := c.webPods(ctx)
		if err == nil && len(pods) != 1 {
			err = fmt.Errorf("%d pods running, want 1", len(pods))
		}
		return err
	})
	const nsName = "sbx-ipam-only"
	nsPath := "/var/run/netns/" + nsName
	id := fmt.Sprintf("%064x", 0x5b1a39)
	if _, err := n.inNode(ctx, nil, nil, "ip", "netns", "add", nsName); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = n.inNode(context.Background(), nil, nil, "ip", "netns", "del", nsName) })
	ip := n.ipamOnlyAdd(t, id, nsPath)
	c.logf(t, "%s: IPAM-only ADD of %s in %s got %s", n.name, id[:12], nsPath, ip)

	kept := "its network namespace " + nsPath + " is on the node"
	testsupport.WaitFor(t, 3*time.Minute, "a reconcile pass keeps the address for its namespace", func(ctx context.Context) error {
		out, err := n.ipamctl(ctx, "adapter")
		if err != nil {
			return err
		}
		if !strings.Contains(out, kept) {
			return fmt.Errorf("ipamctl adapter does not say %q:\n%s", kept, out)
		}
		return nil
	})
	if held, err := n.holds(ctx, id); err != nil || held != ip {
		t.Fatalf("%s: ipamd holds %q for %s (%v), want %s", n.name, held, id[:12], err, ip)
	}
	c.logf(t, "%s: containerd does not list %s, its namespace is on the node: %s kept", n.name, id[:12], ip)

	if _, err := n.inNode(ctx, nil, nil, "ip", "netns", "del", nsName); err != nil {
		t.Fatal(err)
	}
	testsupport.WaitFor(t, 3*time.Minute, "the address is released once the namespace is gone", func(ctx context.Context) error {
		held, err := n.holds(ctx, id)
		if err != nil {
			return err
		}
		if held != "" {
			return fmt.Errorf("ipamd still holds %s for %s", held, id[:12])
		}
		return nil
	})
	c.logf(t, "%s: namespace gone, %s released", n.name, ip)
}

// inNode runs a command in node n's network and mount namespaces.
func (n *clusterNode) inNode(ctx context.Context, stdin []byte, env []string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "nsenter", append([]string{"--net=" + n.netns, "--mount=" + n.mountNS(), "--"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = bytes.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("%s on %s: %w: %s%s", strings.Join(args, " "), n.name, err, stdout.String(), stderr.String())
	}
	return stdout.String(), nil
}

// ipamOnlyAdd runs the node's installed plugin as another main plugin's
// IPAM (CNI ADD), as libcni runs it from the operator's conflist,
// and returns the address it got.
func (n *clusterNode) ipamOnlyAdd(t *testing.T, id, nsPath string) string {
	t.Helper()
	var list struct {
		CNIVersion string           `json:"cniVersion"`
		Name       string           `json:"name"`
		Plugins    []map[string]any `json:"plugins"`
	}
	if err := json.Unmarshal([]byte(ipamOnlyConfListJSON), &list); err != nil || len(list.Plugins) == 0 {
		t.Fatalf("conflist %s: %v", ipamOnlyConfListJSON, err)
	}
	// What libcni gives an IPAM plugin: the main plugin's whole config
	// with the list's name and version.
	main := list.Plugins[0]
	main["cniVersion"], main["name"] = list.CNIVersion, list.Name
	conf, err := json.Marshal(main)
	if err != nil {
		t.Fatal(err)
	}
	env := []string{"CNI_COMMAND=ADD", "CNI_CONTAINERID=" + id, "CNI_IFNAME=eth0", "CNI_NETNS=" + nsPath, "CNI_PATH=/opt/cni/bin",
		"CNI_ARGS=IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=ipam-only;K8S_POD_INFRA_CONTAINER_ID=" + id}
	out, err := n.inNode(context.Background(), conf, env, "/opt/cni/bin/sandboxipam")
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		IPs []struct {
			Address string `json:"address"`
		} `json:"ips"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || len(res.IPs) == 0 {
		t.Fatalf("IPAM-only ADD answered %s (%v)", out, err)
	}
	addrs := make([]string, len(res.IPs))
	for i, a := range res.IPs {
		addrs[i], _, _ = strings.Cut(a.Address, "/") // ipamctl pods shows bare addresses
	}
	return strings.Join(sorted(addrs), ",")
}

// ipamctl runs ipamctl in node n's running ipamd.
func (n *clusterNode) ipamctl(ctx context.Context, args ...string) (string, error) {
	id, _, err := n.cri.runningContainer(ctx, "ipamd")
	if err != nil {
		return "", err
	}
	return n.cri.cmd(ctx, append([]string{"exec", "--sync", id, "/usr/bin/ipamctl"}, args...)...)
}

// holds is what ipamd on n holds for sandbox id (addresses, sorted), or "".
func (n *clusterNode) holds(ctx context.Context, id string) (string, error) {
	pods, err := n.ipamdPods(ctx)
	if err != nil {
		return "", err
	}
	i := slices.IndexFunc(pods, func(p ipamPod) bool { return p.SandboxID == id })
	if i < 0 {
		return "", nil
	}
	return strings.Join(sorted(pods[i].addrs()), ","), nil
}
