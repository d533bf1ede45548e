package conformance

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/sandboxipam/sandboxipam/conformance/fixture"
	"github.com/sandboxipam/sandboxipam/runtime"
)

// appContainers are the app containers of the suite's multi-container
// pods: more than one, so an adapter that takes any container of a pod for
// its sandbox shows it.
var appContainers = []string{"app", "sidecar", "logger"}

// sharedPods are the pods of a run that are created once, all at once, on
// the first check that needs one, and removed when the run ends. Creating
// pods dominates a run's time, and one batch in parallel costs little more
// than one pod.
//
// Every read-only check looks at the same seven: in the run's namespace a
// pod with several app containers, a pod with exactly one (the seed bug's
// shape: each coredns pod of the report had one app container, whose ID
// was recorded instead of the sandbox's), a pod without any, and (where the
// fixture supports it) a host-network pod; in SystemNamespace a
// pod-network pod with one app container (CoreDNS's shape), a pod-network
// pod without any, and a host-network one (kube-proxy's). An adapter that
// leaves out the kube-* namespaces, taking all their pods for host-network
// ones, would have ipamd release CoreDNS's address while it runs; pods of
// one namespace alone cannot show it.
//
// The pods ask for their address families as a dual-stack cluster's do
// (fixture.PodSpec.IPFamilies): in each namespace one pod is dual-stack
// (multi, system) and one IPv6-only (plain, system-ipv6), beside the
// IPv4-only rest; the pods reserved for the checks that compare addresses
// (pod-ips-match, list-get-agree, recreated-pod-own-identity) are
// dual-stack. No pod is added for a family but system-ipv6.
// An adapter that reports one family of a dual-stack pod, or another pod's
// address of one family, passes with IPv4-only pods; ipamd, which takes
// Sandbox.IPs as proof of an address in use after a state loss, would see
// the other family's address as unheld. The fixture gives what it can;
// the checks compare what the runtime recorded, family by family.
//
// The checks that stop or remove pods get pods of their own from the same
// batch (reserved, by check ID); the checks whose point is the creation
// itself (listing-fresh) or that disturb the runtime (runtime-restart,
// scale-listing) create theirs when they run.
type sharedPods struct {
	once sync.Once
	res  resources
	err  error

	multi, single, plain fixture.Pod
	// system and systemIPv6 are the pod-network pods in SystemNamespace:
	// CoreDNS's shape, dual-stack, and an IPv6-only pod without app
	// containers.
	system, systemIPv6 fixture.Pod
	// host and systemHost, the host-network pods of the run's namespace
	// and of SystemNamespace, are nil where the fixture has none.
	host, systemHost *fixture.Pod
	// reserved are the pods made ahead for one check each, by key.
	reserved map[string]reservedPod
}

// reservedPod is a pod made ahead for one check, with the resource that
// removes it, which the check may release early.
type reservedPod struct {
	pod  fixture.Pod
	item *resource
}

// sharedPodsID names the shared pods, as a check ID names a check's own.
const sharedPodsID = "shared"

// Keys of the pods reserved for one check each.
const (
	reservedPodIPs  = "pod-ips-match"
	reservedStopped = "stopped-listed-notready"
	reservedRemoved = "removed-not-found"
	reservedListGet = "list-get-agree"
	// reservedRecreated is the first of the two pods the recreated-pod
	// check makes under one name: the one whose name is taken again.
	reservedRecreated = "recreated-pod-own-identity"
	// reservedRestarted is the prefix of the restarted-pod check's
	// attempts: "restarted-pod-ids/0" and so on.
	reservedRestarted = "restarted-pod-ids"
)

// pendingPod is one pod of the batch to create.
type pendingPod struct {
	key  string
	spec fixture.PodSpec
	// optional pods are left out where the fixture does not support them.
	optional bool
}

// sharedListed returns the run's shared pods and a listing taken once
// they exist.
func (s *session) sharedListed(ctx context.Context) (*sharedPods, []runtime.Sandbox, error) {
	shared, err := s.sharedPods(ctx)
	if err != nil {
		return nil, nil, err
	}
	list, err := s.list(ctx)
	return shared, list, err
}

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

// reservedPod returns the pod made ahead for key, creating the batch if
// need be.
func (s *session) reservedPod(ctx context.Context, key string) (fixture.Pod, *resource, error) {
	shared, err := s.sharedPods(ctx)
	if err != nil {
		return fixture.Pod{}, nil, err
	}
	r, ok := shared.reserved[key]
	if !ok {
		return fixture.Pod{}, nil, fmt.Errorf("no pod was reserved for %s", key)
	}
	return r.pod, r.item, nil
}

// create makes the whole batch in parallel. Its removal is recorded with
// the run rather than with the first check.
func (p *sharedPods) create(ctx context.Context, s *session) error {
	pending := p.plan(s)
	created := make([]reservedPod, len(pending))
	errs := make([]error, len(pending))
	_ = forEachParallel(len(pending), func(i int) error {
		own := &session{cfg: s.cfg, checkID: s.checkID, runID: s.runID, fixture: s.fixture, res: &p.res, created: s.created}
		created[i].pod, created[i].item, errs[i] = own.createPod(ctx, pending[i].spec)
		return nil
	})
	p.reserved = make(map[string]reservedPod, len(pending))
	var skip *skipError
	for i, pod := range pending {
		switch {
		case pod.optional && errors.As(errs[i], &skip):
			continue
		case errs[i] != nil:
			return errs[i]
		}
		p.reserved[pod.key] = created[i]
	}
	p.multi, p.single, p.plain = p.reserved["multi"].pod, p.reserved["single"].pod, p.reserved["plain"].pod
	p.system, p.systemIPv6 = p.reserved["system"].pod, p.reserved["system-ipv6"].pod
	p.host, p.systemHost = p.optional("host"), p.optional("system-host")
	return nil
}

// optional returns the reserved pod under key, or nil where the fixture
// could not make it.
func (p *sharedPods) optional(key string) *fixture.Pod {
	if r, ok := p.reserved[key]; ok {
		return &r.pod
	}
	return nil
}

// plan lists the pods of the batch: the shared ones and the pods of the
// selected checks that reserve theirs.
func (p *sharedPods) plan(s *session) []pendingPod {
	named := func(id string) *session {
		return &session{cfg: s.cfg, checkID: id, runID: s.runID}
	}
	shared := named(sharedPodsID)
	host := shared.podSpec()
	host.HostNetwork = true
	// No app container on the kube-system host-network pod: each pod of
	// the batch is one more container start on every run.
	systemHost := shared.podSpecIn(SystemNamespace)
	systemHost.HostNetwork = true
	pending := []pendingPod{
		{key: "multi", spec: withFamilies(shared.podSpec(appContainers...), fixture.DualStack)},
		{key: "single", spec: shared.podSpec(appContainer)},
		{key: "plain", spec: withFamilies(shared.podSpec(), fixture.IPv6Only)},
		{key: "host", spec: host, optional: true},
		{key: "system", spec: withFamilies(shared.podSpecIn(SystemNamespace, appContainer), fixture.DualStack)},
		{key: "system-ipv6", spec: withFamilies(shared.podSpecIn(SystemNamespace), fixture.IPv6Only)},
		{key: "system-host", spec: systemHost, optional: true},
	}
	if s.cfg.selected(reservedRecreated) {
		// An attempt of 1, so that the pod made again under its name (a
		// new pod, attempt 0) differs from it in its attempt too.
		spec := withFamilies(named(reservedRecreated).podSpec(appContainer), fixture.DualStack)
		spec.Attempt = 1
		pending = append(pending, pendingPod{key: reservedRecreated, spec: spec})
	}
	dualStack := []string{reservedPodIPs, reservedListGet}
	for _, id := range []string{reservedPodIPs, reservedStopped, reservedRemoved, reservedListGet} {
		if s.cfg.selected(id) {
			spec := named(id).podSpec(appContainer)
			if slices.Contains(dualStack, id) {
				spec.IPFamilies = fixture.DualStack
			}
			pending = append(pending, pendingPod{key: id, spec: spec})
		}
	}
	if s.cfg.selected(reservedRestarted) {
		// Each attempt gets its own app containers, whose names carry the
		// attempt as kubelet's do.
		spec := named(reservedRestarted).podSpec(appContainers[:2]...)
		for attempt := range uint32(restartAttempts) {
			spec.Attempt = attempt
			pending = append(pending, pendingPod{key: restartedKey(attempt), spec: spec})
		}
	}
	return pending
}

// withFamilies returns spec asking for families.
func withFamilies(spec fixture.PodSpec, families []fixture.IPFamily) fixture.PodSpec {
	spec.IPFamilies = families
	return spec
}

// restartedKey is the key of one attempt of the restarted-pod check's pod.
func restartedKey(attempt uint32) string {
	return fmt.Sprintf("%s/%d", reservedRestarted, attempt)
}

// networked returns the shared pods on the pod network, of both
// namespaces.
func (p *sharedPods) networked() []fixture.Pod {
	return []fixture.Pod{p.multi, p.single, p.plain, p.system, p.systemIPv6}
}

// batch returns every pod of the batch, shared and reserved, in a stable
// order: pods with several, one and no app containers, every attempt of the
// restarted pod, and the host-network pod where there is one.
func (p *sharedPods) batch() []fixture.Pod {
	pods := make([]fixture.Pod, 0, len(p.reserved))
	for _, r := range p.reserved {
		pods = append(pods, r.pod)
	}
	slices.SortFunc(pods, func(a, b fixture.Pod) int {
		return cmp.Or(cmp.Compare(a.Spec.Name, b.Spec.Name), cmp.Compare(a.Spec.Attempt, b.Spec.Attempt))
	})
	return pods
}

// all returns every shared pod, of both namespaces.
func (p *sharedPods) all() []fixture.Pod {
	pods := p.networked()
	for _, host := range []*fixture.Pod{p.host, p.systemHost} {
		if host != nil {
			pods = append(pods, *host)
		}
	}
	return pods
}

// release removes the shared pods.
func (p *sharedPods) release(ctx context.Context) error {
	return p.res.releaseAll(ctx)
}
