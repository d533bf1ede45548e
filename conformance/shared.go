package conformance

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/sandboxipam/sandboxipam/conformance/fixture"
)

// appContainers are the app containers of the suite's multi-container
// pods: more than one, so an adapter that takes any container of a pod for
// its sandbox shows it.
var appContainers = []string{"app", "sidecar", "logger"}

// sharedPods are the pods every read-only check looks at, created once per
// run on first use and removed when the run ends: a pod with several app
// containers, a pod without any, and (where the fixture supports it) a
// host-network pod. Checks that stop, remove or restart pods create their
// own. Sharing them keeps a run's pod count, and so its time, low.
type sharedPods struct {
	once sync.Once
	res  resources
	err  error

	multi, plain fixture.Pod
	// host is nil where the fixture has no host-network pods.
	host *fixture.Pod
}

// sharedPodsID names the shared pods, as a check ID names a check's own.
const sharedPodsID = "shared"

// sharedPods creates the run's shared pods on first use and returns them.
func (s *session) sharedPods(ctx context.Context) (*sharedPods, error) {
	if err := s.requirePods(); err != nil {
		return nil, err
	}
	shared := s.shared
	shared.once.Do(func() { shared.err = shared.create(ctx, s) })
	if shared.err != nil {
		return nil, fmt.Errorf("create the run's shared pods: %w", shared.err)
	}
	return shared, nil
}

// create makes the shared pods through a session of their own, so their
// removal is recorded with the run rather than with the first check.
func (p *sharedPods) create(ctx context.Context, s *session) error {
	own := &session{cfg: s.cfg, checkID: sharedPodsID, runID: s.runID, fixture: s.fixture, res: &p.res}
	var err error
	if p.multi, _, err = own.createPod(ctx, own.podSpec(appContainers...)); err != nil {
		return err
	}
	if p.plain, _, err = own.createPod(ctx, own.podSpec()); err != nil {
		return err
	}
	hostSpec := own.podSpec()
	hostSpec.HostNetwork = true
	host, _, err := own.createPod(ctx, hostSpec)
	var skip *skipError
	switch {
	case errors.As(err, &skip):
		return nil
	case err != nil:
		return err
	}
	p.host = &host
	return nil
}

// networked returns the shared pods on the pod network.
func (p *sharedPods) networked() []fixture.Pod {
	return []fixture.Pod{p.multi, p.plain}
}

// all returns every shared pod.
func (p *sharedPods) all() []fixture.Pod {
	if p.host == nil {
		return p.networked()
	}
	return append(p.networked(), *p.host)
}

// release removes the shared pods.
func (p *sharedPods) release(ctx context.Context) error {
	return p.res.releaseAll(ctx)
}
