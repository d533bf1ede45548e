package kubernetes

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// The hostPort a CRI pod publishes in these tests, and the node address
// it is reached on: an address of the test range on the loopback link of the
// runtime's network namespace (the node's), so nothing leaves the test.
const (
	testHostPort      = 18080
	testContainerPort = 80
	testNodeAddr      = "198.19.253.1"
)

// hostPortMappings is the PodSandboxConfig's port_mappings kubelet sends
// for a container port published as a hostPort (protocol 0 is TCP).
func hostPortMappings() []map[string]any {
	return []map[string]any{{"container_port": testContainerPort, "host_port": testHostPort, "protocol": 0}}
}

// withHostPort publishes the pod's container port as a hostPort, as a
// manifest's ports do; kubelet turns it into the sandbox's port mappings.
func withHostPort(p *corev1.Pod) *corev1.Pod {
	p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: testContainerPort, HostPort: testHostPort, Protocol: corev1.ProtocolTCP}}
	return p
}

// checkHostPort: the runtime passed the pod's port mappings to the
// conflist's portmap, so a connection from the node to its own address at
// the hostPort lands on the pod's container port. The listener is opened
// in the pod's network namespace by the test itself: the pause image
// serves nothing.
func checkHostPort(t *testing.T, runtimeNetNS string, podPID int) {
	t.Helper()
	inNetNS(t, runtimeNetNS, "ip", "addr", "add", testNodeAddr+"/32", "dev", "lo")
	l, err := listenIn("/proc/"+strconv.Itoa(podPID)+"/ns/net", "0.0.0.0:"+strconv.Itoa(testContainerPort))
	if err != nil {
		t.Fatalf("listen in the pod: %v", err)
	}
	defer l.Close()
	accepted := make(chan error, 1)
	go func() {
		conn, err := l.Accept()
		if err == nil {
			conn.Close()
		}
		accepted <- err
	}()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	addr := net.JoinHostPort(testNodeAddr, strconv.Itoa(testHostPort))
	conn, err := netnsDialer(runtimeNetNS)(ctx, "tcp", addr)
	if err != nil {
		t.Fatalf("the node's %s does not reach the pod's port %d: %v", addr, testContainerPort, err)
	}
	conn.Close()
	if err := <-accepted; err != nil {
		t.Fatalf("the pod's port %d accepted nothing: %v", testContainerPort, err)
	}
}

// checkHostPortGone: after the pod's DEL no rule maps the hostPort.
func checkHostPortGone(t *testing.T, runtimeNetNS string) {
	t.Helper()
	if out := inNetNS(t, runtimeNetNS, "iptables-save", "-t", "nat"); strings.Contains(out, strconv.Itoa(testHostPort)) {
		t.Fatalf("portmap's rules for port %d outlived the pod's DEL:\n%s", testHostPort, out)
	}
}
