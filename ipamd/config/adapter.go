package config

import (
	"cmp"
	"slices"
	"strings"
)

// AdapterAuto makes ipamd probe the known runtime sockets.
const AdapterAuto = "auto"

// AdapterSpec is one row of the table of shipped adapters.
type AdapterSpec struct {
	// Name is the runtime.adapter value.
	Name string
	// Binary is the file name in runtime.pluginDir, and in the image's
	// adapters directory beside ipamd.
	Binary string
	// Cmd is the adapter's main package, relative to the module root.
	// ipamd never links it (adapters are separate binaries): the builds
	// (make build, the image, the tests) read it from here.
	Cmd string
	// Sockets are the runtime's default sockets that runtime.adapter auto
	// probes for this adapter; none means auto never picks it.
	Sockets []AutoSocket
}

// AutoSocket is one socket auto probes. Rank orders the probes across
// the whole table (lowest first): crictl's default endpoints (containerd,
// CRI-O, cri-dockerd), then the legacy dockershim socket, then the Docker
// Engine itself. A CRI socket wins over docker.sock because on a node
// with cri-dockerd, kubelet talks CRI.
type AutoSocket struct {
	Path string
	Rank int
}

// Adapters is the one table of the adapters that ship with ipamd: the
// config's names, the daemon's binaries and auto's probes, the image's
// contents and the tests' builds all derive from it, so a new adapter is
// its folder, its main and a row here (internal/image's tests check the
// rows against cmd/adapters and the image). cri-dockerd speaks
// dockershim's CRI, so the dockershim adapter serves both.
func Adapters() []AdapterSpec {
	return []AdapterSpec{
		{Name: "docker", Binary: "docker", Cmd: "cmd/adapters/docker",
			Sockets: []AutoSocket{{Path: "/var/run/docker.sock", Rank: 50}}},
		{Name: "dockershim", Binary: "dockershim", Cmd: "cmd/adapters/dockershim",
			Sockets: []AutoSocket{{Path: "/var/run/cri-dockerd.sock", Rank: 30}, {Path: "/var/run/dockershim.sock", Rank: 40}}},
		{Name: "containerd", Binary: "containerd", Cmd: "cmd/adapters/containerd",
			Sockets: []AutoSocket{{Path: "/run/containerd/containerd.sock", Rank: 10}}},
		{Name: "crio", Binary: "crio", Cmd: "cmd/adapters/crio",
			Sockets: []AutoSocket{{Path: "/run/crio/crio.sock", Rank: 20}}},
	}
}

// AutoProbe is one socket of auto's probe order and the adapter it
// implies.
type AutoProbe struct {
	Socket, Adapter string
}

// AutoProbeOrder lists every socket of the table in auto's probe order.
func AutoProbeOrder() []AutoProbe {
	type ranked struct {
		AutoProbe
		rank int
	}
	var all []ranked
	for _, a := range Adapters() {
		for _, s := range a.Sockets {
			all = append(all, ranked{AutoProbe{Socket: s.Path, Adapter: a.Name}, s.Rank})
		}
	}
	slices.SortStableFunc(all, func(a, b ranked) int { return cmp.Compare(a.rank, b.rank) })
	out := make([]AutoProbe, len(all))
	for i, r := range all {
		out[i] = r.AutoProbe
	}
	return out
}

// AdapterNames lists the table's names in order.
func AdapterNames() []string {
	var names []string
	for _, a := range Adapters() {
		names = append(names, a.Name)
	}
	return names
}

// AdapterCmds lists the table's main packages in order, as patterns the
// go command takes ("./cmd/adapters/docker").
func AdapterCmds() []string {
	var cmds []string
	for _, a := range Adapters() {
		cmds = append(cmds, "./"+a.Cmd)
	}
	return cmds
}

// LookupAdapter finds a name in the table.
func LookupAdapter(name string) (AdapterSpec, bool) {
	for _, a := range Adapters() {
		if a.Name == name {
			return a, true
		}
	}
	return AdapterSpec{}, false
}

// AdapterIsPath reports whether runtime.adapter names a third-party
// adapter binary by its path rather than a row of the table.
func (r Runtime) AdapterIsPath() bool { return isPath(r.Adapter) }

func isPath(s string) bool { return strings.Contains(s, "/") }
