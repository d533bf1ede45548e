package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/sandboxipam/sandboxipam/internal/testsupport"
)

// The traffic between the pods while the cluster is upgraded: every pod
// asks one pod on each other node, over a new TCP connection each time,
// for its name (agnhost netexec's /hostname), once per probeInterval,
// IPv4 and IPv6 in turn. The connection is made from inside the asking
// pod's network namespace, so every packet takes the pods' own path
// (their veths, their nodes' routes, the wire between the nodes), and the
// test holds every failure's exact time, which a prober pod's log would
// give only to the second.
const (
	netexecPort   = 8080
	probeInterval = 200 * time.Millisecond
	probeTimeout  = 2 * time.Second
	// maxInterruption bounds how long a pair's probes may time out in a
	// row. The goal is none: ipamd's restart must not touch the data
	// plane, and any other failure (refused, unreachable, reset, another
	// pod answering) fails the test at once. But on this machine, two
	// cores at load 50 to 80 while the cluster rolls, a probe now and
	// then times out, as often on paths through nodes whose ipamd runs
	// undisturbed as through the one restarting (BENCHMARKS.md, "Upgrade
	// and rollback"); the longest seen was 2.5 s. A route withdrawn for
	// ipamd's restart would cut a path for the restart's length, 6 to 20
	// s a node, and fail this bound.
	maxInterruption = 5 * time.Second
)

// netexecDeployment is the spread Deployment of n agnhost netexec pods,
// ready once netexec answers.
func netexecDeployment(n int32) *appsv1.Deployment {
	d := spreadDeployment(n, "")
	c := &d.Spec.Template.Spec.Containers[0]
	c.Image = agnhostRef
	c.Args = []string{"netexec", fmt.Sprintf("--http-port=%d", netexecPort)}
	c.ReadinessProbe = &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/hostname", Port: intstr.FromInt32(netexecPort)}},
		PeriodSeconds: 2,
	}
	return d
}

// probePair is one pod asking another, on another node.
type probePair struct {
	from, to clusterPod
	client   *http.Client
	// Guarded by prober.mu.
	fails   []probeFail
	outages []outage
	open    time.Time // the first failed probe of an outage not yet over
}

// probeFail is one failed probe.
type probeFail struct {
	at       time.Time
	from, to clusterPod
	ip       string
	err      string
	timeout  bool // no answer in probeTimeout; else refused, unreachable, reset or a wrong answer
}

// outage is the span from a pair's first failed probe to its next
// successful one (to is zero while it lasts).
type outage struct{ from, to time.Time }

// prober runs the probes of every pair until stopped.
type prober struct {
	began  time.Time
	pairs  []*probePair
	probes atomic.Int64
	mu     sync.Mutex
	stop   chan struct{}
	wg     sync.WaitGroup
}

// startProbes pairs every pod of state with one pod on each other node
// (its index among its node's pods, modulo theirs), waits until every
// pair has answered once in each family, and starts probing.
func (c *cluster) startProbes(t *testing.T, state clusterState) *prober {
	t.Helper()
	p := &prober{stop: make(chan struct{})}
	for _, n := range c.nodes {
		for i, name := range state.onNode(n.name) {
			for _, m := range c.nodes {
				if m == n {
					continue
				}
				targets := state.onNode(m.name)
				from, to := state.pods[name], state.pods[targets[i%len(targets)]]
				p.pairs = append(p.pairs, &probePair{from: from, to: to, client: &http.Client{
					Transport: &http.Transport{DialContext: netnsDialer(podNetNS(from)), DisableKeepAlives: true},
					Timeout:   probeTimeout,
				}})
			}
		}
	}
	testsupport.WaitFor(t, 2*time.Minute, fmt.Sprintf("each of %d pod pairs answers in both families", len(p.pairs)), func(ctx context.Context) error {
		for _, pp := range p.pairs {
			for _, ip := range pp.to.IPs {
				if err := pp.probe(ctx, ip); err != nil {
					return err
				}
			}
		}
		return nil
	})
	p.began = time.Now()
	for _, pp := range p.pairs {
		p.wg.Add(1)
		go p.run(pp)
	}
	c.logf(t, "traffic: %d pod pairs (every pod to one pod on each other node), each probed every %v, IPv4 and IPv6 in turn", len(p.pairs), probeInterval)
	return p
}

// probe asks pp.to, at ip, for its name from inside pp.from.
func (pp *probePair) probe(ctx context.Context, ip string) error {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	u := "http://" + net.JoinHostPort(ip, fmt.Sprint(netexecPort)) + "/hostname"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := pp.client.Do(req)
	if err != nil {
		return fmt.Errorf("%s (%s) -> %s: %w", pp.from.Name, pp.from.Node, u, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 256))
	if err != nil {
		return fmt.Errorf("%s -> %s: %w", pp.from.Name, u, err)
	}
	if resp.StatusCode != http.StatusOK || strings.TrimSpace(string(body)) != pp.to.Name {
		return fmt.Errorf("%s -> %s: %s %q, want pod %s", pp.from.Name, u, resp.Status, body, pp.to.Name)
	}
	return nil
}

func (p *prober) run(pp *probePair) {
	defer p.wg.Done()
	tick := time.NewTicker(probeInterval)
	defer tick.Stop()
	for k := 0; ; k++ {
		select {
		case <-p.stop:
			return
		case <-tick.C:
		}
		ip := pp.to.IPs[k%len(pp.to.IPs)]
		at := time.Now()
		err := pp.probe(context.Background(), ip)
		p.probes.Add(1)
		p.mu.Lock()
		switch {
		case err != nil:
			var ne net.Error
			timeout := errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
			pp.fails = append(pp.fails, probeFail{at: at, from: pp.from, to: pp.to, ip: ip, err: err.Error(), timeout: timeout})
			if pp.open.IsZero() {
				pp.open = at
			}
		case !pp.open.IsZero():
			pp.outages = append(pp.outages, outage{from: pp.open, to: at})
			pp.open = time.Time{}
		}
		p.mu.Unlock()
	}
}

// halt stops every probe and waits for them.
func (p *prober) halt() {
	select {
	case <-p.stop:
	default:
		close(p.stop)
	}
	p.wg.Wait()
}

// trafficFigures are what the probes saw in a span of time.
type trafficFigures struct {
	probes  int64
	fails   []probeFail
	longest time.Duration // the longest outage that overlaps the span
	// rolling counts the failures on a path to or from a node whose
	// ipamd was being replaced at the time (phase figures only).
	rolling int
}

// hard counts the failures that were not timeouts.
func (f trafficFigures) hard() int {
	n := 0
	for _, fl := range f.fails {
		if !fl.timeout {
			n++
		}
	}
	return n
}

// mark is the probe count now, for figures over a span.
func (p *prober) mark() int64 { return p.probes.Load() }

// figures are the failures from since on, and the longest outage that
// overlaps that span (one still open counts up to now).
func (p *prober) figures(since time.Time, mark int64) trafficFigures {
	p.mu.Lock()
	defer p.mu.Unlock()
	f := trafficFigures{probes: p.probes.Load() - mark}
	now := time.Now()
	for _, pp := range p.pairs {
		for _, fl := range pp.fails {
			if !fl.at.Before(since) {
				f.fails = append(f.fails, fl)
			}
		}
		outs := slices.Clone(pp.outages)
		if !pp.open.IsZero() {
			outs = append(outs, outage{from: pp.open, to: now})
		}
		for _, o := range outs {
			if o.to.After(since) {
				f.longest = max(f.longest, o.to.Sub(o.from))
			}
		}
	}
	slices.SortFunc(f.fails, func(a, b probeFail) int { return a.at.Compare(b.at) })
	return f
}

// errTraffic: a probe between two running pods failed.
var errTraffic = errors.New("pod-to-pod traffic failed")

// check fails on any probe that failed otherwise than by a timeout, and
// on any pair whose probes failed for longer than maxInterruption.
func (f trafficFigures) check(began time.Time) error {
	if f.hard() == 0 && f.longest <= maxInterruption {
		return nil
	}
	return fmt.Errorf("%w: %s", errTraffic, f.describe(began))
}

// describe lists the failures (the first 20), with their times since
// began.
func (f trafficFigures) describe(began time.Time) string {
	var lines []string
	for i, fl := range f.fails {
		if i == 20 {
			lines = append(lines, fmt.Sprintf("... and %d more", len(f.fails)-i))
			break
		}
		lines = append(lines, fmt.Sprintf("[%s] %s", fl.at.Sub(began).Round(time.Millisecond), fl.err))
	}
	return fmt.Sprintf("%d of %d probes failed (%d not a timeout), the longest interruption %v (bound %v):\n  %s",
		len(f.fails), f.probes, f.hard(), f.longest.Round(time.Millisecond), maxInterruption, strings.Join(lines, "\n  "))
}
