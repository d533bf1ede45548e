package kubernetes

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/internal/testsupport"
)

// kubeProxyConfig is node n's KubeProxyConfiguration: iptables mode, the
// cluster's pod ranges of both families (traffic from elsewhere to a
// Service is masqueraded; kube-proxy runs dual-stack, iptables and
// ip6tables, when both work and the node has addresses of both), and no
// write to what is not the node's own: conntrack's
// table size and timeouts are global or the host's (0 leaves them as
// they are), and a negative OOM score needs CAP_SYS_RESOURCE, which root
// lacks on these machines (as for kubelet).
func kubeProxyConfig(n *clusterNode, kubeconfig, clusterCIDRs string) string {
	return fmt.Sprintf(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: %s
hostnameOverride: %s
mode: iptables
clusterCIDR: %q
bindAddress: 0.0.0.0
healthzBindAddress: 0.0.0.0:10256
metricsBindAddress: 127.0.0.1:10249
oomScoreAdj: 0
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
  udpTimeout: 0s
  udpStreamTimeout: 0s
`, kubeconfig, n.name, clusterCIDRs)
}

// startKubeProxy runs kube-proxy on node n as kubelet runs there: a
// process in the node's network and mount namespaces, so its iptables
// rules (and its xtables lock, on the node's /run) are the node's alone.
// The node first routes both service CIDRs to the hub, as a node's
// default routes would: a host-network client's connect to a ClusterIP
// needs a route before kube-proxy's DNAT rewrites it.
func (n *clusterNode) startKubeProxy(t *testing.T, kubeconfig, clusterCIDRs string) {
	t.Helper()
	inNetNS(t, n.netns, "ip", "route", "replace", serviceCIDRv4, "via", hubIPv4)
	inNetNS(t, n.netns, "ip", "-6", "route", "replace", serviceCIDRv6, "via", hubIPv6)
	dir := filepath.Join(n.dir, "kube-proxy")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(config, []byte(kubeProxyConfig(n, kubeconfig, clusterCIDRs)), 0o644); err != nil {
		t.Fatal(err)
	}
	log, err := os.Create(filepath.Join(dir, "kube-proxy.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("nsenter", "--net="+n.netns, "--mount="+n.mountNS(), "--",
		conformanceBinary(t, "kube-proxy"), "--config="+config, "--v=2")
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start kube-proxy on %s: %v", n.name, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); log.Close(); close(exited) }()
	// Before the node's shell and containerd (cleanups run last-in
	// first-out); its rules go with the node's namespace.
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
	})
	testsupport.WaitFor(t, 2*time.Minute, n.name+"'s kube-proxy is healthy", func(ctx context.Context) error {
		select {
		case <-exited:
			b, _ := os.ReadFile(log.Name())
			t.Fatalf("kube-proxy on %s exited: %s", n.name, tail(b, 4096))
		default:
		}
		code, body, err := httpInNetNS(ctx, n.netns, "http://127.0.0.1:10256/healthz")
		if err != nil {
			return err
		}
		if code != http.StatusOK {
			return fmt.Errorf("healthz %d: %s", code, body)
		}
		return nil
	})
}

// kubeProxyChains fails unless node n's network namespace holds
// kube-proxy's KUBE-SERVICES chain in its nat table of both families (it
// proxies IPv4 and IPv6), and the host's does not: the rules are the
// node's alone.
func (n *clusterNode) kubeProxyChains(ctx context.Context) error {
	for _, tool := range []string{"iptables", "ip6tables"} {
		if _, err := runCtx(ctx, "nsenter", "--net="+n.netns, "--", tool, "-t", "nat", "-S", "KUBE-SERVICES"); err != nil {
			return fmt.Errorf("%s has no %s KUBE-SERVICES chain: %w", n.name, tool, err)
		}
		if _, err := runCtx(ctx, tool, "-t", "nat", "-S", "KUBE-SERVICES"); err == nil {
			return fmt.Errorf("the host's namespace has a %s KUBE-SERVICES chain", tool)
		}
	}
	return nil
}

// checkKubeProxyChains waits until every node's kube-proxy has written its
// rules, in the node's namespace only.
func (c *cluster) checkKubeProxyChains(t *testing.T) {
	t.Helper()
	for _, n := range c.nodes {
		testsupport.WaitFor(t, time.Minute, n.name+"'s kube-proxy rules, in its namespace only", n.kubeProxyChains)
	}
	c.logf(t, "kube-proxy runs on every node, its rules in the node's namespace only")
}
