package config

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// AdapterAuto makes ipamd probe the known runtime sockets.
const AdapterAuto = "auto"

// AdapterSpec is one row of the name-to-binary table.
type AdapterSpec struct {
	Name   string // the runtime.adapter value
	Binary string // file name in runtime.pluginDir
}

// Adapters is the name-to-binary table of the adapters that ship with
// ipamd. cri-dockerd speaks dockershim's CRI, so the dockershim adapter
// serves both.
func Adapters() []AdapterSpec {
	return []AdapterSpec{
		{Name: "docker", Binary: "docker"},
		{Name: "dockershim", Binary: "dockershim"},
		{Name: "containerd", Binary: "containerd"},
		{Name: "crio", Binary: "crio"},
	}
}

// AdapterNames lists the table's names in order.
func AdapterNames() []string {
	var names []string
	for _, a := range Adapters() {
		names = append(names, a.Name)
	}
	return names
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

// Candidate is a socket that auto probes and the adapter it implies.
type Candidate struct {
	Socket  string
	Adapter string
}

// AutoCandidates is the probe order of runtime.adapter auto: crictl's
// default endpoints (containerd, CRI-O, cri-dockerd), then the legacy
// dockershim socket, then the Docker Engine itself. A CRI socket wins over
// docker.sock because on a node with cri-dockerd, kubelet talks CRI.
func AutoCandidates() []Candidate {
	return []Candidate{
		{Socket: "/run/containerd/containerd.sock", Adapter: "containerd"},
		{Socket: "/run/crio/crio.sock", Adapter: "crio"},
		{Socket: "/var/run/cri-dockerd.sock", Adapter: "dockershim"},
		{Socket: "/var/run/dockershim.sock", Adapter: "dockershim"},
		{Socket: "/var/run/docker.sock", Adapter: "docker"},
	}
}

// ErrNoRuntime: auto found no runtime socket that accepts connections.
var ErrNoRuntime = errors.New("no container runtime socket found")

// Selection is the adapter ipamd will run, with its full command line.
type Selection struct {
	// Adapter is the table name, or "path" for a third-party binary.
	Adapter string
	// Binary is the executable's path.
	Binary string
	// Args are its arguments: --endpoint when one is known, then
	// runtime.args.
	Args []string
	// Endpoint is the runtime socket URI passed, empty for the adapter's
	// default.
	Endpoint string
	// Reason says how the adapter was chosen, for the log.
	Reason string
	// AlsoFound lists the other runtime sockets auto found accepting
	// connections. More than one runtime on a node makes auto a guess:
	// ipamd warns, and runtime.adapter should name the one kubelet uses.
	AlsoFound []string
}

// Prober reports whether a unix socket accepts connections.
type Prober func(ctx context.Context, socket string) bool

// DialProbe is the Prober ipamd uses: a connect with a short deadline.
func DialProbe(ctx context.Context, socket string) bool {
	ctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", socket)
	if err != nil {
		return false
	}
	conn.Close()
	return true
}

// PluginDirFor is runtime.pluginDir, or "adapters" next to executable.
func (r Runtime) PluginDirFor(executable string) string {
	if r.PluginDir != "" {
		return r.PluginDir
	}
	return filepath.Join(filepath.Dir(executable), "adapters")
}

// Select resolves runtime.adapter to a binary and command line. For auto
// it probes AutoCandidates in order and picks the first socket that
// accepts a connection; executable is ipamd's own path (os.Executable).
func (r Runtime) Select(ctx context.Context, executable string, probe Prober) (Selection, error) {
	sel := Selection{Adapter: r.Adapter, Endpoint: r.Endpoint}
	switch {
	case isPath(r.Adapter):
		sel.Adapter, sel.Binary = "path", r.Adapter
		sel.Reason = "runtime.adapter is a path"
	case r.Adapter == AdapterAuto && r.Endpoint == "":
		found, err := probeCandidates(ctx, probe)
		if err != nil {
			return Selection{}, err
		}
		c := found[0]
		sel.Adapter, sel.Endpoint = c.Adapter, "unix://"+c.Socket
		sel.Reason = fmt.Sprintf("auto: %s accepts connections (first of crictl's order)", c.Socket)
		for _, other := range found[1:] {
			sel.AlsoFound = append(sel.AlsoFound, other.Socket)
		}
	case r.Adapter == AdapterAuto:
		return Selection{}, fmt.Errorf("%w: runtime.adapter auto needs runtime.endpoint empty (auto finds it), got %q", ErrInvalid, r.Endpoint)
	default:
		sel.Reason = "runtime.adapter names it"
	}
	if sel.Binary == "" {
		spec, ok := LookupAdapter(sel.Adapter)
		if !ok {
			return Selection{}, fmt.Errorf("%w: runtime.adapter %q is not in the adapter table", ErrInvalid, sel.Adapter)
		}
		sel.Binary = filepath.Join(r.PluginDirFor(executable), spec.Binary)
	}
	if sel.Endpoint != "" {
		sel.Args = append(sel.Args, "--endpoint", sel.Endpoint)
	}
	sel.Args = append(sel.Args, r.Args...)
	if _, err := os.Stat(sel.Binary); err != nil {
		return sel, fmt.Errorf("adapter %s: binary: %w", sel.Adapter, err)
	}
	return sel, nil
}

// probeCandidates returns every candidate whose socket accepts a
// connection, in probe order.
func probeCandidates(ctx context.Context, probe Prober) ([]Candidate, error) {
	var tried []string
	var found []Candidate
	for _, c := range AutoCandidates() {
		if probe(ctx, c.Socket) {
			found = append(found, c)
		}
		tried = append(tried, c.Socket)
	}
	if len(found) == 0 {
		return nil, fmt.Errorf("runtime.adapter auto: %w (tried %s)", ErrNoRuntime, strings.Join(tried, ", "))
	}
	return found, nil
}

func isPath(s string) bool { return strings.Contains(s, "/") }
