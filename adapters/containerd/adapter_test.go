package containerd_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/adapters/containerd"
	"github.com/sandboxipam/sandboxipam/adapters/internal/adaptertest"
	"github.com/sandboxipam/sandboxipam/adapters/internal/critest"
	"github.com/sandboxipam/sandboxipam/conformance/fixture"
	"github.com/sandboxipam/sandboxipam/internal/testenv"
	"github.com/sandboxipam/sandboxipam/internal/testsupport"
	"github.com/sandboxipam/sandboxipam/runtime"
)

var (
	ctrd = testenv.SharedContainerd(testenv.ContainerdOptions{})
	// A real CRI-O: a CRI-only runtime the native mode must refuse.
	realCRIO = testenv.SharedCRIO(testenv.CRIOOptions{})
)

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, ctrd, noCRICtrd, realCRIO))
}

const testTimeout = 3 * time.Minute

var modes = map[string]bool{"native": false, "cri": true}

func newAdapter(t *testing.T, cfg containerd.Config) runtime.RuntimeAdapter {
	t.Helper()
	adapter, err := containerd.New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { adapter.(io.Closer).Close() })
	return adapter
}

func configFor(c *testenv.Containerd, cri bool) containerd.Config {
	cfg := containerd.DefaultConfig()
	cfg.Endpoint, cfg.Namespace, cfg.CRI = c.Endpoint, c.Namespace, cri
	return cfg
}

// TestNativeModeAgreesWithCRI creates pods through containerd's CRI
// plugin, as kubelet does, and checks that the native mode's listing is
// the CRI mode's, a direct CRI ListPodSandbox's and crictl's, down to
// pod IPs, and that it finds each pod's network namespace. The
// contract's rules (every sandbox by its full ID, stopped ones NotReady,
// nothing else listed) are the conformance suite's: adapters/plugin_test.go
// runs it against both modes.
func TestNativeModeAgreesWithCRI(t *testing.T) {
	c := ctrd.Get(t)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	f := adaptertest.NewCRIFixture(t, ctx, c)
	scenario := adaptertest.BuildScenario(t, ctx, f)

	listings := map[string]map[string]runtime.Sandbox{}
	for mode, cri := range modes {
		t.Run(mode, func(t *testing.T) {
			listings[mode] = adaptertest.ListByID(t, ctx, newAdapter(t, configFor(c, cri)))
		})
	}
	native, viaCRI := listings["native"], listings["cri"]
	if native == nil || viaCRI == nil {
		t.FailNow()
	}
	if got, want := adaptertest.SortedIDs(native), adaptertest.SortedIDs(viaCRI); !slices.Equal(got, want) {
		t.Errorf("native listed %v\nCRI mode lists %v", got, want)
	}
	t.Run("same as CRI ListPodSandbox", func(t *testing.T) {
		if got, want := adaptertest.SortedIDs(native), criSandboxIDs(t, ctx, c.Endpoint); !slices.Equal(got, want) {
			t.Errorf("native listed %v\nCRI lists     %v", got, want)
		}
	})
	t.Run("same as crictl", func(t *testing.T) {
		crictl := testsupport.Tool(t, "crictl") // built by make test-tools
		if got, want := adaptertest.SortedIDs(native), crictlPods(t, ctx, crictl, c.Endpoint); !slices.Equal(got, want) {
			t.Errorf("native listed %v\ncrictl lists  %v", got, want)
		}
	})
	t.Run("pod IPs", func(t *testing.T) {
		web := viaCRI[scenario.Web.SandboxID]
		if len(web.IPs) == 0 {
			t.Fatalf("CRI status of a pod-network sandbox has no IP: %+v", web)
		}
		for _, pod := range scenario.Existing() {
			if got, want := native[pod.SandboxID].IPs, viaCRI[pod.SandboxID].IPs; !slices.Equal(got, want) {
				t.Errorf("sandbox %s: native IPs %v, CRI status IPs %v", pod.SandboxID, got, want)
			}
		}
		if ips := viaCRI[scenario.Host.SandboxID].IPs; len(ips) != 0 {
			t.Errorf("host-network sandbox has IPs %v", ips)
		}
	})
	t.Run("network namespace", func(t *testing.T) {
		web := native[scenario.Web.SandboxID]
		if !strings.HasPrefix(web.NetNS, c.Dir) {
			t.Errorf("native NetNS = %q, want a path under %s", web.NetNS, c.Dir)
		} else if _, err := os.Stat(web.NetNS); err != nil {
			t.Errorf("NetNS %s: %v", web.NetNS, err)
		}
		if got := native[scenario.Host.SandboxID].NetNS; got != "" {
			t.Errorf("host-network sandbox NetNS = %q, want none", got)
		}
	})
	t.Run("list and get agree", func(t *testing.T) {
		adapter := newAdapter(t, configFor(c, false))
		for _, pod := range scenario.Existing() {
			got, err := adapter.GetSandbox(ctx, pod.SandboxID)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, native[pod.SandboxID]) {
				t.Errorf("GetSandbox = %+v\nlisted      %+v", got, native[pod.SandboxID])
			}
		}
	})
	// Last: it stops the web pod.
	t.Run("stopped after listing", func(t *testing.T) { testStopAfterListing(t, ctx, c, f, scenario.Web) })
}

// testStopAfterListing stops a pod that earlier listings saw running:
// the native adapter's memory of running tasks must not outlive it.
func testStopAfterListing(t *testing.T, ctx context.Context, c *testenv.Containerd, f *fixture.CRI, pod fixture.Pod) {
	adapter := newAdapter(t, configFor(c, false))
	for range 2 { // the second listing answers from memory
		if sb := adaptertest.ListByID(t, ctx, adapter)[pod.SandboxID]; sb.State != runtime.StateReady {
			t.Fatalf("before stop: %+v, want Ready", sb)
		}
	}
	if err := f.StopPod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	listed := adaptertest.ListByID(t, ctx, adapter)[pod.SandboxID]
	got, err := adapter.GetSandbox(ctx, pod.SandboxID)
	if err != nil {
		t.Fatal(err)
	}
	if listed.State != runtime.StateNotReady || listed.NetNS != "" || len(listed.IPs) != 0 || !reflect.DeepEqual(listed, got) {
		t.Errorf("after stop: listed %+v\nGetSandbox %+v\nwant NotReady without namespace or IPs", listed, got)
	}
}

func TestInfo(t *testing.T) {
	c := ctrd.Get(t)
	for mode, cri := range modes {
		t.Run(mode, func(t *testing.T) {
			info, err := newAdapter(t, configFor(c, cri)).Info(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if info.AdapterName != "containerd" || info.RuntimeName != "containerd" || !strings.HasPrefix(info.RuntimeVersion, "1.6") || info.Endpoint != c.Endpoint {
				t.Errorf("Info = %+v, want containerd 1.6.x at %s", info, c.Endpoint)
			}
		})
	}
}

func TestUnreachableSocketIsUnavailable(t *testing.T) {
	for mode, cri := range modes {
		t.Run(mode, func(t *testing.T) {
			cfg := containerd.DefaultConfig()
			cfg.Endpoint, cfg.CRI = "unix://"+filepath.Join(t.TempDir(), "containerd.sock"), cri
			sandboxes, err := newAdapter(t, cfg).ListSandboxes(context.Background())
			if !errors.Is(err, runtime.ErrUnavailable) || sandboxes != nil {
				t.Fatalf("ListSandboxes = %v, %v; want nil, ErrUnavailable", sandboxes, err)
			}
		})
	}
}

// In CRI mode the expected runtime name is checked against containerd's
// real Version answer.
func TestCRIModeRefusesAnotherRuntimeName(t *testing.T) {
	c := ctrd.Get(t)
	cfg := configFor(c, true)
	cfg.RuntimeName = "cri-o"
	_, err := newAdapter(t, cfg).ListSandboxes(context.Background())
	want := fmt.Sprintf(`endpoint %s serves runtime "containerd", want "cri-o": endpoint serves another runtime`, c.Endpoint)
	if !errors.Is(err, runtime.ErrWrongRuntime) || err.Error() != want {
		t.Fatalf("error = %v\nwant    %s", err, want)
	}
}

// A CRI-only runtime's socket (a real CRI-O's) has no containerd API;
// native mode names the runtime it found.
func TestNativeModeRefusesACRIOnlySocket(t *testing.T) {
	c := realCRIO.Get(t)
	cfg := containerd.DefaultConfig()
	cfg.Endpoint = c.Endpoint
	_, err := newAdapter(t, cfg).ListSandboxes(context.Background())
	want := fmt.Sprintf(`endpoint %s serves runtime "cri-o" (CRI only), want "containerd" (the containerd API): endpoint serves another runtime`, c.Endpoint)
	if !errors.Is(err, runtime.ErrWrongRuntime) || err.Error() != want {
		t.Fatalf("error = %v\nwant    %s", err, want)
	}
}

func TestExpiredContextIsHonoured(t *testing.T) {
	c := ctrd.Get(t)
	for mode, cri := range modes {
		t.Run(mode, func(t *testing.T) {
			ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
			defer cancel()
			_, err := newAdapter(t, configFor(c, cri)).ListSandboxes(ctx)
			if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, runtime.ErrUnavailable) {
				t.Fatalf("error = %v, want DeadlineExceeded and ErrUnavailable", err)
			}
		})
	}
}

// noCRICtrd is a containerd started as Docker starts its own: CRI plugin
// disabled, namespace k8s.io empty.
var noCRICtrd = testenv.SharedContainerd(testenv.ContainerdOptions{DisableCRI: true})

// TestContainerdWithoutCRIIsWrongRuntime points both modes at a containerd
// whose CRI plugin is disabled. Its k8s.io namespace is empty, so a
// listing that only read it would succeed with no pods and ipamd would
// release every address: each call must fail with ErrWrongRuntime instead.
func TestContainerdWithoutCRIIsWrongRuntime(t *testing.T) {
	c := noCRICtrd.Get(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sandboxID := critest.NewID()
	t.Run("native", func(t *testing.T) {
		adapter := newAdapter(t, configFor(c, false))
		want := "endpoint " + c.Endpoint + " serves containerd without its CRI plugin (Docker's own containerd?): " +
			"it runs no Kubernetes pods, want containerd with the CRI plugin loaded: endpoint serves another runtime"
		info, err := adapter.Info(ctx)
		expectWrongRuntime(t, "Info", fmt.Sprintf("%+v", info), err, want)
		list, err := adapter.ListSandboxes(ctx)
		expectWrongRuntime(t, "ListSandboxes", fmt.Sprintf("%d sandboxes", len(list)), err, want)
		sandbox, err := adapter.GetSandbox(ctx, sandboxID)
		expectWrongRuntime(t, "GetSandbox", sandbox.ID, err, want)
	})
	t.Run("cri", func(t *testing.T) {
		adapter := newAdapter(t, configFor(c, true))
		list, err := adapter.ListSandboxes(ctx)
		expectWrongRuntime(t, "ListSandboxes", fmt.Sprintf("%d sandboxes", len(list)), err, "")
	})
}

// expectWrongRuntime requires err to wrap runtime.ErrWrongRuntime and, when
// want is set, to read exactly want.
func expectWrongRuntime(t *testing.T, call, result string, err error, want string) {
	t.Helper()
	switch {
	case err == nil:
		t.Errorf("%s succeeded (%s), want ErrWrongRuntime", call, result)
	case !errors.Is(err, runtime.ErrWrongRuntime):
		t.Errorf("%s error = %v, want ErrWrongRuntime", call, err)
	case want != "" && err.Error() != want:
		t.Errorf("%s error = %q\nwant %q", call, err.Error(), want)
	}
}
