package kubernetes

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/vishvananda/netns"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"

	"github.com/sandboxipam/sandboxipam/internal/testsupport"
)

// decisionsThroughPortForward reads the leading reclaimer's /v1/decisions
// the way docs/safety.md tells an operator elsewhere to: kubectl -n kube-system
// port-forward pod/<leader> 61681. The request goes through the API
// server's pods/portforward, the leader's kubelet and its runtime, which
// forwards the hostNetwork pod's port on its node's loopback, where the
// reclaimer alone listens. The answer must be the leader's own pass, as
// read on its node.
func (c *cluster) decisionsThroughPortForward(t *testing.T) {
	t.Helper()
	leader := c.waitReclaimerLeader(t)
	local, stop := c.portForward(t, "kube-system", leader.Name, reclaimerDecisionsPort)
	defer stop()
	where := fmt.Sprintf("port-forward pod/%s %s", leader.Name, reclaimerDecisionsPort)
	testsupport.WaitFor(t, time.Minute, "the leader's decisions through "+where, func(ctx context.Context) error {
		d, err := getDecisions(ctx, netnsDialer(c.hub), local, where, leader.Name)
		if err != nil {
			return err
		}
		c.logf(t, "%s: reclaimer %s's pass at %s, %d decisions", where, d.Identity, d.Pass.At.Format(time.RFC3339), len(d.Pass.Decisions))
		return nil
	})
}

// portForward forwards a port of the hub's loopback to remotePort of pod,
// as kubectl port-forward does: an upgraded (SPDY) connection to the API
// server's pods/portforward subresource. It returns the local address and
// a func that ends the forwarding and waits for it.
//
// The API server listens only in the hub's network namespace, so the
// connection and the local listener are made on a thread moved there.
// client-go's SPDY dialer takes no dial function; the thread is kept
// for the forwarding's life and goes back to the test's own namespace
// before it is unlocked (see kubeenv.NetNSDialer for why it must not
// exit in another).
func (c *cluster) portForward(t *testing.T, namespace, pod, remotePort string) (local string, stop func()) {
	t.Helper()
	cfg := &rest.Config{Host: c.cp.URL, BearerToken: c.cp.Token, TLSClientConfig: rest.TLSClientConfig{CAData: c.cp.CAPEM}}
	rt, upgrader, err := spdy.RoundTripperFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(fmt.Sprintf("%s/api/v1/namespaces/%s/pods/%s/portforward", c.cp.URL, namespace, pod))
	if err != nil {
		t.Fatal(err)
	}
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: rt}, http.MethodPost, u)
	stopCh, ready := make(chan struct{}), make(chan struct{})
	var out, errOut testsupport.Buffer
	fw, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"}, []string{":" + remotePort}, stopCh, ready, &out, &errOut)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- forwardInNetNS(c.hub, fw) }()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("port-forward pod/%s %s: %v; %s", pod, remotePort, err, errOut.String())
	}
	ports, err := fw.GetPorts()
	if err != nil || len(ports) != 1 {
		close(stopCh)
		t.Fatalf("port-forward pod/%s %s: ports %v: %v", pod, remotePort, ports, err)
	}
	stop = func() {
		close(stopCh)
		if err := <-done; err != nil {
			t.Errorf("port-forward pod/%s %s: %v", pod, remotePort, err)
		}
		if t.Failed() {
			t.Logf("port-forward pod/%s %s said:\n%s%s", pod, remotePort, out.String(), errOut.String())
		}
	}
	return "127.0.0.1:" + strconv.Itoa(int(ports[0].Local)), stop
}

// forwardInNetNS runs fw.ForwardPorts on a thread in the network
// namespace at nsPath until it stops.
func forwardInNetNS(nsPath string, fw *portforward.PortForwarder) error {
	runtime.LockOSThread()
	own, err := netns.Get()
	if err != nil {
		runtime.UnlockOSThread()
		return err
	}
	defer own.Close()
	ns, err := netns.GetFromPath(nsPath)
	if err != nil {
		runtime.UnlockOSThread()
		return err
	}
	defer ns.Close()
	if err := netns.Set(ns); err != nil {
		runtime.UnlockOSThread()
		return err
	}
	err = fw.ForwardPorts()
	if netns.Set(own) == nil {
		runtime.UnlockOSThread()
	}
	return err
}
