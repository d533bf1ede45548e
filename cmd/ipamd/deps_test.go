package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestIpamdLinksNoRuntimeClient keeps the plugin split true: adapters are
// separate binaries, so no container runtime's client library (nor an
// adapter package) may ever enter ipamd, and the CNI-facing server, which
// every ADD and DEL crosses, links neither a runtime client nor the AWS SDK
// (the aws IP source, which needs it, is ipamd's business, not the
// server's).
func TestIpamdLinksNoRuntimeClient(t *testing.T) {
	runtimeClients := []string{
		"github.com/containerd/containerd/",
		"github.com/docker/docker/",
		"k8s.io/cri-api/",
		"github.com/sandboxipam/sandboxipam/adapters/",
	}
	for pkg, banned := range map[string][]string{
		"github.com/sandboxipam/sandboxipam/cmd/ipamd":    runtimeClients,
		"github.com/sandboxipam/sandboxipam/ipamd/server": append(runtimeClients, "github.com/aws/aws-sdk-go-v2", "k8s.io/client-go"),
	} {
		out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
		}
		deps := strings.Fields(string(out))
		if len(deps) < 10 {
			t.Fatalf("go list -deps %s listed %d packages, want its whole dependency graph:\n%s", pkg, len(deps), out)
		}
		for _, prefix := range banned {
			var hits []string
			for _, dep := range deps {
				if strings.HasPrefix(dep+"/", prefix) {
					hits = append(hits, dep)
				}
			}
			if len(hits) > 0 {
				t.Errorf("%s depends on %d package(s) under %s, e.g. %s", pkg, len(hits), prefix, hits[0])
			}
		}
	}
}
