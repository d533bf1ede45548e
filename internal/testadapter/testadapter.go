// Package testadapter is a runtime adapter for tests: its "runtime" is a
// JSON state file, re-read on every call, so a test changes what the
// adapter reports (or makes it fail or hang) while the plugin runs.
//
// The binary in cmd/testadapter serves it through plugin.Serve; Build
// compiles that binary once per test binary, so that any package's tests
// get a real adapter subprocess.
package testadapter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/sandboxipam/sandboxipam/runtime"
)

// Name and Version are what Info reports as the adapter's name and version.
const (
	Name    = "testadapter"
	Version = "v0.0.0-test"
)

// State is the state file's content. Sandboxes use runtime.Sandbox's
// default JSON encoding: Go field names, State as a number (1 Ready,
// 2 NotReady), CreatedAt in RFC 3339, IPs as strings.
type State struct {
	RuntimeName    string `json:"runtimeName"`
	RuntimeVersion string `json:"runtimeVersion"`
	// Unavailable makes every call fail with runtime.ErrUnavailable.
	Unavailable bool `json:"unavailable,omitempty"`
	// WrongRuntime makes every call fail with runtime.ErrWrongRuntime.
	WrongRuntime bool `json:"wrongRuntime,omitempty"`
	// Hang makes every call block until its context ends, then return the
	// context's error.
	Hang      bool              `json:"hang,omitempty"`
	Sandboxes []runtime.Sandbox `json:"sandboxes"`
}

// Adapter implements runtime.RuntimeAdapter over a state file.
type Adapter struct {
	statePath string
}

var _ runtime.RuntimeAdapter = (*Adapter)(nil)

// New returns an adapter reading statePath on every call. A missing or
// unreadable state file is an unreachable runtime (ErrUnavailable).
func New(statePath string) *Adapter {
	if abs, err := filepath.Abs(statePath); err == nil {
		statePath = abs
	}
	return &Adapter{statePath: statePath}
}

// Info reports Name, Version and the state's runtime name and version; the
// endpoint is the state file as a file:// URI.
func (a *Adapter) Info(ctx context.Context) (runtime.Info, error) {
	state, err := a.load(ctx)
	if err != nil {
		return runtime.Info{}, fmt.Errorf("info: %w", err)
	}
	return runtime.Info{
		AdapterName:    Name,
		AdapterVersion: Version,
		RuntimeName:    state.RuntimeName,
		RuntimeVersion: state.RuntimeVersion,
		Endpoint:       "file://" + a.statePath,
	}, nil
}

// ListSandboxes returns the state's sandboxes, in the file's order.
func (a *Adapter) ListSandboxes(ctx context.Context) ([]runtime.Sandbox, error) {
	state, err := a.load(ctx)
	if err != nil {
		return nil, fmt.Errorf("list sandboxes: %w", err)
	}
	return state.Sandboxes, nil
}

// GetSandbox returns the state's sandbox with this ID.
func (a *Adapter) GetSandbox(ctx context.Context, id string) (runtime.Sandbox, error) {
	if id == "" {
		return runtime.Sandbox{}, fmt.Errorf("get sandbox: empty ID: %w", runtime.ErrInvalidArgument)
	}
	state, err := a.load(ctx)
	if err != nil {
		return runtime.Sandbox{}, fmt.Errorf("get sandbox %s: %w", id, err)
	}
	for _, sandbox := range state.Sandboxes {
		if sandbox.ID == id {
			return sandbox, nil
		}
	}
	return runtime.Sandbox{}, fmt.Errorf("get sandbox %s: %w", id, runtime.ErrNotFound)
}

// load reads the state, then applies its failure modes.
func (a *Adapter) load(ctx context.Context) (State, error) {
	if err := ctx.Err(); err != nil {
		return State{}, err
	}
	state, err := ReadState(a.statePath)
	if err != nil {
		return State{}, fmt.Errorf("%w: %w", runtime.ErrUnavailable, err)
	}
	switch {
	case state.Hang:
		// Tests wait for this line to know a call is in flight.
		slog.DebugContext(ctx, "call hangs until its context ends", "state", a.statePath)
		<-ctx.Done()
		return State{}, fmt.Errorf("runtime hangs (state %s): %w", a.statePath, ctx.Err())
	case state.Unavailable:
		return State{}, fmt.Errorf("runtime marked unavailable in %s: %w", a.statePath, runtime.ErrUnavailable)
	case state.WrongRuntime:
		return State{}, fmt.Errorf("endpoint %s serves runtime %q: %w", a.statePath, state.RuntimeName, runtime.ErrWrongRuntime)
	}
	return state, nil
}

// ReadState reads a state file.
func ReadState(path string) (State, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return State{}, fmt.Errorf("state file %s does not exist", path)
		}
		return State{}, fmt.Errorf("read state: %w", err)
	}
	var state State
	if err := json.Unmarshal(data, &state); err != nil {
		return State{}, fmt.Errorf("decode state %s: %w", path, err)
	}
	return state, nil
}

// WriteState replaces the state file at path atomically (write a temporary
// file in the same directory, then rename), so that a running adapter
// reads either the old state or the new one, never half of it.
func WriteState(path string, s State) error {
	data, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("encode state: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".state-*.tmp")
	if err != nil {
		return fmt.Errorf("write state %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // after a successful rename, a no-op
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write state %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write state %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write state %s: %w", path, err)
	}
	return nil
}
