package host

import (
	"reflect"
	"testing"

	"github.com/sandboxipam/sandboxipam/internal/testadapter"
	"github.com/sandboxipam/sandboxipam/runtime"
)

func TestRoundTripEveryCall(t *testing.T) {
	for _, mtls := range []bool{true, false} {
		name := map[bool]string{true: "automtls", false: "plaintext"}[mtls]
		t.Run(name, func(t *testing.T) {
			statePath := writeState(t, fixtureState())
			cfg := pluginConfig(t, statePath)
			cfg.DisableAutoMTLS = !mtls
			client := launch(t, cfg)
			ctx := testContext(t)

			if err := client.Ping(ctx); err != nil {
				t.Fatalf("Ping: %v", err)
			}
			info, err := client.Info(ctx)
			if err != nil {
				t.Fatalf("Info: %v", err)
			}
			wantInfo := runtime.Info{
				AdapterName:    testadapter.Name,
				AdapterVersion: testadapter.Version,
				RuntimeName:    "containerd",
				RuntimeVersion: "1.6.20",
				Endpoint:       "file://" + statePath,
			}
			if info != wantInfo {
				t.Errorf("Info = %+v, want %+v", info, wantInfo)
			}

			sandboxes, err := client.ListSandboxes(ctx)
			if err != nil {
				t.Fatalf("ListSandboxes: %v", err)
			}
			if want := fixtureSandboxes(); !reflect.DeepEqual(sandboxes, want) {
				t.Errorf("ListSandboxes =\n%+v\nwant\n%+v", sandboxes, want)
			}
			for _, want := range fixtureSandboxes() {
				got, err := client.GetSandbox(ctx, want.ID)
				if err != nil {
					t.Fatalf("GetSandbox(%s): %v", want.ID, err)
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("GetSandbox(%s) =\n%+v\nwant\n%+v", want.ID, got, want)
				}
			}
		})
	}
}

func TestStateChangesReachRunningPlugin(t *testing.T) {
	statePath := writeState(t, fixtureState())
	client := launch(t, pluginConfig(t, statePath))
	ctx := testContext(t)

	updateState(t, statePath, func(s *testadapter.State) { s.Sandboxes = s.Sandboxes[1:] })
	sandboxes, err := client.ListSandboxes(ctx)
	if err != nil {
		t.Fatalf("ListSandboxes: %v", err)
	}
	if want := fixtureSandboxes()[1:]; !reflect.DeepEqual(sandboxes, want) {
		t.Errorf("ListSandboxes = %+v, want %+v", sandboxes, want)
	}

	updateState(t, statePath, func(s *testadapter.State) { s.Sandboxes = nil })
	sandboxes, err = client.ListSandboxes(ctx)
	if err != nil {
		t.Fatalf("ListSandboxes: %v", err)
	}
	if sandboxes == nil || len(sandboxes) != 0 {
		t.Errorf("ListSandboxes of no pods = %#v, want an empty, non-nil list", sandboxes)
	}
}
