package e2e_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/containernetworking/cni/libcni"
	"github.com/containernetworking/plugins/pkg/ns"

	"github.com/sandboxipam/sandboxipam/cni/internal/cnitest"
	"github.com/sandboxipam/sandboxipam/internal/image"
	"github.com/sandboxipam/sandboxipam/internal/testsupport"
)

// chainSide is one conflist of the portmap comparison: sandboxipam's
// entry with what follows its socket (what ipamd writes for a value of
// cni.portMap: TestConfListMapsPortsThroughThePlugin holds the exact
// bytes), and a chained plugin entry after it ("" for none).
type chainSide struct {
	name    string
	ours    string
	chained string
}

var chainSides = []chainSide{
	// What ipamd writes by default: portmap only for a pod with hostPorts.
	{"delegated-iptables", `,"capabilities":{"portMappings":true},"portMap":{"backend":"iptables"}`, ""},
	// portmap chained after sandboxipam, as flannel and Calico write it
	// (and ipamd did before): the runtime execs it for every pod.
	{"chained-iptables", "", `,{"backend":"iptables","capabilities":{"portMappings":true},"type":"portmap"}`},
	{"alone", "", ""}, // last: the ratios are to it
}

func (s chainSide) confList(b *testing.B, socket string) *libcni.NetworkConfigList {
	b.Helper()
	list, err := libcni.ConfListFromBytes(fmt.Appendf(nil, `{"cniVersion":"1.0.0","name":%q,"plugins":[`+
		`{"ipamdSocket":%q,"type":"sandboxipam"%s}%s]}`, benchNetwork, socket, s.ours, s.chained))
	if err != nil {
		b.Fatal(err)
	}
	return list
}

// BenchmarkConfListAddDel: the ADD+DEL pair of a pod without hostPorts
// through a conflist, run by libcni as a runtime runs it (the pod's veth,
// addresses and routes included): what ipamd writes by default (the
// plugin runs portmap only for hostPorts), portmap chained after
// sandboxipam as flannel and Calico chain it, and sandboxipam alone
// (cni.portMap off), interleaved pair by pair, each side with its own
// ipamd process. It reports each side's median and p99 and its median as
// a ratio of sandboxipam alone: what hostPort support costs a pod with no
// hostPort.
func BenchmarkConfListAddDel(b *testing.B) {
	measureConfLists(b, chainSides, []any{})
}

// BenchmarkConfListAddDelHostPort: the same pair for a pod with one
// hostPort, where portmap runs on both sides and writes and removes its
// rules: what ipamd writes against portmap chained, the ratio to chained.
// sandboxipam alone maps no port, so it is no side here.
func BenchmarkConfListAddDelHostPort(b *testing.B) {
	measureConfLists(b, chainSides[:2], []any{map[string]any{"hostPort": hostPort, "containerPort": 80, "protocol": "tcp"}})
}

// measureConfLists runs b.N ADD+DEL pairs through each side's conflist in
// turn, with ports as the pods' portMappings, and reports each side's
// median and p99 and its median as a ratio of the last side's.
func measureConfLists(b *testing.B, sides []chainSide, ports []any) {
	env := newBenchEnv(b)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	portmap, err := image.BuildPortMap(ctx, testsupport.Root(b), b.TempDir())
	cancel()
	if err != nil {
		b.Fatal(err)
	}
	cniConfig := libcni.NewCNIConfigWithCacheDir([]string{filepath.Dir(cnitest.PluginBinary(b)), filepath.Dir(portmap)}, b.TempDir(), nil)
	lists := make([]*libcni.NetworkConfigList, len(sides))
	for k, s := range sides {
		lists[k] = s.confList(b, startIPAMDProcess(b, os.TempDir(), benchCIDR, time.Millisecond))
	}
	took := make([][]time.Duration, len(sides))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for k, s := range sides {
			rt := benchRuntimeConf(cnitest.SandboxID(fmt.Sprintf("%s-%s-%d", b.Name(), s.name, i)), env.podNS, ports)
			start := time.Now()
			err := env.hostNS.Do(func(ns.NetNS) error {
				if _, err := cniConfig.AddNetworkList(context.Background(), lists[k], rt); err != nil {
					return fmt.Errorf("ADD: %w", err)
				}
				return cniConfig.DelNetworkList(context.Background(), lists[k], rt)
			})
			took[k] = append(took[k], time.Since(start))
			if err != nil {
				b.Fatalf("%s: %v", s.name, err)
			}
		}
	}
	b.StopTimer()
	last := sides[len(sides)-1].name
	reference := median(took[len(took)-1])
	for k, s := range sides {
		reportPercentiles(b, s.name+"-", took[k])
		b.ReportMetric(median(took[k])/reference, s.name+"/"+last)
	}
}

// benchRuntimeConf is what a runtime passes for a pod: kubelet fills the
// portMappings capability from its hostPorts, an empty list for none.
func benchRuntimeConf(id, podNS string, ports []any) *libcni.RuntimeConf {
	return &libcni.RuntimeConf{ContainerID: id, NetNS: podNS, IfName: "eth0", Args: podRuntimeArgs(id),
		CapabilityArgs: map[string]any{"portMappings": ports}}
}
