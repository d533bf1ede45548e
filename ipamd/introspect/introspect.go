// Package introspect is ipamd's operator API: JSON over HTTP. It shows the
// assignments by infra sandbox ID (the key DEL matches on), the pool, the
// runtime adapter's health with the last reconcile pass. For operators
// chasing a leak it compares ipamd, the runtime and the kernel (/v1/check)
// and says who holds an address and who held it before (/v1/who). The
// documents are the types of package introspect/schema; ipamctl renders them.
//
// Two handlers, for two audiences. Handler serves reads only, on the
// loopback TCP listener that every local process and every hostNetwork
// pod can reach; the calls that change state (a reconcile pass on demand,
// an operator's release) answer 403 there, naming the admin socket.
// AdminHandler serves the reads and those calls, on the admin socket
// (package adminsock), which only root and ipamd's uid can use.
//
// GET /v1/pool reads the datastore's one read model (Store.View), so its
// totals, groups and ranges add up. See docs/architecture.md for where
// this package sits.
package introspect

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sandboxipam/sandboxipam/ipamd/datastore"
	"github.com/sandboxipam/sandboxipam/ipamd/history"
	"github.com/sandboxipam/sandboxipam/ipamd/introspect/schema"
	"github.com/sandboxipam/sandboxipam/ipamd/ipsource"
	"github.com/sandboxipam/sandboxipam/ipamd/nodecheck"
	"github.com/sandboxipam/sandboxipam/ipamd/reconcile"
	"github.com/sandboxipam/sandboxipam/runtime"
)

// ErrNoAdapter: no runtime adapter is configured or found, so there is
// nothing to reconcile against.
var ErrNoAdapter = errors.New("no runtime adapter: reconciliation is off")

var errQueryEmpty = errors.New("q is empty: give an address, a sandbox ID (or a prefix of at least 6 characters) or a pod name (name or namespace/name)")

// Deps are what the handlers read. Optional ones may be nil.
type Deps struct {
	// Store is the datastore. Required.
	Store *datastore.Store
	// Source names the IP source ("static", "aws").
	Source string
	// Adapter describes the runtime adapter for /v1/adapter.
	Adapter func(ctx context.Context) schema.Adapter
	// Reconcile runs one pass now; nil answers 503 with ErrNoAdapter.
	// Served by AdminHandler only.
	Reconcile func(ctx context.Context, dryRun bool) (reconcile.Result, error)
	// Release frees one attachment on an operator's word once the evidence
	// allows it (ErrNotHeld, ErrStillInUse); nil answers 503. Served by
	// AdminHandler only.
	Release func(ctx context.Context, req schema.ReleaseRequest) (schema.Release, error)
	// AdminSocket is where the calls that change state are served, named
	// in the TCP listener's refusal.
	AdminSocket string
	// ENIs renders the aws source's ENIs; nil answers 404 (static source).
	ENIs func(ctx context.Context) (any, error)
	// Routes reports the routes to other nodes; nil answers 404
	// (routes.nodes is off).
	Routes func() schema.Routes
	// Metrics, when set, is served at /metrics.
	Metrics http.Handler
	// Ready says whether ipamd is ready to answer ADD, and when not, why
	// (GET /readyz); nil means always ready.
	Ready func() (ready bool, why []string)
	// Check compares ipamd, the runtime and the kernel (GET /v1/check);
	// nil answers 503.
	Check func(ctx context.Context) nodecheck.Outcome
	// Sandboxes lists the runtime's sandboxes through ipamd's adapter,
	// for who; nil means there is no adapter.
	Sandboxes func(ctx context.Context) ([]runtime.Sandbox, error)
	// History is the recent assignment events, for who; nil shows none.
	History *history.History
	// Now is the clock for ages and for the refusals' log limit; nil
	// means time.Now.
	Now func() time.Time
	// Logger; nil discards.
	Logger *slog.Logger
	// OnRefused, when set, is called for every call the TCP listener
	// refuses because it changes state (the metric; the log is limited).
	OnRefused func()
}

// Handler serves the reads of the introspection API, for the TCP
// listener. Every other method, on any path, answers 403 naming the admin
// socket and changes nothing.
func Handler(d Deps) http.Handler {
	h, mux := newMux(d)
	mux.HandleFunc("/", h.refuseChange)
	return mux
}

// AdminHandler serves the reads and the calls that change state, for the
// admin socket; its listener must admit only the node's administrator.
func AdminHandler(d Deps) http.Handler {
	h, mux := newMux(d)
	mux.HandleFunc("POST "+schema.PathReconcile, h.reconcile)
	mux.HandleFunc("POST "+schema.PathRelease, h.release)
	return mux
}

func newMux(d Deps) (*handlers, *http.ServeMux) {
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	h := &handlers{Deps: d}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+schema.PathPods, h.pods)
	mux.HandleFunc("GET "+schema.PathPool, h.pool)
	mux.HandleFunc("GET "+schema.PathAdapter, h.adapter)
	mux.HandleFunc("GET "+schema.PathENIs, h.enis)
	mux.HandleFunc("GET "+schema.PathRoutes, h.routes)
	mux.HandleFunc("GET "+schema.PathHealthz, h.healthz)
	mux.HandleFunc("GET "+schema.PathReadyz, h.readyz)
	mux.HandleFunc("GET "+schema.PathCheck, h.check)
	mux.HandleFunc("GET "+schema.PathWho, h.who)
	if d.Metrics != nil {
		mux.Handle("GET "+schema.PathMetrics, d.Metrics)
	}
	return h, mux
}

type handlers struct {
	Deps
	refusals refusalLog
}

func (h *handlers) pods(w http.ResponseWriter, _ *http.Request) {
	now := h.Now()
	as := h.Store.Assignments()
	out := schema.Pods{Pods: make([]schema.Pod, 0, len(as))}
	for _, a := range as {
		out.Pods = append(out.Pods, PodView(a, now))
	}
	slices.SortFunc(out.Pods, func(a, b schema.Pod) int {
		return strings.Compare(a.Network+"\x00"+a.SandboxID+"\x00"+a.IfName, b.Network+"\x00"+b.SandboxID+"\x00"+b.IfName)
	})
	writeJSON(w, http.StatusOK, out)
}

func (h *handlers) pool(w http.ResponseWriter, _ *http.Request) {
	// One read model, under one lock: the totals, groups and ranges of
	// one answer add up.
	v := h.Store.View()
	st := v.Stats
	rec := h.Store.Recovery()
	out := schema.Pool{
		Source: h.Source, Total: st.Total, Assigned: st.Assigned, Free: st.Free, Cooling: st.Cooling, Unproven: st.Quarantined,
		Groups:   []schema.Group{},
		Recovery: schema.Recovery{Checkpoint: string(rec.Checkpoint), Detail: rec.Detail, Assignments: rec.Assignments, Unproven: rec.Quarantined},
	}
	pr := v.Proof
	out.Proof = schema.Proof{Unproven: pr.Unproven, Quarantined: pr.Quarantined, Waiting: pr.Waiting}
	// Every free count is the view's (datastore.freeOf's one rule): the
	// groups once left quarantined addresses out and said free 1 where
	// the families said free 0.
	for _, g := range v.ByGroup() {
		out.Groups = append(out.Groups, schema.Group{Group: g.Group, Total: clampInt(g.Total), Assigned: clampInt(g.Assigned),
			Cooling: clampInt(g.Cooling), Free: clampInt(g.Free)})
	}
	out.Families, out.Ranges = RangesView(v.Ranges)
	out.Waiting = h.Store.PoolWaiting()
	writeJSON(w, http.StatusOK, out)
}

func (h *handlers) routes(w http.ResponseWriter, _ *http.Request) {
	if h.Routes == nil {
		writeError(w, http.StatusNotFound, errors.New("ipamd keeps no routes to other nodes: routes.nodes is false"))
		return
	}
	writeJSON(w, http.StatusOK, h.Routes())
}

func (h *handlers) adapter(w http.ResponseWriter, r *http.Request) {
	if h.Adapter == nil {
		writeError(w, http.StatusServiceUnavailable, ErrNoAdapter)
		return
	}
	writeJSON(w, http.StatusOK, h.Adapter(r.Context()))
}

func (h *handlers) enis(w http.ResponseWriter, r *http.Request) {
	if h.ENIs == nil {
		writeError(w, http.StatusNotFound, errors.New("the ENI view needs ipSource.type aws; this ipamd runs "+h.Source))
		return
	}
	enis, err := h.ENIs(r.Context())
	if err != nil {
		writeError(w, http.StatusInternalServerError, err)
		return
	}
	writeJSON(w, http.StatusOK, enis)
}

// RangesView sums the pool's blocks per family and lists those of more
// than one address (a static CIDR, a delegated prefix; the aws source's
// secondary IPs are blocks of one, counted in the families only).
func RangesView(rs []datastore.RangeInfo) ([]schema.Family, []schema.Range) {
	families := []schema.Family{}
	ranges := []schema.Range{}
	index := map[string]int{}
	for _, r := range rs {
		if r.Retiring {
			// Not the pool's any more: listed, never counted as free.
			ranges = append(ranges, schema.Range{Prefix: r.Range.Prefix.String(), Family: r.Family, Group: r.Range.Group,
				First: r.Range.First.String(), Last: r.Range.Last.String(), Size: r.Size, Assigned: r.Assigned, Retiring: true})
			continue
		}
		free := r.Free
		i, ok := index[r.Family]
		if !ok {
			i = len(families)
			index[r.Family] = i
			families = append(families, schema.Family{Family: r.Family})
		}
		f := &families[i]
		f.Total, f.Assigned = ipsource.SatAdd(f.Total, r.Size), f.Assigned+r.Assigned
		f.Cooling, f.Quarantined, f.Free = f.Cooling+r.Cooling, f.Quarantined+r.Quarantined, ipsource.SatAdd(f.Free, free)
		if r.Size <= 1 {
			continue
		}
		v := schema.Range{Prefix: r.Range.Prefix.String(), Family: r.Family, Group: r.Range.Group,
			First: r.Range.First.String(), Last: r.Range.Last.String(),
			Size: r.Size, Assigned: r.Assigned, Cooling: r.Cooling, Quarantined: r.Quarantined, Free: free}
		if r.Range.Gateway.IsValid() {
			v.Gateway = r.Range.Gateway.String()
		}
		ranges = append(ranges, v)
	}
	slices.SortFunc(families, func(a, b schema.Family) int { return strings.Compare(a.Family, b.Family) })
	return families, ranges
}

// PodView renders one assignment.
func PodView(a datastore.Assignment, now time.Time) schema.Pod {
	age := now.Sub(a.AssignedAt)
	p := schema.Pod{
		SandboxID: a.SandboxID, Network: a.Network, IfName: a.IfName,
		Name: a.Pod.Name, Namespace: a.Pod.Namespace, UID: a.Pod.UID,
		IP: a.Address.IP.String(), Group: a.Address.Group,
		AssignedAt: a.AssignedAt, AgeSeconds: age.Seconds(), AgeFormatted: age.Round(time.Second).String(),
	}
	if a.Address.Subnet.IsValid() {
		p.Prefix = a.Address.IP.String() + "/" + strconv.Itoa(a.Address.Subnet.Bits())
	}
	if a.Address.Gateway.IsValid() {
		p.Gateway = a.Address.Gateway.String()
	}
	for _, addr := range a.All() {
		p.IPs = append(p.IPs, addr.IP.String())
		prefix := addr.IP.String()
		if addr.Subnet.IsValid() {
			prefix += "/" + strconv.Itoa(addr.Subnet.Bits())
		}
		p.Prefixes = append(p.Prefixes, prefix)
	}
	return p
}

// ReconcileView renders one reconcile pass.
func ReconcileView(r reconcile.Result, now time.Time) schema.Reconcile {
	out := schema.Reconcile{At: r.At, DryRun: r.DryRun, Listed: r.Listed, Adopted: r.Adopted, Error: r.Err, Released: []schema.Pod{},
		Confirmed: r.Confirmed, Conflicts: r.Conflicts, Quarantined: r.Quarantined, Unproven: r.Unproven,
		Unaccounted: r.Unaccounted, Missing: r.Missing}
	for _, a := range r.Released {
		out.Released = append(out.Released, PodView(a, now))
	}
	return out
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

func writeError(w http.ResponseWriter, code int, err error) {
	writeJSON(w, code, schema.Error{Error: err.Error()})
}

// healthz answers while ipamd's HTTP side runs: a liveness probe.
func (h *handlers) healthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write([]byte("ok\n"))
}

// readyz answers 200 when ipamd can serve ADD, else 503 with one line per
// unmet condition: a readiness probe, and what the installer waits for.
func (h *handlers) readyz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if h.Ready == nil {
		_, _ = w.Write([]byte("ready\n"))
		return
	}
	ready, why := h.Ready()
	if ready {
		_, _ = w.Write([]byte("ready\n"))
		return
	}
	w.WriteHeader(http.StatusServiceUnavailable)
	_, _ = w.Write([]byte("not ready:\n"))
	for _, line := range why {
		_, _ = w.Write([]byte("- " + line + "\n"))
	}
}

// clampInt turns a saturating count into the schema's int, saturating at
// MaxInt (an IPv6 /64 holds 2^64 addresses).
func clampInt(n uint64) int { return int(min(n, math.MaxInt)) }
