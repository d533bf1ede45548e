package daemon

import (
	"context"
	"log/slog"

	"github.com/sandboxipam/sandboxipam/ipamd/config"
	"github.com/sandboxipam/sandboxipam/ipamd/introspect/api"
	"github.com/sandboxipam/sandboxipam/runtime"
	"github.com/sandboxipam/sandboxipam/runtime/plugin"
)

// adapterHandle is the selected adapter and its supervisor; runtime is nil
// when no adapter could be selected (auto found no runtime), and then
// ipamd serves without reconciling.
type adapterHandle struct {
	sel     config.Selection
	selErr  error
	sup     *plugin.Supervisor
	runtime runtime.RuntimeAdapter
}

// startAdapter selects the adapter and launches it under supervision. A
// failure is logged loudly and never stops ipamd: the supervisor keeps
// relaunching in the background.
func startAdapter(ctx context.Context, cfg config.Config, opts Options, log *slog.Logger) *adapterHandle {
	h := &adapterHandle{}
	h.sel, h.selErr = cfg.Runtime.Select(ctx, opts.Executable, opts.Probe)
	if h.sel.Binary == "" {
		log.Error("NO RUNTIME ADAPTER: reconciliation is off; ADD and DEL still work, but IPs of pods deleted without a DEL are not reclaimed",
			slog.Any("error", h.selErr))
		return h
	}
	if h.selErr != nil {
		log.Error("runtime adapter binary is not usable yet; launching anyway so the supervisor picks it up once it appears",
			slog.String("adapter", h.sel.Adapter), slog.String("binary", h.sel.Binary), slog.Any("error", h.selErr))
	}
	if len(h.sel.AlsoFound) > 0 {
		log.Warn("more than one container runtime answers: auto picked the first in crictl's order; set runtime.adapter to the one kubelet uses",
			slog.String("chosen", h.sel.Endpoint), slog.Any("also_found", h.sel.AlsoFound))
	}
	log.Info("runtime adapter selected", slog.String("adapter", h.sel.Adapter), slog.String("binary", h.sel.Binary),
		slog.Any("args", h.sel.Args), slog.String("reason", h.sel.Reason))
	h.sup = plugin.NewSupervisor(plugin.SupervisorConfig{
		Plugin: plugin.Config{
			Path: h.sel.Binary, Args: h.sel.Args, SHA256: cfg.Runtime.SHA256,
			Logger:          log.With("component", "adapter"),
			DisableAutoMTLS: !cfg.Runtime.AutoMTLS, StartTimeout: cfg.Runtime.StartTimeout,
		},
		MinBackoff: cfg.Runtime.MinBackoff, MaxBackoff: cfg.Runtime.MaxBackoff, HealthInterval: cfg.Runtime.HealthInterval,
	})
	h.runtime = h.sup
	if err := h.sup.Start(ctx); err != nil {
		log.Error("RUNTIME ADAPTER FAILED TO START: ipamd keeps serving ADD and DEL and relaunches it in the background; no reconciliation until it runs",
			slog.String("binary", h.sel.Binary), slog.Any("error", err))
		return h
	}
	info := h.sup.Health().Info
	log.Info("runtime adapter running", slog.String("adapter", info.AdapterName), slog.String("runtime", info.RuntimeName),
		slog.String("runtime_version", info.RuntimeVersion), slog.String("endpoint", info.Endpoint))
	return h
}

// healthMetric feeds the adapter gauges.
func (h *adapterHandle) healthMetric() (healthy bool, restarts int) {
	if h.sup == nil {
		return false, 0
	}
	hl := h.sup.Health()
	return hl.Healthy, hl.Restarts
}

// view renders /v1/adapter, less the reconcile fields.
func (h *adapterHandle) view() api.Adapter {
	v := api.Adapter{Name: h.sel.Adapter, Binary: h.sel.Binary, Args: h.sel.Args, Reason: h.sel.Reason, AlsoFound: h.sel.AlsoFound}
	if v.Args == nil {
		v.Args = []string{}
	}
	if h.selErr != nil {
		v.Error = h.selErr.Error()
	}
	if h.sup == nil {
		v.Health = api.Health{State: "none"}
		return v
	}
	hl := h.sup.Health()
	v.Health = api.Health{State: hl.State, Healthy: hl.Healthy, PID: hl.PID, Restarts: hl.Restarts,
		LastError: hl.LastError, LastChange: hl.LastChange}
	v.Runtime = api.RuntimeInfo{AdapterName: hl.Info.AdapterName, AdapterVersion: hl.Info.AdapterVersion,
		RuntimeName: hl.Info.RuntimeName, RuntimeVersion: hl.Info.RuntimeVersion, Endpoint: hl.Info.Endpoint}
	return v
}

func (h *adapterHandle) close() {
	if h.sup != nil {
		_ = h.sup.Close()
	}
}
