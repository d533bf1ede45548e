package host

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sandboxipam/sandboxipam/runtime"
	"github.com/sandboxipam/sandboxipam/runtime/plugin/internal/shared"
	"github.com/sandboxipam/sandboxipam/runtime/plugin/pluginconf"
	adapterpb "github.com/sandboxipam/sandboxipam/runtime/plugin/proto"
)

// forceKillAfter is how long Close lets the plugin shut down on request
// before it sends SIGKILL.
const forceKillAfter = 3 * time.Second

// Config says how to launch one adapter plugin.
type Config struct {
	// Path is the adapter binary: a path, or a name looked up in PATH.
	Path string
	// Args are passed to the binary, e.g.
	// "--endpoint=unix:///run/containerd/containerd.sock".
	Args []string
	// Env is extra environment, KEY=VALUE, on top of the host's.
	Env []string
	// SHA256 optionally pins the binary's checksum (hex). A mismatch
	// refuses to start it (ErrChecksumMismatch), naming the file and both
	// checksums.
	SHA256 string
	// Logger receives the plugin's logs and go-plugin's own. Default
	// slog.Default().
	Logger *slog.Logger
	// DisableAutoMTLS turns off go-plugin's automatic mutual TLS, which is
	// on by default: each launch then saves 25-35 ms (the key generation),
	// and any local process that can reach the plugin's socket may call
	// it.
	DisableAutoMTLS bool
	// StartTimeout bounds a launch, handshake and first ping included.
	// Default pluginconf.DefaultStartTimeout (10s).
	StartTimeout time.Duration
}

func (cfg Config) withDefaults() Config {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.StartTimeout <= 0 {
		cfg.StartTimeout = pluginconf.DefaultStartTimeout
	}
	return cfg
}

// Client is the host side of one running adapter plugin. It implements
// runtime.RuntimeAdapter; each call carries the caller's context, deadline
// included, across the plugin boundary. It is safe for concurrent use.
type Client struct {
	path   string
	plugin *goplugin.Client
	proc   *process
	rpc    adapterpb.RuntimeAdapterClient
	// closedAlive is set when Close ends a live plugin: calls cut short
	// then were stopped by the host, not by a crash.
	closedAlive atomic.Bool
	closed      atomic.Bool
	close       sync.Once
}

var _ runtime.RuntimeAdapter = (*Client)(nil)

// Launch starts the adapter binary cfg.Path, completes the go-plugin
// handshake and pings the plugin once, within cfg.StartTimeout. It fails
// with ErrBinaryNotFound, ErrNotExecutable, ErrChecksumMismatch,
// ErrNotPlugin (also when the start timeout passes without a handshake) or
// ErrIncompatibleVersion, or ctx's error. The plugin lives until Close (or
// until the host dies: it never outlives the host); ctx bounds the launch
// only.
func Launch(ctx context.Context, cfg Config) (*Client, error) {
	cfg = cfg.withDefaults()
	path, err := resolveBinary(cfg.Path)
	if err != nil {
		return nil, err
	}
	if err := verifyChecksum(path, cfg.SHA256); err != nil {
		return nil, err
	}
	callerCtx := ctx
	ctx, cancel := context.WithTimeout(ctx, cfg.StartTimeout)
	defer cancel()

	launch := &launchState{}
	pluginCfg, err := clientConfig(cfg, path, newSlogBridge(cfg.Logger, "", nil), launch)
	if err != nil {
		return nil, fmt.Errorf("launch adapter %s: %w", path, err)
	}
	pc := goplugin.NewClient(pluginCfg)
	proc, err := startPlugin(ctx, pc, launch)
	if err != nil {
		switch {
		case callerCtx.Err() != nil:
			err = fmt.Errorf("launch adapter %s: %w", path, callerCtx.Err())
		case ctx.Err() != nil:
			err = fmt.Errorf("launch adapter %s: %w: no handshake within the start timeout (%s): %w",
				path, ErrNotPlugin, cfg.StartTimeout, ctx.Err())
		default:
			err = startError(path, proc, err)
		}
		pc.Kill() // reaps the process and removes go-plugin's socket directory
		return nil, err
	}
	rpc, err := dispense(pc)
	if err != nil {
		pc.Kill()
		return nil, fmt.Errorf("launch adapter %s: %w", path, err)
	}
	c := &Client{path: path, plugin: pc, proc: proc, rpc: rpc}
	if err := c.Ping(ctx); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("launch adapter %s: first ping: %w", path, err)
	}
	return c, nil
}

// startPlugin runs go-plugin's start, which has no context of its own:
// when ctx ends first, the process is killed (or never started) and the
// start fails.
func startPlugin(ctx context.Context, pc *goplugin.Client, launch *launchState) (*process, error) {
	if err := ctx.Err(); err != nil {
		return nil, err // AfterFunc would abort only once the process runs
	}
	stop := context.AfterFunc(ctx, launch.abort)
	defer stop()
	_, err := pc.Start()
	return launch.process(), err
}

// launchState hands the process go-plugin starts over to the launch, and
// lets the launch's context abort it.
type launchState struct {
	mu      sync.Mutex
	proc    *process
	aborted bool
}

func (l *launchState) setProcess(proc *process) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.proc = proc
	if l.aborted {
		_ = proc.Kill(context.Background())
	}
}

func (l *launchState) process() *process {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.proc
}

func (l *launchState) abort() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.aborted = true
	if l.proc != nil {
		_ = l.proc.Kill(context.Background())
	}
}

func dispense(pc *goplugin.Client) (adapterpb.RuntimeAdapterClient, error) {
	protocol, err := pc.Client()
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	raw, err := protocol.Dispense(shared.PluginName)
	if err != nil {
		return nil, fmt.Errorf("dispense %s: %w", shared.PluginName, err)
	}
	rpc, ok := raw.(adapterpb.RuntimeAdapterClient)
	if !ok {
		return nil, fmt.Errorf("dispense %s: got %T", shared.PluginName, raw)
	}
	return rpc, nil
}

// Info names the adapter and the runtime behind it.
func (c *Client) Info(ctx context.Context) (runtime.Info, error) {
	resp, err := c.rpc.Info(ctx, &adapterpb.InfoRequest{})
	if err != nil {
		return runtime.Info{}, c.callError(ctx, "info", err)
	}
	return shared.FromProtoInfo(resp), nil
}

// ListSandboxes lists every sandbox the runtime still has.
func (c *Client) ListSandboxes(ctx context.Context) ([]runtime.Sandbox, error) {
	resp, err := c.rpc.ListSandboxes(ctx, &adapterpb.ListSandboxesRequest{})
	if err != nil {
		return nil, c.callError(ctx, "list sandboxes", err)
	}
	sandboxes, err := shared.FromProtoSandboxes(resp.GetSandboxes())
	if err != nil {
		return nil, fmt.Errorf("adapter %s: list sandboxes: %w", c.path, err)
	}
	return sandboxes, nil
}

// GetSandbox returns one sandbox, or an error wrapping runtime.ErrNotFound.
func (c *Client) GetSandbox(ctx context.Context, id string) (runtime.Sandbox, error) {
	resp, err := c.rpc.GetSandbox(ctx, &adapterpb.GetSandboxRequest{Id: id})
	if err != nil {
		return runtime.Sandbox{}, c.callError(ctx, "get sandbox "+id, err)
	}
	sandbox, err := shared.FromProtoSandbox(resp.GetSandbox())
	if err != nil {
		return runtime.Sandbox{}, fmt.Errorf("adapter %s: get sandbox %s: %w", c.path, id, err)
	}
	return sandbox, nil
}

// Ping checks that the plugin process is alive and serving. It does not
// reach the runtime behind the adapter.
func (c *Client) Ping(ctx context.Context) error {
	if _, err := c.rpc.Ping(ctx, &adapterpb.PingRequest{}); err != nil {
		return c.callError(ctx, "ping", err)
	}
	return nil
}

// Close asks the plugin to stop, kills it if it has not within a few
// seconds, and returns once the process is reaped and its logs are
// drained. Calls after Close fail with runtime.ErrUnavailable.
func (c *Client) Close() error {
	c.close.Do(func() {
		c.closedAlive.Store(!c.proc.hasExited())
		c.closed.Store(true)
		killed := make(chan struct{})
		go func() {
			c.plugin.Kill()
			close(killed)
		}()
		timer := time.NewTimer(forceKillAfter)
		defer timer.Stop()
		select {
		case <-killed:
		case <-timer.C:
			_ = c.proc.Kill(context.Background())
			<-killed
		}
	})
	return nil
}

// Exited reports whether the plugin process has ended.
func (c *Client) Exited() bool { return c.proc.hasExited() }

// PID is the plugin process's ID.
func (c *Client) PID() int { return c.proc.PID() }

// exited is closed once the plugin process has ended.
func (c *Client) exited() <-chan struct{} { return c.proc.exited }

// callError is the host side of the error edge. An adapter's error comes
// back with its message and its sentinels; a broken connection becomes
// ErrPluginCrashed (and runtime.ErrUnavailable); the caller's own deadline
// or cancellation stays context.DeadlineExceeded or context.Canceled.
func (c *Client) callError(ctx context.Context, op string, err error) error {
	st, ok := status.FromError(err)
	if !ok {
		return fmt.Errorf("adapter %s: %s: %w", c.path, op, err)
	}
	if remote, fromAdapter := shared.AdapterError(st); fromAdapter {
		return fmt.Errorf("adapter %s: %s: %w", c.path, op, remote)
	}
	if ctxErr := ctx.Err(); ctxErr != nil && (st.Code() == codes.DeadlineExceeded || st.Code() == codes.Canceled) {
		return fmt.Errorf("adapter %s: %s: %w", c.path, op, ctxErr)
	}
	if c.closed.Load() && c.closedAlive.Load() {
		return fmt.Errorf("adapter %s: %s: plugin client closed: %w", c.path, op, runtime.ErrUnavailable)
	}
	if st.Code() == codes.Unavailable || c.Exited() {
		return fmt.Errorf("adapter %s: %s: %w: %w: %s", c.path, op, ErrPluginCrashed, runtime.ErrUnavailable, c.crashDetail(st))
	}
	// A status without our detail, from an adapter written in another
	// language: map it by its code.
	if remote, known := shared.CodeError(st); known {
		return fmt.Errorf("adapter %s: %s: %w", c.path, op, remote)
	}
	return fmt.Errorf("adapter %s: %s: %s: %s", c.path, op, st.Code(), st.Message())
}

func (c *Client) crashDetail(st *status.Status) string {
	if c.Exited() {
		return fmt.Sprintf("plugin process %d ended (%s)", c.PID(), c.proc.exitStatus())
	}
	return fmt.Sprintf("connection to plugin process %d lost: %s", c.PID(), st.Message())
}

// isCrash reports whether err says the plugin process is gone.
func isCrash(err error) bool { return errors.Is(err, ErrPluginCrashed) }
