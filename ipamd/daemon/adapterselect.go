package daemon

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sandboxipam/sandboxipam/ipamd/config"
)

// Resolving runtime.adapter to a command line is the daemon's wiring, not
// the config's: it probes runtime sockets and looks for the binary on
// disk. The config only checks that the name is in its table, auto, or an
// absolute path.

// ErrNoRuntime: auto found no runtime socket that accepts connections.
var ErrNoRuntime = errors.New("no container runtime socket found")

// selection is the adapter ipamd will run, with its full command line.
type selection struct {
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
	// ipamd refuses to reconcile, and runtime.adapter should name the one
	// kubelet uses.
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

// pluginDir is runtime.pluginDir, or "adapters" next to executable.
func pluginDir(r config.Runtime, executable string) string {
	if r.PluginDir != "" {
		return r.PluginDir
	}
	return filepath.Join(filepath.Dir(executable), "adapters")
}

// selectAdapter resolves runtime.adapter to a binary and command line.
// For auto it probes config.AutoProbeOrder in order and picks the first socket
// that accepts a connection; executable is ipamd's own path
// (os.Executable). A selection whose binary is missing comes back with the
// error, so the supervisor can wait for the binary to appear.
func selectAdapter(ctx context.Context, r config.Runtime, executable string, probe Prober) (selection, error) {
	sel := selection{Adapter: r.Adapter, Endpoint: r.Endpoint}
	switch {
	case r.AdapterIsPath():
		sel.Adapter, sel.Binary = "path", r.Adapter
		sel.Reason = "runtime.adapter is a path"
	case r.Adapter == config.AdapterAuto && r.Endpoint == "":
		found, err := probeCandidates(ctx, probe)
		if err != nil {
			return selection{}, err
		}
		c := found[0]
		sel.Adapter, sel.Endpoint = c.Adapter, "unix://"+c.Socket
		sel.Reason = fmt.Sprintf("auto: %s accepts connections (first of crictl's order)", c.Socket)
		for _, other := range found[1:] {
			sel.AlsoFound = append(sel.AlsoFound, other.Socket)
		}
	case r.Adapter == config.AdapterAuto:
		return selection{}, fmt.Errorf("%w: runtime.adapter auto needs runtime.endpoint empty (auto finds it), got %q", config.ErrInvalid, r.Endpoint)
	default:
		sel.Reason = "runtime.adapter names it"
	}
	if sel.Binary == "" {
		spec, ok := config.LookupAdapter(sel.Adapter)
		if !ok {
			return selection{}, fmt.Errorf("%w: runtime.adapter %q is not in the adapter table", config.ErrInvalid, sel.Adapter)
		}
		sel.Binary = filepath.Join(pluginDir(r, executable), spec.Binary)
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

// probeCandidates returns every socket of the adapter table's probe
// order that accepts a connection, in that order.
func probeCandidates(ctx context.Context, probe Prober) ([]config.AutoProbe, error) {
	var tried []string
	var found []config.AutoProbe
	for _, c := range config.AutoProbeOrder() {
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
