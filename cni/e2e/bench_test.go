package e2e_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/containernetworking/plugins/pkg/ns"

	"github.com/sandboxipam/sandboxipam/cni/internal/cnitest"
	"github.com/sandboxipam/sandboxipam/internal/testsupport"
)

// The reference plugins: Debian's containernetworking-plugins.
const (
	refPluginDir = "/usr/lib/cni"
	benchNetwork = "podnet"
	benchCIDR    = "198.18.0.0/22" // ipamd's pool
	refCIDR      = "198.19.0.0/22" // host-local's range, same size
)

// exec1 runs one plugin process inside the namespace at hostNS, the way a
// runtime execs a CNI plugin: env and stdin in, exit status out.
func exec1(b *testing.B, hostNS ns.NetNS, binary string, env []string, stdin []byte) {
	var stdout, stderr bytes.Buffer
	err := hostNS.Do(func(ns.NetNS) error {
		cmd := exec.Command(binary)
		cmd.Env = env
		cmd.Stdin = bytes.NewReader(stdin)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		return cmd.Run()
	})
	if err != nil {
		b.Fatalf("%s %v: %v\nstdout: %s\nstderr: %s", binary, env[0], err, stdout.String(), stderr.String())
	}
}

func cniEnv(command, id, netnsPath string) []string {
	return []string{
		"CNI_COMMAND=" + command, "CNI_CONTAINERID=" + id, "CNI_IFNAME=eth0", "CNI_NETNS=" + netnsPath,
		"CNI_PATH=" + refPluginDir, "CNI_ARGS=" + cnitest.PodArgs(id),
	}
}

// benchPlugin is one side of a comparison.
type benchPlugin struct {
	binary     string
	config     []byte   // for the measured ADD and DEL
	env        []string // more environment for the measured binary
	ipamBinary string   // the IPAM plugin that pre-allocates addresses
	ipam       []byte   // its config
}

// benchEnv holds the namespaces a benchmark runs in.
type benchEnv struct {
	hostNS ns.NetNS
	podNS  string
}

func newBenchEnv(b *testing.B) *benchEnv {
	b.Helper()
	testsupport.RequireRoot(b, "ip")
	if _, err := os.Stat(refPluginDir + "/host-local"); err != nil {
		testsupport.SkipOrFail(b, "needs Debian's containernetworking-plugins in %s: %v", refPluginDir, err)
	}
	hostName := cnitest.NewNetns(b, "bhost")
	hostNS, err := ns.GetNS(cnitest.NetnsPath(hostName))
	if err != nil {
		b.Fatalf("open %s: %v", hostName, err)
	}
	b.Cleanup(func() { hostNS.Close() })
	return &benchEnv{hostNS: hostNS, podNS: cnitest.NetnsPath(cnitest.NewNetns(b, "bpod"))}
}

// preallocate holds n addresses under other sandboxes, through the
// plugin's IPAM-only config, as n running pods would.
func (e *benchEnv) preallocate(b *testing.B, p benchPlugin, n int) {
	for i := range n {
		id := cnitest.SandboxID(fmt.Sprintf("prealloc-%d", i))
		exec1(b, e.hostNS, p.ipamBinary, cniEnv("ADD", id, e.podNS), p.ipam)
	}
}

// measureAddDel runs b.N ADD+DEL pairs of fresh sandboxes on every side
// in turn, so that each side sees the same moments of a noisy machine,
// and reports each side's median and p99 in milliseconds and each side's
// median as a ratio of the last side's (the reference plugin).
func measureAddDel(b *testing.B, env *benchEnv, names []string, plugins []benchPlugin) {
	took := make([][]time.Duration, len(plugins))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for k, p := range plugins {
			id := cnitest.SandboxID(fmt.Sprintf("%s-%s-%d", b.Name(), names[k], i))
			start := time.Now()
			exec1(b, env.hostNS, p.binary, append(cniEnv("ADD", id, env.podNS), p.env...), p.config)
			exec1(b, env.hostNS, p.binary, append(cniEnv("DEL", id, env.podNS), p.env...), p.config)
			took[k] = append(took[k], time.Since(start))
		}
	}
	b.StopTimer()
	reference := median(took[len(took)-1])
	for k, name := range names {
		reportPercentiles(b, name+"-", took[k])
		b.ReportMetric(median(took[k])/reference, name+"/ref")
	}
}

func median(took []time.Duration) float64 {
	sorted := slices.Clone(took)
	slices.Sort(sorted)
	return float64(sorted[(len(sorted)-1)/2]) / float64(time.Millisecond)
}

func reportPercentiles(b *testing.B, prefix string, took []time.Duration) {
	slices.Sort(took)
	at := func(q float64) float64 {
		i := int(q*float64(len(took))+0.999999) - 1
		return float64(took[max(i, 0)]) / float64(time.Millisecond)
	}
	b.ReportMetric(at(0.5), prefix+"ms-median")
	b.ReportMetric(at(0.99), prefix+"ms-p99")
}

func hostLocalIPAM(dataDir string) []byte {
	return fmt.Appendf(nil, `{"cniVersion":"1.0.0","name":%q,"type":"ptp",`+
		`"ipam":{"type":"host-local","ranges":[[{"subnet":%q}]],"dataDir":%q}}`, benchNetwork, refCIDR, dataDir)
}

func sandboxipamIPAM(socket string) []byte {
	return fmt.Appendf(nil, `{"cniVersion":"1.0.0","name":%q,"type":"ptp","ipam":{"type":"sandboxipam","ipamdSocket":%q}}`,
		benchNetwork, socket)
}

func ptpHostLocal(dataDir string) []byte {
	return fmt.Appendf(nil, `{"cniVersion":"1.0.0","name":%q,"type":"ptp","mtu":1400,`+
		`"ipam":{"type":"host-local","ranges":[[{"subnet":%q}]],"dataDir":%q}}`, benchNetwork, refCIDR, dataDir)
}

func sandboxipamMain(socket string) []byte {
	return fmt.Appendf(nil, `{"cniVersion":"1.0.0","name":%q,"type":"sandboxipam","mtu":1400,"ipamdSocket":%q}`,
		benchNetwork, socket)
}

// side is one plugin of a comparison.
type side struct {
	name  string
	state string // where ipamd's state directory goes; "" for the reference plugin
	floor bool   // measure cni/internal/wirefloor instead of the plugin
}

// The state of ipamd lives on the root file system (durable, fsync'd) or,
// to show the cost of the CNI path without the disk, on tmpfs.
var (
	onDisk    = side{name: "sandboxipam", state: os.TempDir()}
	onTmpfs   = side{name: "sandboxipam-tmpfs", state: "/dev/shm"}
	reference = side{name: "reference"} // last: the ratios are to it
)

// wireFloor is the least any Go client of ipamd's socket pays per call
// (see cni/internal/wirefloor), with ipamd's state on disk like onDisk's.
var wireFloor = side{name: "wire-floor", state: os.TempDir(), floor: true}

func ipamOnly(b *testing.B, s side, socket, dataDir string) benchPlugin {
	if socket == "" {
		return benchPlugin{binary: refPluginDir + "/host-local", config: hostLocalIPAM(dataDir),
			ipamBinary: refPluginDir + "/host-local", ipam: hostLocalIPAM(dataDir)}
	}
	bin := cnitest.PluginBinary(b)
	p := benchPlugin{binary: bin, config: sandboxipamIPAM(socket), ipamBinary: bin, ipam: sandboxipamIPAM(socket)}
	if s.floor {
		p.binary = testsupport.StaticBinary(b, "./cni/internal/wirefloor")
		p.env = []string{"WIREFLOOR_SOCKET=" + socket, "WIREFLOOR_NETWORK=" + benchNetwork}
	}
	return p
}

func withNetns(b *testing.B, _ side, socket, dataDir string) benchPlugin {
	if socket == "" {
		return benchPlugin{binary: refPluginDir + "/ptp", config: ptpHostLocal(dataDir),
			ipamBinary: refPluginDir + "/host-local", ipam: hostLocalIPAM(dataDir)}
	}
	bin := cnitest.PluginBinary(b)
	return benchPlugin{binary: bin, config: sandboxipamMain(socket), ipamBinary: bin, ipam: sandboxipamIPAM(socket)}
}

// runComparison measures the sides side by side, interleaved, with an
// empty pool and with 250 addresses already held on every side; the last
// side is the reference the ratios are to.
func runComparison(b *testing.B, sides []side, build func(b *testing.B, s side, socket, dataDir string) benchPlugin) {
	for _, allocated := range []int{0, 250} {
		b.Run(fmt.Sprintf("allocated=%d", allocated), func(b *testing.B) {
			env := newBenchEnv(b)
			var names []string
			var plugins []benchPlugin
			for _, s := range sides {
				socket := ""
				if s.state != "" {
					socket = startIPAMDProcess(b, s.state, benchCIDR, time.Millisecond)
				}
				p := build(b, s, socket, b.TempDir())
				env.preallocate(b, p, allocated)
				names = append(names, s.name)
				plugins = append(plugins, p)
			}
			measureAddDel(b, env, names, plugins)
		})
	}
}

// BenchmarkIPAMAddDel: sandboxipam as an IPAM plugin (ipam type
// sandboxipam, talking to ipamd) against host-local, ADD+DEL as processes,
// with the wire floor beside them.
func BenchmarkIPAMAddDel(b *testing.B) {
	runComparison(b, []side{onDisk, onTmpfs, wireFloor, reference}, ipamOnly)
}

// BenchmarkPodAddDel: the full plugin (veth, addresses, routes) against
// ptp with host-local, in namespaces the benchmark creates.
func BenchmarkPodAddDel(b *testing.B) {
	runComparison(b, []side{onDisk, onTmpfs, reference}, withNetns)
}

// BenchmarkStartup: exec+wait of CNI_COMMAND=VERSION, which does nothing
// but start, print and exit: the plugin's start-up cost, next to
// host-local's and to an empty Go program's (the floor of any Go plugin).
func BenchmarkStartup(b *testing.B) {
	for _, p := range []struct {
		name   string
		binary func(b *testing.B) string
	}{
		{"sandboxipam", func(b *testing.B) string { return cnitest.PluginBinary(b) }},
		{"host-local", func(*testing.B) string { return refPluginDir + "/host-local" }},
		{"empty-go", emptyGoBinary},
	} {
		b.Run(p.name, func(b *testing.B) {
			env := newBenchEnv(b)
			binary := p.binary(b)
			took := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				start := time.Now()
				exec1(b, env.hostNS, binary, []string{"CNI_COMMAND=VERSION"}, nil)
				took = append(took, time.Since(start))
			}
			b.StopTimer()
			reportPercentiles(b, "", took)
		})
	}
}

// emptyGoBinary builds a Go program whose main does nothing.
func emptyGoBinary(b *testing.B) string {
	dir := b.TempDir()
	if err := os.WriteFile(dir+"/main.go", []byte("package main\n\nfunc main() {}\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command("go", "build", "-trimpath", "-o", dir+"/empty", "main.go")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GO111MODULE=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("build empty program: %v\n%s", err, out)
	}
	return dir + "/empty"
}
