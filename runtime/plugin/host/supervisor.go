package host

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/sandboxipam/sandboxipam/runtime"
	"github.com/sandboxipam/sandboxipam/runtime/plugin/pluginconf"
)

// HealthState is the state of a supervised plugin. Its value is the word
// ipamd's introspection API and logs show.
type HealthState string

// Health states of a supervised plugin.
const (
	// HealthStarting: a launch is in progress (or Start was not called).
	HealthStarting HealthState = "starting"
	// HealthHealthy: the plugin runs and answered its last health check.
	HealthHealthy HealthState = "healthy"
	// HealthUnhealthy: the plugin is down; the supervisor is waiting to
	// relaunch it.
	HealthUnhealthy HealthState = "unhealthy"
	// HealthStopped: Close was called.
	HealthStopped HealthState = "stopped"
)

// String returns the state's word.
func (s HealthState) String() string { return string(s) }

// SupervisorConfig says how to launch and watch one adapter plugin.
type SupervisorConfig struct {
	Plugin Config
	// Supervision tunes relaunches and health checks; zero fields take
	// their defaults (pluginconf.DefaultSupervision).
	pluginconf.Supervision
}

// Health is a snapshot of a supervised plugin's state.
type Health struct {
	State HealthState
	PID   int // 0 while no plugin process runs
	// Restarts counts successful launches after the first successful one:
	// how often the plugin was brought back after it went down.
	Restarts   int
	LastError  string
	LastChange time.Time
	// Info is from the last successful Info call.
	Info runtime.Info
}

// Supervisor keeps one adapter plugin running: it relaunches the plugin
// with capped exponential backoff when the process exits or a health check
// fails. It implements runtime.RuntimeAdapter: while the plugin is down,
// calls fail at once with an error wrapping runtime.ErrUnavailable, and no
// call waits longer than its context allows.
type Supervisor struct {
	cfg     SupervisorConfig
	logger  *slog.Logger
	crashed chan struct{} // a call saw the plugin crash; capacity 1

	mu       sync.Mutex
	client   *Client
	health   Health
	launched bool // a launch has succeeded once
	started  bool
	stopped  bool
	cancel   context.CancelFunc
	done     chan struct{} // closed when the supervising goroutine ends
}

var _ runtime.RuntimeAdapter = (*Supervisor)(nil)

// NewSupervisor returns a supervisor; Start launches the plugin.
func NewSupervisor(cfg SupervisorConfig) *Supervisor {
	cfg.Supervision = cfg.Supervision.WithDefaults()
	cfg.Plugin = cfg.Plugin.withDefaults()
	return &Supervisor{
		cfg:     cfg,
		logger:  cfg.Plugin.Logger.With("adapter", cfg.Plugin.Path),
		crashed: make(chan struct{}, 1),
		health:  Health{State: HealthStarting, LastChange: time.Now()},
		done:    make(chan struct{}),
	}
}

// Start launches the plugin and returns once it answers or the launch
// failed. On failure it returns the launch's error and keeps relaunching
// in the background: the host runs on without the adapter meanwhile. ctx
// bounds this first launch only; supervision lasts until Close.
func (s *Supervisor) Start(ctx context.Context) error {
	s.mu.Lock()
	if s.started || s.stopped {
		s.mu.Unlock()
		return errors.New("supervisor already started or closed")
	}
	s.started = true
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s.cancel = cancel
	s.mu.Unlock()

	client, err := s.launch(ctx)
	go s.supervise(runCtx, client)
	return err
}

// Close stops supervising and closes the plugin, waiting until its process
// is gone.
func (s *Supervisor) Close() error {
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return nil
	}
	s.stopped = true
	cancel, started := s.cancel, s.started
	s.mu.Unlock()

	if started {
		cancel()
		<-s.done
	}
	s.mu.Lock()
	client := s.client
	s.client = nil
	s.setHealthLocked(HealthStopped, 0, "")
	s.mu.Unlock()
	if client != nil {
		return client.Close()
	}
	return nil
}

// Health returns the plugin's current state.
func (s *Supervisor) Health() Health {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.health
}

// Info names the adapter and runtime, through the current plugin.
func (s *Supervisor) Info(ctx context.Context) (runtime.Info, error) {
	client, err := s.current()
	if err != nil {
		return runtime.Info{}, err
	}
	info, err := client.Info(ctx)
	s.observe(err)
	if err == nil {
		s.setInfo(info)
	}
	return info, err
}

// ListSandboxes lists sandboxes through the current plugin.
func (s *Supervisor) ListSandboxes(ctx context.Context) ([]runtime.Sandbox, error) {
	client, err := s.current()
	if err != nil {
		return nil, err
	}
	sandboxes, err := client.ListSandboxes(ctx)
	s.observe(err)
	return sandboxes, err
}

// GetSandbox gets one sandbox through the current plugin.
func (s *Supervisor) GetSandbox(ctx context.Context, id string) (runtime.Sandbox, error) {
	client, err := s.current()
	if err != nil {
		return runtime.Sandbox{}, err
	}
	sandbox, err := client.GetSandbox(ctx, id)
	s.observe(err)
	return sandbox, err
}

// current is the running plugin, or an ErrUnavailable error at once.
func (s *Supervisor) current() (*Client, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.client != nil {
		return s.client, nil
	}
	detail := ""
	if s.health.LastError != "" {
		detail = " (last error: " + s.health.LastError + ")"
	}
	return nil, fmt.Errorf("adapter %s is %s%s: %w", s.cfg.Plugin.Path, s.health.State, detail, runtime.ErrUnavailable)
}

// observe wakes the supervising goroutine when a call saw the plugin crash,
// rather than wait for the next health check.
func (s *Supervisor) observe(err error) {
	if isCrash(err) {
		select {
		case s.crashed <- struct{}{}:
		default:
		}
	}
}
