package reclaim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/clock"

	"github.com/sandboxipam/sandboxipam/cluster/api/ipamdlease"
	"github.com/sandboxipam/sandboxipam/cluster/api/v1alpha1"
)

// AliveSeen is condition (e)'s input: what the reclaimer has heard from a
// node's ipamd on the data plane, and the operator's word on the block.
type AliveSeen struct {
	// Addresses are where the node's ipamd Lease says it answers
	// (ipamdlease.LeaseAddressesAnnotation), as last seen; none when it
	// records none (or the Lease was never seen).
	Addresses []string
	// Confirmed is the block's ipamdlease.ConfirmNodeGoneAnnotation: an
	// operator's word that the machine of the Node with this UID is gone.
	Confirmed string
	// AliveAt is when, by the reclaimer's clock, an address last answered
	// as the block's node (zero: never), and AliveBy says which and what.
	AliveAt time.Time
	AliveBy string
	// SilentSince is when the current run of probes in which no address
	// answered at all began (zero: the last probe had an answer, or none
	// was made); Silence is the last of those failures, in words.
	SilentSince time.Time
	Silence     string
	// Other is the last probe's answer from another machine (another
	// node, or this node's name under another UID without the block),
	// when nothing answered as the block's node: it is neither alive nor
	// dead (see nodeDead).
	Other string
}

// nodeDead is condition (e): positive evidence, from a channel other than
// the API server, that the node no longer runs pods on the block. A Lease
// says only that the API server cannot hear the node; a node cut off from
// the API server alone still runs its pods on the block's addresses.
//
//   - An answer as the block's node within the grace keeps the block,
//     whatever else holds, the operator's word included: the node says it
//     runs. A forged answer can only delay a reclaim.
//   - An operator's confirmation naming the block's Node UID is evidence.
//   - Otherwise the node's ipamd must have answered on none of the
//     addresses its Lease records, not even with a refusal, for longer
//     than the grace, the latest probe included.
//   - An answer from another machine on a recorded address (another
//     node's ipamd, or anything else that speaks HTTP there) proves
//     neither: the address may have moved to another machine, so it says
//     nothing of whether the node runs, and since anyone can send it, it
//     must never make a reclaim possible.
//   - A Lease recording no address leaves only the operator.
func nodeDead(in Input) (string, bool) {
	a, node := in.Alive, fmt.Sprintf("node %s (UID %s)", in.BlockNodeName, in.BlockNodeUID)
	where := strings.Join(a.Addresses, ", ")
	switch {
	case !a.AliveAt.IsZero() && in.Now.Sub(a.AliveAt) <= in.Grace:
		// A pass's time is taken before its probes, so an answer of this
		// pass is "0s ago", not a negative time.
		return fmt.Sprintf("the ipamd of %s answered alive %s ago (%s), within the grace %s: the node may still run pods on %s",
			node, max(in.Now.Sub(a.AliveAt), 0), a.AliveBy, in.Grace, in.BlockCIDR), false
	case a.Confirmed == in.BlockNodeUID:
		return fmt.Sprintf("an operator confirmed %s gone (annotation %s on the block)", node, ipamdlease.ConfirmNodeGoneAnnotation), true
	case len(a.Addresses) == 0:
		return fmt.Sprintf("the ipamd Lease of %s records no address to ask it on (annotation %s): only an operator's confirmation (annotation %s: %s on the block) can prove the node gone%s",
			node, ipamdlease.LeaseAddressesAnnotation, ipamdlease.ConfirmNodeGoneAnnotation, in.BlockNodeUID, staleConfirm(in)), false
	case a.SilentSince.IsZero() && a.Other != "":
		return fmt.Sprintf("another machine answered on an address of %s (%s): neither alive nor gone; confirm with annotation %s: %s on the block%s",
			node, a.Other, ipamdlease.ConfirmNodeGoneAnnotation, in.BlockNodeUID, staleConfirm(in)), false
	case a.SilentSince.IsZero():
		return fmt.Sprintf("the ipamd of %s not yet asked on %s", node, where), false
	case in.Now.Sub(a.SilentSince) <= in.Grace:
		return fmt.Sprintf("no answer from the ipamd of %s on %s for %s, not longer than the grace %s", node, where, in.Now.Sub(a.SilentSince), in.Grace), false
	default:
		return fmt.Sprintf("no answer from the ipamd of %s on %s for %s, longer than the grace %s (last: %s)",
			node, where, in.Now.Sub(a.SilentSince), in.Grace, a.Silence), true
	}
}

// staleConfirm names a confirmation that names another UID: the word on
// a former Node of that name, which proves nothing of this one.
func staleConfirm(in Input) string {
	if c := in.Alive.Confirmed; c != "" && c != in.BlockNodeUID {
		return fmt.Sprintf(" (the annotation names UID %s, not the block's)", c)
	}
	return ""
}

// maxAnswer bounds the body read of an alive answer.
const maxAnswer = 64 << 10

// aliveWatch is what the reclaimer has heard from each gone node's ipamd,
// by node name, and the client it asks with.
type aliveWatch struct {
	clock  clock.PassiveClock
	client *http.Client
	mu     sync.Mutex
	seen   map[string]AliveSeen
}

func newAliveWatch(c clock.PassiveClock, timeout time.Duration) *aliveWatch {
	// No proxy (the node is asked directly, never through whatever
	// HTTP_PROXY says), no redirect followed, no connection kept.
	tr := &http.Transport{Proxy: nil, DisableKeepAlives: true, DialContext: (&net.Dialer{Timeout: timeout}).DialContext,
		ResponseHeaderTimeout: timeout, MaxResponseHeaderBytes: 8 << 10}
	return &aliveWatch{clock: c, seen: map[string]AliveSeen{},
		client: &http.Client{Transport: tr, Timeout: timeout, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// seenFor is condition (e)'s input for block b.
func (w *aliveWatch) seenFor(b v1alpha1.IPBlock) AliveSeen {
	w.mu.Lock()
	a := w.seen[b.Spec.NodeName]
	w.mu.Unlock()
	a.Addresses = slices.Clone(a.Addresses)
	a.Confirmed = b.Annotations[ipamdlease.ConfirmNodeGoneAnnotation]
	return a
}

// target is one gone node to ask, and its block's claim.
type target struct {
	node, uid string
	cidrs     []string
	addrs     []string
}

// probeAlive asks, concurrently, the ipamd of every node that condition
// (a) says is gone, on the addresses its ipamd Lease records, and records
// the answers; it forgets the nodes no longer gone.
func (r *Reclaimer) probeAlive(ctx context.Context, objs []runtime.Object) {
	targets := r.aliveTargets(objs)
	var wg sync.WaitGroup
	results := make([]probeResult, len(targets))
	for i, t := range targets {
		wg.Go(func() { results[i] = r.alive.probe(ctx, t) })
	}
	wg.Wait()
	if ctx.Err() != nil {
		// The pass was cut short: a probe cut with it heard nothing,
		// which is not silence.
		return
	}
	r.alive.record(targets, results)
}

// aliveTargets are the gone nodes of objs's blocks, with the addresses
// their ipamd Lease records (the last known when it is gone).
func (r *Reclaimer) aliveTargets(objs []runtime.Object) []target {
	byNode := map[string]*target{}
	var out []*target
	for _, obj := range objs {
		b, err := v1alpha1.BlockFrom(obj.(*unstructured.Unstructured))
		if err != nil {
			continue
		}
		if n, err := r.nodes.Get(b.Spec.NodeName); err == nil && string(n.UID) == b.Spec.NodeUID {
			continue
		}
		if t := byNode[b.Spec.NodeName]; t != nil {
			t.cidrs = append(t.cidrs, b.Spec.CIDR)
			continue
		}
		t := &target{node: b.Spec.NodeName, uid: b.Spec.NodeUID, cidrs: []string{b.Spec.CIDR}, addrs: r.aliveAddresses(b.Spec.NodeName)}
		byNode[t.node] = t
		out = append(out, t)
	}
	res := make([]target, 0, len(out))
	for _, t := range out {
		res = append(res, *t)
	}
	return res
}

// aliveAddresses are the addresses node's ipamd Lease records; when the
// Lease is gone, the ones last seen. A record that does not parse counts
// as none: nothing can be asked, so only an operator can confirm.
func (r *Reclaimer) aliveAddresses(node string) []string {
	l, err := r.ipamdLeases.Get(ipamdlease.IpamdLeaseName(node))
	if err != nil {
		r.alive.mu.Lock()
		defer r.alive.mu.Unlock()
		return r.alive.seen[node].Addresses
	}
	addrs, err := ipamdlease.ParseAddresses(l.Annotations[ipamdlease.LeaseAddressesAnnotation])
	if err != nil {
		r.log.Warn("reclaimer: an ipamd Lease records addresses that do not parse; its node can be proven gone only by an operator",
			"lease", l.Namespace+"/"+l.Name, "err", err)
		return nil
	}
	out := make([]string, 0, len(addrs))
	for _, a := range addrs {
		out = append(out, a.String())
	}
	return out
}

// probeResult is what one round of asking one node heard.
type probeResult struct {
	// alive names the address that answered as the node, and what it
	// said; other an answer from another machine; silence why every
	// address failed.
	alive, other, silence string
}

// probe asks every address of t once, at the same time.
func (w *aliveWatch) probe(ctx context.Context, t target) probeResult {
	answers := make([]answer, len(t.addrs))
	var wg sync.WaitGroup
	for i, a := range t.addrs {
		wg.Go(func() { answers[i] = w.ask(ctx, a) })
	}
	wg.Wait()
	var res probeResult
	var fails, others []string
	for i, a := range answers {
		switch {
		case a.err != nil:
			fails = append(fails, a.err.Error())
		case a.alive.Node == t.node && (a.alive.NodeUID == t.uid || a.alive.NodeUID == "") || holdsAny(a.alive, t.cidrs):
			res.alive = fmt.Sprintf("%s: node %s, UID %q, blocks %v", t.addrs[i], a.alive.Node, a.alive.NodeUID, a.alive.Blocks)
		default:
			others = append(others, fmt.Sprintf("%s: %s", t.addrs[i], a.what))
		}
	}
	if res.alive == "" && len(others) > 0 {
		res.other = strings.Join(others, "; ")
	}
	if res.alive == "" && len(others) == 0 {
		res.silence = strings.Join(fails, "; ")
	}
	return res
}

// holdsAny: the answer names one of cidrs among its blocks. A machine
// that says it holds the block (the node registered again under another
// UID, still running the pods of its former self) is alive for it.
func holdsAny(a ipamdlease.Alive, cidrs []string) bool {
	for _, c := range a.Blocks {
		if slices.Contains(cidrs, c) {
			return true
		}
	}
	return false
}

// answer is one address's: a transport failure (err), or an HTTP answer,
// decoded into alive when it is one, described in what.
type answer struct {
	err   error
	alive ipamdlease.Alive
	what  string
}

// errNoAnswer marks an address where nothing answered over HTTP.
var errNoAnswer = errors.New("no answer")

func (w *aliveWatch) ask(ctx context.Context, addr string) answer {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+ipamdlease.AlivePath, nil)
	if err != nil {
		return answer{err: fmt.Errorf("%s: %w: %w", addr, errNoAnswer, err)}
	}
	resp, err := w.client.Do(req)
	if err != nil {
		return answer{err: fmt.Errorf("%s: %w: %w", addr, errNoAnswer, err)}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	switch {
	case err != nil:
		return answer{what: fmt.Sprintf("HTTP %d, body unread: %v", resp.StatusCode, err)}
	case resp.StatusCode != http.StatusOK:
		return answer{what: fmt.Sprintf("HTTP %d", resp.StatusCode)}
	}
	var a ipamdlease.Alive
	if err := json.Unmarshal(body, &a); err != nil {
		return answer{what: fmt.Sprintf("HTTP 200, not an alive answer: %v", err)}
	}
	return answer{alive: a, what: fmt.Sprintf("node %s, UID %q", a.Node, a.NodeUID)}
}

// record keeps each target's round, at the reclaimer's clock, and forgets
// the nodes not asked (not gone any more, or without a block).
func (w *aliveWatch) record(targets []target, results []probeResult) {
	now := w.clock.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	next := make(map[string]AliveSeen, len(targets))
	for i, t := range targets {
		a, res := w.seen[t.node], results[i]
		if !slices.Equal(a.Addresses, t.addrs) {
			// New addresses: what was heard on the old ones proves
			// nothing of silence on these.
			a.SilentSince, a.Silence = time.Time{}, ""
		}
		a.Addresses, a.Other = t.addrs, res.other
		switch {
		case len(t.addrs) == 0:
		case res.alive != "":
			a.AliveAt, a.AliveBy, a.SilentSince, a.Silence = now, res.alive, time.Time{}, ""
		case res.other != "":
			a.SilentSince, a.Silence = time.Time{}, ""
		default:
			if a.SilentSince.IsZero() {
				a.SilentSince = now
			}
			a.Silence = res.silence
		}
		next[t.node] = a
	}
	w.seen = next
}
