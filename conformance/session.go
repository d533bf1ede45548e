package conformance

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/sandboxipam/sandboxipam/conformance/fixture"
	"github.com/sandboxipam/sandboxipam/runtime"
	"github.com/sandboxipam/sandboxipam/runtime/plugin/host"
)

// session is what one check works with: the shared adapter, the fixture,
// and the record of what the check created.
type session struct {
	cfg     Config
	checkID string
	runID   string
	adapter runtime.RuntimeAdapter
	fixture fixture.Fixture
	res     *resources
	podSeq  atomic.Int32
	// shared are the run's shared pods (see sharedPods).
	shared *sharedPods
	// created records every pod the run created, for the checks that
	// compare a listing with all of them.
	created *podRecord

	notesMu sync.Mutex
	notes   []string
}

// note records a fact for the report.
func (s *session) note(format string, args ...any) {
	s.notesMu.Lock()
	defer s.notesMu.Unlock()
	s.notes = append(s.notes, fmt.Sprintf(format, args...))
}

// callCtx bounds one adapter call by Config.Timeout.
func (s *session) callCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.cfg.Timeout)
}

// list calls ListSandboxes on the shared adapter.
func (s *session) list(ctx context.Context) ([]runtime.Sandbox, error) {
	return listWith(ctx, s, s.adapter)
}

// listWith calls ListSandboxes on adapter, bounded by Config.Timeout. A
// failure here is the adapter's failure to list, so it is a Failure.
func listWith(ctx context.Context, s *session, adapter runtime.RuntimeAdapter) ([]runtime.Sandbox, error) {
	callCtx, cancel := s.callCtx(ctx)
	defer cancel()
	list, err := adapter.ListSandboxes(callCtx)
	if err != nil {
		return nil, failf("ListSandboxes failed against a working runtime: %v", err)
	}
	// A repeated ID is no-duplicate-ids' failure alone, not every check's.
	return list, nil
}

// uniqueIDs fails a listing that holds one sandbox ID more than once:
// ipamd keys each IP by sandbox ID, so two entries under one ID contradict
// each other about the pod that owns it.
func uniqueIDs(list []runtime.Sandbox) error {
	seen := make(map[string]int, len(list))
	for i, sb := range list {
		if first, ok := seen[sb.ID]; ok {
			return mismatch(fmt.Sprintf("ListSandboxes listed sandbox ID %s twice (entries %d and %d of %d)", sb.ID, first+1, i+1, len(list)),
				"every ID once", fmt.Sprintf("%s %s and %s %s", sb.ID, list[first].State, sb.ID, sb.State))
		}
		seen[sb.ID] = i
	}
	return nil
}

// podRecord is every pod a run created, safe for concurrent use.
type podRecord struct {
	mu   sync.Mutex
	pods []fixture.Pod
}

// add records pod; a nil record records nothing.
func (r *podRecord) add(pod fixture.Pod) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pods = append(r.pods, pod)
}

// all returns the pods recorded so far.
func (r *podRecord) all() []fixture.Pod {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.pods)
}

// get calls GetSandbox on the shared adapter and returns its error as is.
func (s *session) get(ctx context.Context, id string) (runtime.Sandbox, error) {
	callCtx, cancel := s.callCtx(ctx)
	defer cancel()
	return s.adapter.GetSandbox(callCtx, id)
}

// requirePods skips the check when there is no fixture to create pods.
func (s *session) requirePods() error {
	if s.fixture == nil {
		return skipf("pods not supported: no fixture (--fixture docker or cri)")
	}
	return nil
}

// podSpec returns a spec for a new pod unique to this run and check, in
// the run's namespace.
func (s *session) podSpec(containers ...string) fixture.PodSpec {
	return s.podSpecIn(s.cfg.Namespace, containers...)
}

// podSpecIn returns a spec for a new pod unique to this run and check, in
// namespace: its name alone tells it apart, as a run's pods in
// SystemNamespace share that namespace with every other run's.
func (s *session) podSpecIn(namespace string, containers ...string) fixture.PodSpec {
	n := s.podSeq.Add(1)
	return fixture.PodSpec{
		Name:       fmt.Sprintf("%s-%d-%s", s.checkID, n, s.runID),
		Namespace:  namespace,
		UID:        newUID(),
		Containers: containers,
		// IPv4 unless the pod is one of the few the batch makes
		// dual-stack or IPv6-only (sharedPods.plan).
		IPFamilies: fixture.IPv4Only,
	}
}

// createPod creates a pod through the fixture and records its removal.
// The returned resource lets the check remove the pod itself.
func (s *session) createPod(ctx context.Context, spec fixture.PodSpec) (fixture.Pod, *resource, error) {
	if err := ctx.Err(); err != nil {
		return fixture.Pod{}, nil, fmt.Errorf("create pod %s: %w", spec.Name, err)
	}
	fixtureCtx, cancel := s.fixtureCtx(ctx)
	defer cancel()
	pod, err := s.fixture.CreatePod(fixtureCtx, spec)
	if errors.Is(err, fixture.ErrNotSupported) {
		return fixture.Pod{}, nil, skipf("%s not supported by the %s fixture", describeSpec(spec), s.fixture.Name())
	}
	if err != nil {
		return fixture.Pod{}, nil, fmt.Errorf("fixture %s: create pod %s: %w", s.fixture.Name(), spec.Name, err)
	}
	s.created.add(pod)
	item := s.res.addPod("pod "+spec.Name, func(ctx context.Context) error {
		return s.fixture.RemovePod(ctx, pod)
	})
	return pod, item, nil
}

// fixtureCtx is ctx without its cancellation, bounded by CleanupTimeout,
// for the fixture calls that create or change pods. Ctrl-C must not cut
// one short: a runtime may finish creating a container whose ID the
// fixture never receives, and then nobody could remove it. The check sees
// the interruption at its next step instead.
func (s *session) fixtureCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), s.cfg.CleanupTimeout)
}

// stopPod stops a pod's sandbox through the fixture, leaving it in place.
func (s *session) stopPod(ctx context.Context, pod fixture.Pod) error {
	fixtureCtx, cancel := s.fixtureCtx(ctx)
	defer cancel()
	if err := s.fixture.StopPod(fixtureCtx, pod); err != nil {
		return fmt.Errorf("fixture %s: stop pod %s: %w", s.fixture.Name(), pod.Spec.Name, err)
	}
	return nil
}

// createPods creates one pod per spec, in order.
func (s *session) createPods(ctx context.Context, specs ...fixture.PodSpec) ([]fixture.Pod, error) {
	pods := make([]fixture.Pod, 0, len(specs))
	for _, spec := range specs {
		pod, _, err := s.createPod(ctx, spec)
		if err != nil {
			return nil, err
		}
		pods = append(pods, pod)
	}
	return pods, nil
}

// launch starts another adapter process with args and records its Close.
func (s *session) launch(ctx context.Context, args []string) (*host.Client, *resource, error) {
	client, err := launchAdapter(ctx, s.cfg, args)
	if err != nil {
		return nil, nil, err
	}
	item := s.res.add("adapter process", func(context.Context) error { return client.Close() })
	return client, item, nil
}

// launchAdapter starts the adapter binary through go-plugin, as ipamd does.
func launchAdapter(ctx context.Context, cfg Config, args []string) (*host.Client, error) {
	client, err := host.Launch(ctx, host.Config{
		Path:            cfg.AdapterPath,
		Args:            args,
		Env:             cfg.AdapterEnv,
		SHA256:          cfg.AdapterSHA256,
		Logger:          cfg.Logger,
		DisableAutoMTLS: cfg.DisableAutoMTLS,
		StartTimeout:    cfg.StartTimeout,
	})
	if err != nil {
		return nil, err // Launch names the binary and the cause.
	}
	return client, nil
}

// newUID returns a random RFC 4122 version 4 UUID, as Kubernetes pod UIDs are.
func newUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never returns an error.
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// newRunID returns a short random suffix that keeps pod names from two runs
// against one runtime apart.
func newRunID() string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%x", b)
}
