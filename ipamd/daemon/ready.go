package daemon

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/sandboxipam/sandboxipam/cniinstall"
	"github.com/sandboxipam/sandboxipam/ipamd/api/hostveth"
	"github.com/sandboxipam/sandboxipam/ipamd/config"
	"github.com/sandboxipam/sandboxipam/ipamd/datastore"
)

// announcement tracks the CNI conflist ipamd writes once it is ready.
type announcement struct {
	mu      sync.Mutex
	written bool
	err     error
	// withdrawn: ipamd is stopping and writes the conflist no more.
	withdrawn bool
}

// readinessLog is the last readiness answer given: its reasons, joined.
type readinessLog struct {
	mu      sync.Mutex
	given   bool
	reasons string
}

// logChange logs r when it is not the last answer given: WARN with every
// reason when ipamd stops being ready (or its reasons change), INFO when
// it is ready again. Kubernetes records only "probe failed" for /readyz,
// and the DaemonSet controller replaces an old ipamd that is not ready
// outside its rollout budget, so the log is where an operator finds why
// a node had no ready ipamd.
func (l *readinessLog) logChange(log *slog.Logger, r datastore.Readiness) {
	reasons := strings.Join(r.Reasons, "; ")
	l.mu.Lock()
	changed := !l.given || reasons != l.reasons
	l.given, l.reasons = true, reasons
	l.mu.Unlock()
	switch {
	case !changed:
	case r.Ready():
		log.Info("ready: an ADD for a new pod gets an address", slog.Uint64("free", r.Free))
	default:
		log.Warn("not ready: an ADD for a new pod is refused", slog.String("why", reasons), slog.Uint64("free", r.Free))
	}
}

// readiness is the one answer to "can ipamd hand out an address to a new
// pod now, and if not, why": the CNI STATUS verb, /readyz and ipamctl all
// ask it. The store judges what Assign would refuse (unproven, fenced, the
// pool waiting for a range, exhausted, closed); this adds what only the
// daemon sees: the CNI socket accepts connections, and the conflist is
// written when cni.confListPath asks for one.
func (d *Daemon) readiness() datastore.Readiness {
	r := d.store.Readiness()
	if e := d.endpoint.Load(); e == nil || !e.Accepting() {
		r.Add("the CNI socket " + d.cfg.Socket + " is not accepting connections")
	}
	if d.cfg.CNI.ConfListPath != "" {
		d.announced.mu.Lock()
		written, err := d.announced.written, d.announced.err
		d.announced.mu.Unlock()
		switch {
		case err != nil:
			r.Add("the CNI conflist could not be written: " + err.Error())
		case !written:
			r.Add("the CNI conflist " + d.cfg.CNI.ConfListPath + " is not written yet")
		}
	}
	d.readinessSeen.logChange(d.log, r)
	return r
}

// ready is readiness as /readyz takes it.
func (d *Daemon) ready() (bool, []string) {
	r := d.readiness()
	return r.Ready(), r.Reasons
}

// announce writes the CNI conflist once the store hands out addresses and
// the socket accepts, and writes it again if it was removed; it is called
// at start and after every reconcile pass. The runtime only sees the
// network while ipamd can serve it, so a node without a ready ipamd stays
// NotReady instead of failing pods.
func (d *Daemon) announce() {
	path := d.cfg.CNI.ConfListPath
	if e := d.endpoint.Load(); path == "" || d.store.Unproven() || d.store.PoolWaiting() != "" || e == nil || !e.Accepting() {
		return
	}
	d.announced.mu.Lock()
	defer d.announced.mu.Unlock()
	if d.announced.withdrawn {
		return
	}
	if d.announced.written {
		if _, err := os.Stat(path); err == nil || !errors.Is(err, fs.ErrNotExist) {
			return
		}
		d.log.Warn("the CNI conflist was removed while ipamd runs; writing it again", slog.String("path", path))
	}
	content, err := d.confList()
	if err == nil {
		// The runtime's config directory may not exist yet on a new node.
		err = os.MkdirAll(filepath.Dir(path), 0o755)
	}
	if err == nil {
		err = cniinstall.WriteConfList(path, content)
	}
	d.announced.written, d.announced.err = err == nil, err
	if err != nil {
		d.log.Error("could not write the CNI conflist: the runtime will not use this network", slog.String("path", path), slog.Any("error", err))
		return
	}
	d.log.Info("CNI conflist written: the runtime may now send ADD", slog.String("path", path))
}

// withdraw removes the conflist ipamd wrote, on a graceful stop, and keeps
// announce from writing it again. The DaemonSet's preStop hook removes the
// conflist before kubelet sends SIGTERM; a reconcile pass ending between the
// two used to write it again ("removed while ipamd runs"), and the conflist
// then outlived ipamd, so the runtime kept sending ADDs to a socket nobody
// served. A file whose content is not ipamd's is left alone: another
// installer owns it. A SIGKILL leaves the conflist, and the restarted ipamd
// serves it again.
func (d *Daemon) withdraw() {
	path := d.cfg.CNI.ConfListPath
	if path == "" {
		return
	}
	d.announced.mu.Lock()
	defer d.announced.mu.Unlock()
	d.announced.withdrawn = true
	ours, err := d.confList()
	if err != nil {
		return
	}
	current, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return
	case err != nil:
		d.log.Error("could not read the CNI conflist to withdraw it: the runtime may still send ADD to a stopped ipamd",
			slog.String("path", path), slog.Any("error", err))
		return
	case !bytes.Equal(current, ours):
		d.log.Warn("the CNI conflist is not the one ipamd wrote; leaving it", slog.String("path", path))
		return
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		d.log.Error("could not withdraw the CNI conflist: the runtime may still send ADD to a stopped ipamd",
			slog.String("path", path), slog.Any("error", err))
		return
	}
	d.announced.written = false
	d.log.Info("CNI conflist withdrawn: ipamd is stopping", slog.String("path", path))
}

// confList is the conflist ipamd announces: the sandboxipam plugin on
// ipamd's own network name and socket, mapping hostPorts through portmap
// unless cni.portMap is off.
func (d *Daemon) confList() ([]byte, error) {
	plugin := map[string]any{"type": "sandboxipam", "ipamdSocket": d.cfg.Socket}
	if d.cfg.PodLinks.HostVethPrefix != hostveth.DefaultPrefix {
		plugin["hostVethPrefix"] = d.cfg.PodLinks.HostVethPrefix
	}
	if pm := portMapSettings(d.cfg.CNI.PortMap); pm != nil {
		plugin["capabilities"] = map[string]bool{"portMappings": true}
		plugin["portMap"] = pm
	}
	b, err := json.MarshalIndent(map[string]any{
		"cniVersion": "1.0.0", "name": d.cfg.Network, "plugins": []any{plugin},
	}, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("render the CNI conflist: %w", err)
	}
	return append(b, '\n'), nil
}

// portMapSettings is the plugin's "portMap" object (cni.PortMap) for
// cni.portMap, nil when it is off. With the portMappings capability on
// sandboxipam's entry the runtime passes a pod's hostPorts in
// runtimeConfig, and the plugin runs the CNI reference portmap plugin for
// them (as flannel and Calico chain it), and only for a pod that has
// some: a pod without hostPorts pays no portmap start. Naming the backend
// keeps portmap from probing iptables (two execs) on every call it gets.
func portMapSettings(backend string) map[string]string {
	switch backend {
	case config.PortMapOff:
		return nil
	case config.PortMapAuto:
		return map[string]string{}
	default:
		return map[string]string{"backend": backend}
	}
}
