package cni_test

import (
	"os/exec"
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
