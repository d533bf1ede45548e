package containerd

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/adapters/internal/adaptertest"
)

// TestFlagsFromTestdata parses a full command line, one flag a line, as
// the adapter binary does.
func TestFlagsFromTestdata(t *testing.T) {
	cfg := DefaultConfig()
	adaptertest.ParseFlagsFile(t, "containerd", cfg.RegisterFlags)
	want := Config{
		Endpoint: "unix:///run/k3s/containerd/containerd.sock", Namespace: "k8s.io", CRI: true,
		RuntimeName: "containerd", Timeout: 5 * time.Second, StatusConcurrency: 12,
	}
	if cfg != want {
		t.Errorf("parsed %+v, want %+v", cfg, want)
	}
	if err := cfg.Validate(); err != nil {
		t.Error(err)
	}
}

func TestConfigValidateNamesTheField(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("default config: %v", err)
	}
	cases := map[string]func(*Config){
		"containerd.endpoint must be a unix socket URI":  func(c *Config) { c.Endpoint = "tcp://127.0.0.1:1" },
		"containerd.namespace must name":                 func(c *Config) { c.Namespace = "" },
		"containerd.runtime_name must be \"containerd\"": func(c *Config) { c.RuntimeName = "cri-o" },
		"containerd.timeout must be positive":            func(c *Config) { c.Timeout = 0 },
		"containerd.status_concurrency must be at least": func(c *Config) { c.CRI, c.StatusConcurrency = true, 0 },
	}
	for prefix, mutate := range cases {
		cfg := DefaultConfig()
		mutate(&cfg)
		if err := cfg.Validate(); err == nil || !strings.HasPrefix(err.Error(), prefix) {
			t.Errorf("Validate() = %v, want a message starting %q", err, prefix)
		}
	}
}

func TestSpecNetworkNamespace(t *testing.T) {
	var spec sandboxSpec
	if spec.networkNamespacePath() != nil {
		t.Error("a spec without linux section has a network namespace")
	}
	raw := `{"linux":{"namespaces":[{"type":"pid"},{"type":"network","path":"/run/netns/cni-1"}]}}`
	if err := jsonUnmarshal(raw, &spec); err != nil {
		t.Fatal(err)
	}
	if path := spec.networkNamespacePath(); path == nil || *path != "/run/netns/cni-1" {
		t.Errorf("network namespace path = %v", path)
	}
	host := `{"linux":{"namespaces":[{"type":"pid"},{"type":"ipc"}]}}`
	spec = sandboxSpec{}
	if err := jsonUnmarshal(host, &spec); err != nil {
		t.Fatal(err)
	}
	if spec.networkNamespacePath() != nil {
		t.Error("host-network spec has a network namespace")
	}
}

func jsonUnmarshal(raw string, v any) error { return json.Unmarshal([]byte(raw), v) }
