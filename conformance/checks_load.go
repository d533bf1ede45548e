package conformance

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/sandboxipam/sandboxipam/conformance/fixture"
	"github.com/sandboxipam/sandboxipam/runtime"
)

func checkConcurrentLists(ctx context.Context, s *session) error {
	shared, baseline, err := s.sharedListed(ctx)
	if err != nil {
		return err
	}
	pods := shared.all()
	results := make([][]runtime.Sandbox, DefaultConcurrency)
	errs := make([]error, DefaultConcurrency)
	var wg sync.WaitGroup
	for i := range DefaultConcurrency {
		wg.Go(func() { results[i], errs[i] = s.list(ctx) })
	}
	wg.Wait()
	for i, list := range results {
		err := errs[i]
		if err == nil {
			err = agreeOnPods(pods, baseline, list)
		}
		if err != nil {
			return prefixed(fmt.Sprintf("call %d of %d concurrent calls", i+1, DefaultConcurrency), err)
		}
	}
	return nil
}

// agreeOnPods requires got to list every pod exactly as want does.
func agreeOnPods(pods []fixture.Pod, want, got []runtime.Sandbox) error {
	for _, pod := range pods {
		a, err := findForPod(want, pod, "")
		if err != nil {
			return prefixed("the baseline listing", err)
		}
		b, okB := findByID(got, pod.SandboxID)
		if !okB || a.State != b.State {
			return mismatch(fmt.Sprintf("listings disagree about pod %s", pod.Spec.Name),
				describeListed(a, true), describeListed(b, okB))
		}
	}
	return nil
}

// describeListed formats one pod's entry in a listing.
func describeListed(sb runtime.Sandbox, listed bool) string {
	if !listed {
		return "not listed"
	}
	return fmt.Sprintf("%s %s", sb.ID, sb.State)
}

func checkRelaunch(ctx context.Context, s *session) error {
	shared, err := s.sharedPods(ctx)
	if err != nil {
		return err
	}
	pods := shared.all()
	before, err := listInFreshProcess(ctx, s)
	if err != nil {
		return err
	}
	after, err := listInFreshProcess(ctx, s)
	if err != nil {
		return err
	}
	for _, pod := range pods {
		if _, err := findForPod(before, pod, ""); err != nil {
			return prefixed("first process", err)
		}
		if _, err := findForPod(after, pod, ""); err != nil {
			return prefixed("a relaunched adapter process: ipamd would lose track of the pod's IP", err)
		}
	}
	return nil
}

// listInFreshProcess launches a new adapter process, lists, and closes it.
func listInFreshProcess(ctx context.Context, s *session) ([]runtime.Sandbox, error) {
	client, item, err := s.launch(ctx, s.cfg.AdapterArgs)
	if err != nil {
		return nil, err
	}
	list, err := listWith(ctx, s, client)
	if closeErr := item.Release(ctx); closeErr != nil {
		s.note("close adapter process: %v", closeErr)
	}
	return list, err
}

func checkScale(ctx context.Context, s *session) error {
	if s.cfg.Scale < 0 {
		return skipf("scale check disabled (Scale < 0)")
	}
	if err := s.requirePods(); err != nil {
		return err
	}
	start := time.Now()
	pods, err := s.createPodBatch(ctx, s.cfg.Scale)
	if err != nil {
		return err
	}
	created := time.Since(start)
	start = time.Now()
	list, err := s.list(ctx)
	if err != nil {
		return err
	}
	listed := time.Since(start)
	s.note("created %d pods in %s; ListSandboxes returned %d sandboxes in %s",
		len(pods), created.Round(time.Millisecond), len(list), listed.Round(time.Millisecond))
	return expectAllListed(pods, list)
}

// expectAllListed requires every pod listed under its sandbox ID with its
// identity, and reports how many are not.
func expectAllListed(pods []fixture.Pod, list []runtime.Sandbox) error {
	var bad int
	var first error
	for _, pod := range pods {
		sb, ok := findByID(list, pod.SandboxID)
		switch {
		case !ok:
			bad++
			if first == nil {
				first = mismatch("not listed under its sandbox ID", pod.SandboxID, listedIDs(list))
			}
		case sandboxIdentity(sb) != specIdentity(pod.Spec):
			bad++
			if first == nil {
				first = mismatch("listed with another identity", specIdentity(pod.Spec), sandboxIdentity(sb))
			}
		}
	}
	if bad == 0 {
		return nil
	}
	var f *Failure
	if errors.As(first, &f) {
		f.Message = fmt.Sprintf("%d of %d pods are not listed correctly; the first is %s", bad, len(pods), f.Message)
	}
	return first
}

// createPodBatch creates n pods, DefaultCreateParallelism at a time, and
// records them as one resource that removes them just as parallel: 200 pods
// one by one would dominate the run.
func (s *session) createPodBatch(ctx context.Context, n int) ([]fixture.Pod, error) {
	var mu sync.Mutex
	var pods []fixture.Pod
	s.res.add(fmt.Sprintf("%d scale pods", n), func(ctx context.Context) error {
		mu.Lock()
		defer mu.Unlock()
		return forEachParallel(n, func(i int) error {
			if i >= len(pods) {
				return nil
			}
			return s.fixture.RemovePod(ctx, pods[i])
		})
	})
	err := forEachParallel(n, func(i int) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		fixtureCtx, cancel := s.fixtureCtx(ctx)
		defer cancel()
		pod, err := s.fixture.CreatePod(fixtureCtx, s.scalePodSpec(i))
		if err != nil {
			return fmt.Errorf("fixture %s: create pod: %w", s.fixture.Name(), err)
		}
		s.created.add(pod)
		mu.Lock()
		defer mu.Unlock()
		pods = append(pods, pod)
		return nil
	})
	mu.Lock()
	defer mu.Unlock()
	return pods, err
}

// scalePodSpec is the spec of the scale check's i-th pod: every fourth,
// from the second (so that a run of 3 has one), is in SystemNamespace, as
// a node runs a few kube-system pods among many others.
func (s *session) scalePodSpec(i int) fixture.PodSpec {
	if i%4 == 1 {
		return s.podSpecIn(SystemNamespace)
	}
	return s.podSpec()
}

// forEachParallel calls fn(0..n-1) from DefaultCreateParallelism
// goroutines and returns the first error with a count of the others.
func forEachParallel(n int, fn func(i int) error) error {
	next := make(chan int)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for range min(n, DefaultCreateParallelism) {
		wg.Go(func() {
			for i := range next {
				errs[i] = fn(i)
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	var failed int
	var first error
	for _, err := range errs {
		if err != nil {
			failed++
			first = cmp.Or(first, err)
		}
	}
	if failed > 1 {
		return fmt.Errorf("%d of %d failed, the first: %w", failed, n, first)
	}
	return first
}
