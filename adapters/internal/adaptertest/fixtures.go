package adaptertest

import (
	"context"
	"net/netip"
	"testing"

	"github.com/sandboxipam/sandboxipam/conformance/fixture"
	"github.com/sandboxipam/sandboxipam/internal/testenv"
)

// NewCRIFixture returns a fixture creating pods through c's CRI plugin,
// cleaned up with the test. Pods carry none of kubelet's
// io.kubernetes.pod.* labels, so that an adapter that reads the pod's
// identity from labels instead of the sandbox metadata fails.
func NewCRIFixture(t testing.TB, ctx context.Context, c *testenv.Containerd) *fixture.CRI {
	t.Helper()
	return NewCRIFixtureAt(t, ctx, c.Endpoint, c.PauseImage, c.CgroupParent)
}

// NewCRIFixtureAt is NewCRIFixture for any CRI runtime: a real CRI-O or
// cri-dockerd, say.
func NewCRIFixtureAt(t testing.TB, ctx context.Context, endpoint, pauseImage, cgroupParent string) *fixture.CRI {
	t.Helper()
	f, err := fixture.NewCRI(ctx, fixture.CRIConfig{
		Endpoint: endpoint, PauseImage: pauseImage, CgroupParent: cgroupParent, WithoutPodLabels: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	cleanUpWith(t, ctx, f)
	return f
}

// NewDockerFixture returns a fixture laying out dockershim-style pods in
// d, cleaned up with the test.
func NewDockerFixture(t testing.TB, ctx context.Context, d *testenv.Docker) *fixture.Docker {
	t.Helper()
	return NewDockerFixtureWithAddresses(t, ctx, d, netip.Prefix{})
}

// NewDockerFixtureWithAddresses is NewDockerFixture whose pods get an
// address from podAddresses in their network namespace, as a CNI plugin
// would give them (fixture.DockerConfig.PodAddresses).
func NewDockerFixtureWithAddresses(t testing.TB, ctx context.Context, d *testenv.Docker, podAddresses netip.Prefix) *fixture.Docker {
	t.Helper()
	f, err := fixture.NewDocker(ctx, fixture.DockerConfig{Host: d.Host, PauseImage: d.PauseImage, CgroupParent: d.CgroupParent,
		PodAddresses: podAddresses})
	if err != nil {
		t.Fatal(err)
	}
	cleanUpWith(t, ctx, f)
	return f
}

// cleanUpWith removes what f created, and closes it, when t ends.
func cleanUpWith(t testing.TB, ctx context.Context, f interface {
	Cleanup(context.Context) error
	Close() error
}) {
	t.Cleanup(func() {
		if err := f.Cleanup(context.WithoutCancel(ctx)); err != nil {
			t.Errorf("fixture cleanup: %v", err)
		}
		_ = f.Close()
	})
}
