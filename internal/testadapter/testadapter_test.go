package testadapter

import (
	"context"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/runtime"
)

func sampleState() State {
	return State{
		RuntimeName:    "cri-o",
		RuntimeVersion: "1.30.0",
		Sandboxes: []runtime.Sandbox{{
			ID:        "5d0b8a2f6c1e4b7a9d3f2e1c0b9a8d7c6e5f4a3b2c1d0e9f8a7b6c5d4e3f2a1b",
			Name:      "db-0",
			Namespace: "data",
			UID:       "11111111-2222-4333-8444-555555555555",
			Attempt:   1,
			State:     runtime.StateNotReady,
			CreatedAt: time.Date(2026, 6, 1, 12, 0, 0, 42, time.UTC),
			NetNS:     "/var/run/netns/cni-db",
			IPs:       []netip.Addr{netip.MustParseAddr("198.19.3.4")},
			Labels:    map[string]string{"app": "db"},
		}},
	}
}

func TestWriteStateThenRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	want := sampleState()
	if err := WriteState(path, want); err != nil {
		t.Fatal(err)
	}
	got, err := ReadState(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ReadState = %+v, want %+v", got, want)
	}
	entries, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("directory holds %d files after WriteState, want only the state file", len(entries))
	}
}

func TestAdapterReportsState(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	if err := WriteState(path, sampleState()); err != nil {
		t.Fatal(err)
	}
	adapter := New(path)
	ctx := context.Background()

	info, err := adapter.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wantInfo := runtime.Info{AdapterName: Name, AdapterVersion: Version, RuntimeName: "cri-o", RuntimeVersion: "1.30.0", Endpoint: "file://" + path}
	if info != wantInfo {
		t.Errorf("Info = %+v, want %+v", info, wantInfo)
	}
	list, err := adapter.ListSandboxes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(list, sampleState().Sandboxes) {
		t.Errorf("ListSandboxes = %+v", list)
	}
	got, err := adapter.GetSandbox(ctx, sampleState().Sandboxes[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, sampleState().Sandboxes[0]) {
		t.Errorf("GetSandbox = %+v", got)
	}
}

func TestAdapterErrors(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	adapter := New(path)
	ctx := context.Background()

	if _, err := adapter.ListSandboxes(ctx); !errors.Is(err, runtime.ErrUnavailable) {
		t.Errorf("ListSandboxes without a state file = %v, want ErrUnavailable", err)
	}
	if err := os.WriteFile(path, []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := adapter.ListSandboxes(ctx); !errors.Is(err, runtime.ErrUnavailable) {
		t.Errorf("ListSandboxes of a corrupt state = %v, want ErrUnavailable", err)
	}

	state := sampleState()
	write := func() {
		t.Helper()
		if err := WriteState(path, state); err != nil {
			t.Fatal(err)
		}
	}
	write()
	if _, err := adapter.GetSandbox(ctx, "gone"); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("GetSandbox(gone) = %v, want ErrNotFound", err)
	}
	if _, err := adapter.GetSandbox(ctx, ""); !errors.Is(err, runtime.ErrInvalidArgument) {
		t.Errorf(`GetSandbox("") = %v, want ErrInvalidArgument`, err)
	}
	state.Unavailable = true
	write()
	if _, err := adapter.Info(ctx); !errors.Is(err, runtime.ErrUnavailable) {
		t.Errorf("Info while unavailable = %v, want ErrUnavailable", err)
	}
	state.Unavailable, state.WrongRuntime = false, true
	write()
	if _, err := adapter.ListSandboxes(ctx); !errors.Is(err, runtime.ErrWrongRuntime) {
		t.Errorf("ListSandboxes of the wrong runtime = %v, want ErrWrongRuntime", err)
	}
	state.WrongRuntime, state.Hang = false, true
	write()
	hungCtx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := adapter.ListSandboxes(hungCtx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("ListSandboxes while hanging = %v, want context.DeadlineExceeded", err)
	}
}

func TestBuildReturnsExecutable(t *testing.T) {
	path := Build(t)
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm()&0o111 == 0 {
		t.Errorf("%s has mode %s, want executable", path, info.Mode())
	}
	if again := Build(t); again != path {
		t.Errorf("second Build = %s, want the same binary %s", again, path)
	}
}
