package cri_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/sandboxipam/sandboxipam/adapters/cri"
	"github.com/sandboxipam/sandboxipam/adapters/internal/critest"
	"github.com/sandboxipam/sandboxipam/runtime"
)

// These are the shared CRI client's unit tests, against the local CRI
// emulation (critest): they run in milliseconds with no daemon, and
// critest can answer on demand what no private runtime does (a sandbox
// that vanishes between the listing and its status call, a status answered
// under another ID, a hundred pods without starting them). Every behaviour
// they rely on was seen on the real runtimes, which the crio and
// dockershim adapters' tests and the conformance suite run against: real
// CRI-O and cri-dockerd (internal/testenv).

// socketDir returns a short directory for unix sockets: t.TempDir can
// exceed the 108-byte socket path limit with long test names.
func socketDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "cri")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func serve(t *testing.T, server *critest.Server) string {
	t.Helper()
	path := filepath.Join(socketDir(t), "cri.sock")
	stop, err := server.Serve(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return "unix://" + path
}

func newAdapter(t *testing.T, endpoint, runtimeName string) *cri.Adapter {
	t.Helper()
	cfg := cri.DefaultConfig()
	cfg.AdapterName, cfg.Endpoint, cfg.RuntimeName = "test", endpoint, runtimeName
	adapter, err := cri.New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { adapter.Close() })
	return adapter
}

func ids(sandboxes []runtime.Sandbox) []string {
	out := make([]string, 0, len(sandboxes))
	for _, sb := range sandboxes {
		out = append(out, sb.ID)
	}
	slices.Sort(out)
	return out
}

func TestListSandboxesReportsEveryStateWithIPs(t *testing.T) {
	server := critest.NewServer(critest.CRIO())
	ready := critest.NewSandbox(critest.Pod{Name: "web", Namespace: "default", UID: "uid-web", Ready: true, IPs: []string{"198.18.0.5", "fd00::5"}})
	stopped := critest.NewSandbox(critest.Pod{Name: "job", Namespace: "batch", UID: "uid-job", Attempt: 2, IPs: []string{"198.18.0.6"}})
	host := critest.NewSandbox(critest.Pod{Name: "agent", Namespace: "kube-system", UID: "uid-agent", Ready: true, HostNetwork: true})
	for _, sb := range []*criv1.PodSandboxStatus{ready, stopped, host} {
		server.Add(sb)
	}
	adapter := newAdapter(t, serve(t, server), "cri-o")

	sandboxes, err := adapter.ListSandboxes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{ready.Id, stopped.Id, host.Id}
	slices.Sort(want)
	if got := ids(sandboxes); !slices.Equal(got, want) {
		t.Fatalf("listed %v, want %v", got, want)
	}
	byID := map[string]runtime.Sandbox{}
	for _, sb := range sandboxes {
		byID[sb.ID] = sb
	}
	web := byID[ready.Id]
	if web.Name != "web" || web.Namespace != "default" || web.UID != "uid-web" || web.State != runtime.StateReady || web.HostNetwork {
		t.Errorf("ready sandbox = %+v", web)
	}
	if want := []netip.Addr{netip.MustParseAddr("198.18.0.5"), netip.MustParseAddr("fd00::5")}; !slices.Equal(web.IPs, want) {
		t.Errorf("ready sandbox IPs = %v, want %v", web.IPs, want)
	}
	if !web.CreatedAt.Equal(time.Unix(0, ready.CreatedAt)) {
		t.Errorf("created at %v, want %v", web.CreatedAt, time.Unix(0, ready.CreatedAt))
	}
	if job := byID[stopped.Id]; job.State != runtime.StateNotReady || job.Attempt != 2 {
		t.Errorf("stopped sandbox = %+v, want NotReady attempt 2", job)
	}
	if agent := byID[host.Id]; !agent.HostNetwork || len(agent.IPs) != 0 {
		t.Errorf("host-network sandbox = %+v, want HostNetwork and no IPs", agent)
	}
}

func TestListSandboxesWithHundredPods(t *testing.T) {
	server := critest.NewServer(critest.CRIO())
	var want []string
	for range 100 {
		sb := critest.NewSandbox(critest.Pod{Name: "p", Namespace: "n", UID: "u", Ready: true, IPs: []string{"198.18.1.1"}})
		server.Add(sb)
		want = append(want, sb.Id)
	}
	slices.Sort(want)
	adapter := newAdapter(t, serve(t, server), "cri-o")
	sandboxes, err := adapter.ListSandboxes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(sandboxes); !slices.Equal(got, want) {
		t.Fatalf("listed %d sandboxes, want the %d created", len(got), len(want))
	}
}

func TestGetSandbox(t *testing.T) {
	for name, flavor := range map[string]critest.Flavor{"cri-o": critest.CRIO(), "docker": critest.CRIDockerd()} {
		t.Run(name, func(t *testing.T) {
			server := critest.NewServer(flavor)
			sb := critest.NewSandbox(critest.Pod{Name: "web", Namespace: "default", UID: "u1", Ready: true})
			server.Add(sb)
			adapter := newAdapter(t, serve(t, server), name)
			ctx := context.Background()

			got, err := adapter.GetSandbox(ctx, sb.Id)
			if err != nil || got.ID != sb.Id || got.Name != "web" {
				t.Fatalf("GetSandbox(%s) = %+v, %v", sb.Id, got, err)
			}
			// The runtime resolves a prefix; the adapter must not: the
			// CNI plugin never receives a short ID.
			if _, err := adapter.GetSandbox(ctx, sb.Id[:12]); !errors.Is(err, runtime.ErrNotFound) {
				t.Errorf("GetSandbox(short ID) error = %v, want ErrNotFound", err)
			}
			server.Remove(sb.Id)
			if _, err := adapter.GetSandbox(ctx, sb.Id); !errors.Is(err, runtime.ErrNotFound) {
				t.Errorf("GetSandbox(removed) error = %v, want ErrNotFound", err)
			}
			if _, err := adapter.GetSandbox(ctx, ""); !errors.Is(err, runtime.ErrInvalidArgument) {
				t.Errorf("GetSandbox(\"\") error = %v, want ErrInvalidArgument", err)
			}
		})
	}
}

func TestWrongRuntimeNameIsRefused(t *testing.T) {
	endpoint := serve(t, critest.NewServer(critest.CRIDockerd()))
	adapter := newAdapter(t, endpoint, "cri-o")
	_, err := adapter.ListSandboxes(context.Background())
	if !errors.Is(err, runtime.ErrWrongRuntime) {
		t.Fatalf("error = %v, want ErrWrongRuntime", err)
	}
	want := `endpoint ` + endpoint + ` serves runtime "docker", want "cri-o": endpoint serves another runtime`
	if err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}
	if _, err := adapter.Info(context.Background()); !errors.Is(err, runtime.ErrWrongRuntime) {
		t.Errorf("Info error = %v, want ErrWrongRuntime", err)
	}
}

func TestUnreachableRuntimeIsAnErrorNotAnEmptyList(t *testing.T) {
	endpoint := "unix://" + filepath.Join(socketDir(t), "absent.sock")
	adapter := newAdapter(t, endpoint, "cri-o")
	sandboxes, err := adapter.ListSandboxes(context.Background())
	if !errors.Is(err, runtime.ErrUnavailable) || sandboxes != nil {
		t.Fatalf("ListSandboxes = %v, %v; want nil, ErrUnavailable", sandboxes, err)
	}
	if _, err := adapter.GetSandbox(context.Background(), critest.NewID()); !errors.Is(err, runtime.ErrUnavailable) {
		t.Errorf("GetSandbox error = %v, want ErrUnavailable", err)
	}
}

// A Docker Engine socket answers HTTP/1 with an Api-Version header; a CRI
// adapter pointed at it must name Docker rather than report it down.
func TestDockerEngineSocketIsWrongRuntime(t *testing.T) {
	path := filepath.Join(socketDir(t), "docker.sock")
	listener, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	engine := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Api-Version", "1.41")
		w.Header().Set("Server", "Docker/20.10.24 (linux)")
		w.WriteHeader(http.StatusOK)
	})}
	go engine.Serve(listener)
	t.Cleanup(func() { engine.Close() })

	adapter := newAdapter(t, "unix://"+path, "cri-o")
	_, err = adapter.ListSandboxes(context.Background())
	if !errors.Is(err, runtime.ErrWrongRuntime) {
		t.Fatalf("error = %v, want ErrWrongRuntime", err)
	}
	want := `endpoint unix://` + path + ` serves runtime "docker" (the Docker Engine API 1.41), not CRI; want "cri-o": endpoint serves another runtime`
	if err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}
}

func TestExpiredContextIsHonoured(t *testing.T) {
	server := critest.NewServer(critest.CRIO())
	server.Add(critest.NewSandbox(critest.Pod{Name: "web", Namespace: "default", UID: "u", Ready: true}))
	adapter := newAdapter(t, serve(t, server), "cri-o")
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	_, err := adapter.ListSandboxes(ctx)
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, runtime.ErrUnavailable) {
		t.Fatalf("error = %v, want DeadlineExceeded and ErrUnavailable", err)
	}
}

func TestConcurrentCalls(t *testing.T) {
	server := critest.NewServer(critest.CRIO())
	sb := critest.NewSandbox(critest.Pod{Name: "web", Namespace: "default", UID: "u", Ready: true})
	server.Add(sb)
	adapter := newAdapter(t, serve(t, server), "cri-o")
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 16 {
		wg.Go(func() {
			list, err := adapter.ListSandboxes(context.Background())
			if err == nil && (len(list) != 1 || list[0].ID != sb.Id) {
				err = errors.New("wrong listing")
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

func TestInfo(t *testing.T) {
	endpoint := serve(t, critest.NewServer(critest.CRIO()))
	info, err := newAdapter(t, endpoint, "cri-o").Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if info.AdapterName != "test" || info.RuntimeName != "cri-o" || info.RuntimeVersion != "1.30.4" || info.Endpoint != endpoint || info.AdapterVersion == "" {
		t.Errorf("Info = %+v", info)
	}
}

func TestConfigValidateNamesTheField(t *testing.T) {
	base := cri.DefaultConfig()
	base.AdapterName, base.Endpoint, base.RuntimeName = "crio", "unix:///run/crio.sock", "cri-o"
	if err := base.Validate(); err != nil {
		t.Fatalf("valid config: %v", err)
	}
	cases := map[string]func(*cri.Config){
		"crio.endpoint must be a unix socket URI":  func(c *cri.Config) { c.Endpoint = "tcp://127.0.0.1:1" },
		"crio.runtime_name must name the runtime":  func(c *cri.Config) { c.RuntimeName = "" },
		"crio.timeout must be positive":            func(c *cri.Config) { c.Timeout = 0 },
		"crio.status_concurrency must be at least": func(c *cri.Config) { c.StatusConcurrency = 0 },
	}
	for prefix, mutate := range cases {
		cfg := base
		mutate(&cfg)
		err := cfg.Validate()
		if err == nil || len(err.Error()) < len(prefix) || err.Error()[:len(prefix)] != prefix {
			t.Errorf("Validate() = %v, want a message starting %q", err, prefix)
		}
	}
}

// cri-dockerd answers PodSandboxStatus for an application container's ID
// with that ID, READY and the pod's IP; the adapter must still not take it
// for a sandbox, in GetSandbox or in a listing.
func TestAppContainerIDIsNotASandboxEvenWhenStatusAnswers(t *testing.T) {
	server := critest.NewServer(critest.CRIDockerd())
	sb := critest.NewSandbox(critest.Pod{Name: "web", Namespace: "default", UID: "u1", Ready: true, IPs: []string{"198.18.0.9"}})
	server.Add(sb)
	appID := critest.NewID()
	server.AddAppContainer(sb.Id, appID)
	adapter := newAdapter(t, serve(t, server), "docker")
	ctx := context.Background()

	got, err := adapter.GetSandbox(ctx, appID)
	if !errors.Is(err, runtime.ErrNotFound) {
		t.Fatalf("GetSandbox(app container %s) = %+v, %v; want ErrNotFound", appID, got, err)
	}
	list, err := adapter.ListSandboxes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ids(list), []string{sb.Id}; !slices.Equal(got, want) {
		t.Errorf("listed %v, want %v", got, want)
	}
	if got, err := adapter.GetSandbox(ctx, sb.Id); err != nil || got.ID != sb.Id || got.State != runtime.StateReady {
		t.Errorf("GetSandbox(sandbox) = %+v, %v; want it Ready", got, err)
	}
}

// cri-dockerd lists a sandbox whose pause container was removed behind its
// back (only its checkpoint is left) as NOTREADY, and fails its
// PodSandboxStatus with "No such container" (code Unknown). The runtime
// still has it and will send its CNI DEL: it is listed NotReady from the
// listing's own fields, and GetSandbox agrees.
func TestCheckpointOnlySandboxIsListedNotReady(t *testing.T) {
	server := critest.NewServer(critest.CRIDockerd())
	live := critest.NewSandbox(critest.Pod{Name: "web", Namespace: "default", UID: "u1", Ready: true, IPs: []string{"198.18.0.9"}})
	lost := critest.NewSandbox(critest.Pod{Name: "job", Namespace: "batch", UID: "u2", Attempt: 3, Ready: true, IPs: []string{"198.18.0.10"}})
	server.Add(live)
	server.Add(lost)
	server.LoseContainer(lost.Id)
	adapter := newAdapter(t, serve(t, server), "docker")
	ctx := context.Background()

	list, err := adapter.ListSandboxes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ids(list), ids([]runtime.Sandbox{{ID: live.Id}, {ID: lost.Id}}); !slices.Equal(got, want) {
		t.Fatalf("listed %v, want %v", got, want)
	}
	for _, sb := range list {
		if sb.ID != lost.Id {
			continue
		}
		if sb.State != runtime.StateNotReady || sb.Name != "job" || sb.Namespace != "batch" || sb.UID != "u2" || sb.Attempt != 3 || len(sb.IPs) != 0 {
			t.Errorf("checkpoint-only sandbox listed as %+v, want job/batch/u2 attempt 3, NotReady, no IPs", sb)
		}
	}
	got, err := adapter.GetSandbox(ctx, lost.Id)
	if err != nil || got.ID != lost.Id || got.State != runtime.StateNotReady {
		t.Errorf("GetSandbox(checkpoint-only) = %+v, %v; want it NotReady", got, err)
	}
}
