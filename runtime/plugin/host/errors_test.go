package host

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/internal/testadapter"
	"github.com/sandboxipam/sandboxipam/runtime"
	"github.com/sandboxipam/sandboxipam/runtime/plugin/internal/shared"
)

func TestTypedErrorsCrossTheBoundary(t *testing.T) {
	statePath := writeState(t, fixtureState())
	client := launch(t, pluginConfig(t, statePath))
	ctx := testContext(t)

	t.Run("NotFound", func(t *testing.T) {
		_, err := client.GetSandbox(ctx, "gone")
		assertRemoteError(t, err, runtime.ErrNotFound, "get sandbox gone: sandbox not found")
	})
	t.Run("InvalidArgument", func(t *testing.T) {
		_, err := client.GetSandbox(ctx, "")
		assertRemoteError(t, err, runtime.ErrInvalidArgument, "get sandbox: empty ID: invalid argument")
	})
	t.Run("Unavailable", func(t *testing.T) {
		updateState(t, statePath, func(s *testadapter.State) { s.Unavailable = true })
		defer updateState(t, statePath, func(s *testadapter.State) { s.Unavailable = false })
		_, err := client.ListSandboxes(ctx)
		assertRemoteError(t, err, runtime.ErrUnavailable,
			"list sandboxes: runtime marked unavailable in "+statePath+": runtime unavailable")
		if errors.Is(err, ErrPluginCrashed) {
			t.Errorf("an adapter's ErrUnavailable reads as a crash: %v", err)
		}
	})
	t.Run("WrongRuntime", func(t *testing.T) {
		updateState(t, statePath, func(s *testadapter.State) { s.WrongRuntime = true })
		defer updateState(t, statePath, func(s *testadapter.State) { s.WrongRuntime = false })
		_, err := client.Info(ctx)
		assertRemoteError(t, err, runtime.ErrWrongRuntime,
			`info: endpoint `+statePath+` serves runtime "containerd": endpoint serves another runtime`)
	})
	t.Run("DeadlineExceeded", func(t *testing.T) {
		updateState(t, statePath, func(s *testadapter.State) { s.Hang = true })
		defer updateState(t, statePath, func(s *testadapter.State) { s.Hang = false })
		callCtx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer cancel()
		_, err := client.ListSandboxes(callCtx)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("ListSandboxes on a hung plugin = %v, want context.DeadlineExceeded", err)
		}
	})
	t.Run("Canceled", func(t *testing.T) {
		updateState(t, statePath, func(s *testadapter.State) { s.Hang = true })
		defer updateState(t, statePath, func(s *testadapter.State) { s.Hang = false })
		callCtx, cancel := context.WithCancel(ctx)
		cancel()
		_, err := client.ListSandboxes(callCtx)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("ListSandboxes with a canceled context = %v, want context.Canceled", err)
		}
	})
	// The plugin is still usable after all of the above.
	if _, err := client.ListSandboxes(ctx); err != nil {
		t.Fatalf("ListSandboxes after the error cases: %v", err)
	}
}

func assertRemoteError(t *testing.T, err, sentinel error, remoteMsg string) {
	t.Helper()
	if !errors.Is(err, sentinel) {
		t.Fatalf("error %v does not match %v", err, sentinel)
	}
	var remote *shared.RemoteError
	if !errors.As(err, &remote) {
		t.Fatalf("error %v is not an adapter's error", err)
	}
	if remote.Error() != remoteMsg {
		t.Errorf("adapter's message = %q, want %q", remote.Error(), remoteMsg)
	}
	if !strings.HasSuffix(err.Error(), ": "+remoteMsg) {
		t.Errorf("error %q does not end with the adapter's message", err)
	}
}

// An error that wraps several sentinels keeps all of them.
func TestErrorTranslationKeepsEverySentinel(t *testing.T) {
	adapterErr := fmt.Errorf("dial runtime: %w: %w", runtime.ErrUnavailable, context.DeadlineExceeded)
	client := &Client{path: "/adapters/x", proc: &process{exited: make(chan struct{})}}
	err := client.callError(context.Background(), "list sandboxes", shared.ToStatus(adapterErr))
	for _, sentinel := range []error{runtime.ErrUnavailable, context.DeadlineExceeded} {
		if !errors.Is(err, sentinel) {
			t.Errorf("error %v does not match %v", err, sentinel)
		}
	}
	for _, sentinel := range []error{runtime.ErrNotFound, runtime.ErrWrongRuntime, runtime.ErrInvalidArgument, context.Canceled, ErrPluginCrashed} {
		if errors.Is(err, sentinel) {
			t.Errorf("error %v matches %v", err, sentinel)
		}
	}
	want := "adapter /adapters/x: list sandboxes: dial runtime: runtime unavailable: context deadline exceeded"
	if err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}
}

func TestErrorWithoutSentinelKeepsMessage(t *testing.T) {
	client := &Client{path: "/adapters/x", proc: &process{exited: make(chan struct{})}}
	err := client.callError(context.Background(), "info", shared.ToStatus(errors.New("boom")))
	if want := "adapter /adapters/x: info: boom"; err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}
	for _, sentinel := range []error{runtime.ErrNotFound, runtime.ErrUnavailable, ErrPluginCrashed} {
		if errors.Is(err, sentinel) {
			t.Errorf("error %v matches %v", err, sentinel)
		}
	}
}
