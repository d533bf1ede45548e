package e2e_test

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/conformance"
	"github.com/sandboxipam/sandboxipam/conformance/conformancetest"
	"github.com/sandboxipam/sandboxipam/conformance/fixture"
)

// TestExampleAdapterConforms runs the suite in-process, through
// conformancetest.Run as an adapter author's own test would, against the
// example third-party adapter built from examples/adapter-docker-minimal.
func TestExampleAdapterConforms(t *testing.T) {
	t.Parallel()
	d := docker.Get(t)
	fix, err := fixture.NewDocker(t.Context(), fixture.DockerConfig{Host: d.Host, PauseImage: d.PauseImage, CgroupParent: d.CgroupParent,
		PodAddresses: netip.MustParsePrefix(podCIDR), PodAddresses6: netip.MustParsePrefix(podCIDR6)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := fix.Cleanup(context.Background()); err != nil {
			t.Errorf("fixture clean-up: %v", err)
		}
		_ = fix.Close()
	})
	conformancetest.Run(t, conformance.Config{
		AdapterPath:  binary(t, "adapter-docker-minimal"),
		AdapterArgs:  []string{"--endpoint=" + d.Host},
		Fixture:      fix,
		EndpointArgs: func(endpoint string) []string { return []string{"--endpoint=" + endpoint} },
		Scale:        3,
		// The shared dockerd's bound, as sharedDockerCallTimeout says.
		Timeout: 2 * time.Minute,
	})
}
