package cni_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/sandboxipam/sandboxipam/cni/internal/cnitest"
)

// TestPluginLinksNoGRPC guards the plugin's start-up cost: it is exec'd
// per CNI call, and grpc's initialisation alone costs more than the call.
func TestPluginLinksNoGRPC(t *testing.T) {
	out, err := exec.Command("go", "version", "-m", cnitest.PluginBinary(t)).CombinedOutput()
	if err != nil {
		t.Fatalf("go version -m: %v\n%s", err, out)
	}
	for _, banned := range []string{"google.golang.org/grpc", "google.golang.org/protobuf", "github.com/hashicorp/go-plugin", "golang.org/x/net"} {
		if strings.Contains(string(out), banned) {
			t.Errorf("the plugin binary links %s:\n%s", banned, out)
		}
	}
}

// TestPluginLinksNoSkel guards the plugin's start-up cost too: skel brings
// the CNI library's utils package, whose regexp is compiled at every exec
// (dispatch.go), and invoke brings OpenTelemetry and net/http, whose
// initialisers run at every exec (portmap.go).
func TestPluginLinksNoSkel(t *testing.T) {
	const plugin = "github.com/sandboxipam/sandboxipam/cmd/sandboxipam"
	out, err := exec.Command("go", "list", "-deps", plugin).CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps %s: %v\n%s", plugin, err, out)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, "github.com/sandboxipam/sandboxipam/cni") {
		t.Fatalf("go list -deps %s does not list the cni package, want its whole dependency graph:\n%s", plugin, out)
	}
	for _, banned := range []string{"github.com/containernetworking/cni/pkg/skel", "github.com/containernetworking/cni/pkg/utils", "regexp",
		"github.com/containernetworking/cni/pkg/invoke", "go.opentelemetry.io/otel", "net/http"} {
		if slices.Contains(deps, banned) {
			t.Errorf("the plugin links %s", banned)
		}
	}
}
