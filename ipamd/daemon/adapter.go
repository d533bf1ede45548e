package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/sandboxipam/sandboxipam/ipamd/config"
	"github.com/sandboxipam/sandboxipam/ipamd/introspect/schema"
	"github.com/sandboxipam/sandboxipam/runtime"
	"github.com/sandboxipam/sandboxipam/runtime/plugin/host"
)

// adapterHandle is the selected adapter and its supervisor. Selection and
// launch run in the background (see Daemon.Start): until they are done,
// and when no adapter can be used, ipamd serves ADD and DEL without
// reconciling.
type adapterHandle struct {
	cfg  config.Config
	opts Options
	log  *slog.Logger

	mu  sync.Mutex
	sel selection
	// selErr: the selection failed or is not usable yet; refused: ipamd
	// will not reconcile with this selection (auto found several
	// runtimes).
	selErr  error
	refused error
	sup     *host.Supervisor
}

func newAdapterHandle(cfg config.Config, opts Options, log *slog.Logger) *adapterHandle {
	return &adapterHandle{cfg: cfg, opts: opts, log: log}
}

// start selects the adapter and launches it under supervision, and
// returns the supervisor to reconcile with, or nil when there is none.
// A failed launch is logged loudly and never stops ipamd: the supervisor
// keeps relaunching in the background.
//
// With runtime.adapter auto and no runtime socket answering yet (ipamd
// started before containerd, a common boot order outside Kubernetes), it
// probes again with the supervision backoff until one answers or ctx
// ends, calling waiting with what was tried each time, so the store's
// refusals and /readyz say what ipamd waits for.
func (h *adapterHandle) start(ctx context.Context, waiting func(why string)) runtime.RuntimeAdapter {
	sel, selErr := h.selectWhenFound(ctx, waiting)
	h.mu.Lock()
	h.sel, h.selErr = sel, selErr
	h.mu.Unlock()
	if sel.Binary == "" {
		h.log.Error("NO RUNTIME ADAPTER: reconciliation is off; ADD and DEL still work, but IPs of pods deleted without a DEL are not reclaimed",
			slog.Any("error", selErr))
		return nil
	}
	if len(sel.AlsoFound) > 0 && h.cfg.Runtime.Adapter == config.AdapterAuto {
		refused := fmt.Errorf("runtime.adapter is auto and several container runtimes answer on this node (%s): auto cannot tell which one kubelet uses, and the wrong one would list none of this node's pods; set runtime.adapter",
			strings.Join(append([]string{sel.Endpoint}, sel.AlsoFound...), ", "))
		h.mu.Lock()
		h.refused = refused
		h.mu.Unlock()
		h.log.Error("RECONCILIATION REFUSED: "+refused.Error(), slog.String("first", sel.Endpoint), slog.Any("also_found", sel.AlsoFound))
		return nil
	}
	if selErr != nil {
		h.log.Error("runtime adapter binary is not usable yet; launching anyway so the supervisor picks it up once it appears",
			slog.String("adapter", sel.Adapter), slog.String("binary", sel.Binary), slog.Any("error", selErr))
	}
	h.log.Info("runtime adapter selected", slog.String("adapter", sel.Adapter), slog.String("binary", sel.Binary),
		slog.Any("args", sel.Args), slog.String("reason", sel.Reason))
	sup := host.NewSupervisor(host.SupervisorConfig{
		Plugin: host.Config{
			Path: sel.Binary, Args: sel.Args, SHA256: h.cfg.Runtime.SHA256,
			Logger:          h.log.With("component", "adapter"),
			DisableAutoMTLS: !h.cfg.Runtime.AutoMTLS, StartTimeout: h.cfg.Advanced.Adapter.StartTimeout,
		},
		Supervision: h.cfg.Advanced.Adapter.Supervision,
	})
	h.mu.Lock()
	h.sup = sup
	h.mu.Unlock()
	if err := sup.Start(ctx); err != nil {
		h.log.Error("RUNTIME ADAPTER FAILED TO START: ipamd keeps serving ADD and DEL and relaunches it in the background; no reconciliation until it runs",
			slog.String("binary", sel.Binary), slog.Any("error", err))
		return sup
	}
	info := sup.Health().Info
	h.log.Info("runtime adapter running", slog.String("adapter", info.AdapterName), slog.String("runtime", info.RuntimeName),
		slog.String("runtime_version", info.RuntimeVersion), slog.String("endpoint", info.Endpoint))
	return sup
}

// selectWhenFound is selectAdapter, probing again while auto finds no
// runtime socket: with the supervision backoff (advanced.adapter's
// minBackoff doubling to maxBackoff), until one answers or ctx ends.
func (h *adapterHandle) selectWhenFound(ctx context.Context, waiting func(why string)) (selection, error) {
	wait := h.cfg.Advanced.Adapter.MinBackoff
	for attempt := 1; ; attempt++ {
		sel, err := selectAdapter(ctx, h.cfg.Runtime, h.opts.Executable, h.opts.Probe)
		if !errors.Is(err, ErrNoRuntime) {
			if attempt > 1 {
				h.log.Info("a container runtime answers now", slog.Int("attempt", attempt), slog.String("reason", sel.Reason))
				waiting("the first listing of the " + sel.Adapter + " adapter (" + sel.Reason + ")")
			}
			return sel, err
		}
		h.mu.Lock()
		h.sel, h.selErr = sel, err
		h.mu.Unlock()
		why := fmt.Sprintf("a container runtime to answer: %v; probing again in %s (attempt %d)", err, wait, attempt)
		waiting(why)
		h.log.Error("NO RUNTIME ADAPTER YET: reconciliation is off until a runtime answers; ADD and DEL still work", slog.Any("error", err),
			slog.Duration("next_probe_in", wait), slog.Int("attempt", attempt))
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return sel, err
		case <-t.C:
		}
		wait = min(2*wait, h.cfg.Advanced.Adapter.MaxBackoff)
	}
}

// supervisor returns the supervisor, nil before launch or without one.
func (h *adapterHandle) supervisor() *host.Supervisor {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.sup
}

// notReconciling says why ipamd cannot reconcile (no adapter, or auto
// refused), or "" when it can or has not decided yet.
func (h *adapterHandle) notReconciling() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case h.refused != nil:
		return h.refused.Error()
	case h.sel.Binary == "" && h.selErr != nil:
		return "no runtime adapter: " + h.selErr.Error()
	}
	return ""
}

// restarts feeds ipamd_adapter_restarts_total.
func (h *adapterHandle) restarts() int {
	sup := h.supervisor()
	if sup == nil {
		return 0
	}
	return sup.Health().Restarts
}

// view renders /v1/adapter, less the reconcile fields.
func (h *adapterHandle) view() schema.Adapter {
	h.mu.Lock()
	sel, selErr, refused, sup := h.sel, h.selErr, h.refused, h.sup
	h.mu.Unlock()
	v := schema.Adapter{Name: sel.Adapter, Binary: sel.Binary, Args: sel.Args, Reason: sel.Reason, AlsoFound: sel.AlsoFound}
	if v.Args == nil {
		v.Args = []string{}
	}
	switch {
	case refused != nil:
		v.Error = refused.Error()
	case selErr != nil:
		v.Error = selErr.Error()
	}
	if sup == nil {
		v.Health = schema.Health{State: "none"}
		return v
	}
	hl := sup.Health()
	v.Health = schema.Health{State: hl.State.String(), Healthy: hl.State == host.HealthHealthy, PID: hl.PID, Restarts: hl.Restarts,
		LastError: hl.LastError, LastChange: hl.LastChange}
	v.Runtime = schema.RuntimeInfo{AdapterName: hl.Info.AdapterName, AdapterVersion: hl.Info.AdapterVersion,
		RuntimeName: hl.Info.RuntimeName, RuntimeVersion: hl.Info.RuntimeVersion, Endpoint: hl.Info.Endpoint}
	return v
}

func (h *adapterHandle) close() {
	if sup := h.supervisor(); sup != nil {
		_ = sup.Close()
	}
}
