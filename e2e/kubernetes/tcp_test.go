package kubernetes

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netns"
)

// tcpPort is where the test listens inside a pod's network namespace.
const tcpPort = "7777"

// podNetNS is the network namespace of a pod's sandbox, through its pause
// process.
func podNetNS(p clusterPod) string { return fmt.Sprintf("/proc/%d/ns/net", p.PID) }

// listenIn listens on addr from inside the network namespace at nsPath;
// the socket stays in that namespace.
func listenIn(nsPath, addr string) (net.Listener, error) {
	type result struct {
		l   net.Listener
		err error
	}
	ch := make(chan result, 1)
	go func() {
		// As in kubeenv.NetNSDialer: the thread goes back to its own
		// namespace before it is unlocked.
		runtime.LockOSThread()
		own, err := netns.Get()
		if err != nil {
			ch <- result{nil, err}
			return
		}
		defer own.Close()
		ns, err := netns.GetFromPath(nsPath)
		if err != nil {
			runtime.UnlockOSThread()
			ch <- result{nil, err}
			return
		}
		defer ns.Close()
		if err := netns.Set(ns); err != nil {
			runtime.UnlockOSThread()
			ch <- result{nil, err}
			return
		}
		l, err := net.Listen("tcp", addr)
		if netns.Set(own) == nil {
			runtime.UnlockOSThread()
		}
		ch <- result{l, err}
	}()
	r := <-ch
	return r.l, r.err
}

// tcpBetween opens a TCP connection from pod a to pod b by b's address of
// each family, and back from b to a, and checks a line goes each way.
func tcpBetween(t *testing.T, a, b clusterPod) {
	t.Helper()
	for i := range a.IPs {
		tcpOneWay(t, a, b, b.IPs[i])
		tcpOneWay(t, b, a, a.IPs[i])
	}
}

// tcpOneWay: from pod "from", connect to "to" at ip and exchange a line.
func tcpOneWay(t *testing.T, from, to clusterPod, ip string) {
	t.Helper()
	addr := net.JoinHostPort(ip, tcpPort)
	l, err := listenIn(podNetNS(to), addr)
	if err != nil {
		t.Fatalf("listen in pod %s on %s: %v", to.Name, addr, err)
	}
	defer l.Close()
	served := make(chan error, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			served <- err
			return
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(time.Minute))
		line, err := bufio.NewReader(c).ReadString('\n')
		if err == nil {
			_, err = fmt.Fprintf(c, "%s saw %s from %s", to.Name, strings.TrimSpace(line), c.RemoteAddr())
		}
		served <- err
	}()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dial := netnsDialer(podNetNS(from))
	c, err := dial(ctx, "tcp", addr)
	if err != nil {
		t.Fatalf("pod %s (%s) cannot reach pod %s (%s) at %s: %v", from.Name, from.Node, to.Name, to.Node, addr, err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Minute))
	fmt.Fprintf(c, "hello from %s\n", from.Name)
	c.(*net.TCPConn).CloseWrite()
	buf := make([]byte, 256)
	nr, _ := c.Read(buf)
	if err := <-served; err != nil {
		t.Fatalf("pod %s serving %s: %v", to.Name, addr, err)
	}
	got := string(buf[:nr])
	wantFrom := from.IPs[0]
	if strings.Contains(ip, ":") {
		wantFrom = from.IPs[1]
	}
	if !strings.Contains(got, " from "+net.JoinHostPort(wantFrom, "")) {
		t.Fatalf("pod %s answered %q: the connection did not come from %s's address %s", to.Name, got, from.Name, wantFrom)
	}
	t.Logf("TCP %s (%s) -> %s (%s): %q", from.Name, from.Node, to.Name, ip, got)
}
