package introspect

import (
	"context"
	"net/http"
	"net/netip"
	"strings"

	"github.com/sandboxipam/sandboxipam/ipamd/datastore"
	"github.com/sandboxipam/sandboxipam/ipamd/history"
	"github.com/sandboxipam/sandboxipam/ipamd/introspect/schema"
	"github.com/sandboxipam/sandboxipam/ipamd/nodecheck"
	"github.com/sandboxipam/sandboxipam/runtime"
)

// minIDPrefix is the shortest sandbox ID prefix who accepts: crictl
// shows 13 characters, and shorter ones match too much.
const minIDPrefix = 6

// check serves GET /v1/check: ipamd, the runtime and the kernel compared.
func (h *handlers) check(w http.ResponseWriter, r *http.Request) {
	if h.Check == nil {
		writeError(w, http.StatusServiceUnavailable, ErrNoAdapter)
		return
	}
	writeJSON(w, http.StatusOK, CheckView(h.Check(r.Context())))
}

// CheckView renders a check's outcome.
func CheckView(o nodecheck.Outcome) schema.Check {
	out := schema.Check{At: o.At, Assignments: o.Assignments, Sandboxes: o.Sandboxes, PodLinks: o.PodLinks, Settling: o.Settling,
		Attempts: o.Attempts, Raced: o.Raced, Notes: o.Notes, Disagreements: make([]schema.Disagreement, 0, len(o.Disagreements)),
		NotCompared: make([]schema.NotCompared, 0, len(o.NotCompared))}
	for _, nc := range o.NotCompared {
		out.NotCompared = append(out.NotCompared, schema.NotCompared{Source: string(nc.Source), Reason: nc.Reason})
	}
	for _, d := range o.Disagreements {
		out.Disagreements = append(out.Disagreements, schema.Disagreement{Kind: string(d.Kind), Address: d.Address, SandboxID: d.SandboxID, Link: d.Link, Words: d.Words})
	}
	return out
}

// who serves GET /v1/who?q=: the holder of an address, a sandbox's or a
// pod's addresses, their sandboxes' state in the runtime, and their
// history.
func (h *handlers) who(w http.ResponseWriter, r *http.Request) {
	q := strings.TrimSpace(r.URL.Query().Get("q"))
	if q == "" {
		writeError(w, http.StatusBadRequest, errQueryEmpty)
		return
	}
	writeJSON(w, http.StatusOK, h.answerWho(r.Context(), q))
}

type whoQuery struct {
	kind  string
	match func(datastore.Assignment) bool
	event func(datastore.Event) bool
	sb    func(runtime.Sandbox) bool
}

func (h *handlers) answerWho(ctx context.Context, q string) schema.Who {
	var sandboxes []runtime.Sandbox
	out := schema.Who{Query: q, Holders: []schema.Holder{}, History: []schema.Event{}}
	if h.Sandboxes == nil {
		out.RuntimeError = ErrNoAdapter.Error()
	} else if sbs, err := h.Sandboxes(ctx); err != nil {
		out.RuntimeError = err.Error()
	} else {
		sandboxes = sbs
	}
	assignments := h.Store.Assignments()
	wq := h.readQuery(q, assignments, sandboxes)
	out.QueryKind = wq.kind
	held := map[string]bool{}
	now := h.Now()
	for _, a := range assignments {
		if !wq.match(a) {
			continue
		}
		held[a.SandboxID] = true
		holder := schema.Holder{Pod: PodView(a, now)}
		if sandboxes != nil {
			st := runtimeView(sandboxes, a.SandboxID)
			holder.Runtime = &st
		}
		out.Holders = append(out.Holders, holder)
	}
	for _, sb := range sandboxes {
		if wq.sb(sb) && !held[sb.ID] {
			if out.Sandboxes == nil {
				out.Sandboxes = map[string]schema.RuntimeSandbox{}
			}
			out.Sandboxes[sb.ID] = runtimeView(sandboxes, sb.ID)
		}
	}
	if h.History != nil {
		for _, e := range h.History.Select(wq.event) {
			out.History = append(out.History, eventView(e))
		}
		out.HistoryDropped = h.History.Dropped()
	}
	return out
}

// readQuery reads q as an address, else as a sandbox ID (or a prefix of
// at least minIDPrefix characters) that ipamd, its history or the runtime
// knows, else as a pod name (name or namespace/name).
func (h *handlers) readQuery(q string, as []datastore.Assignment, sbs []runtime.Sandbox) whoQuery {
	if ip, err := netip.ParseAddr(q); err == nil {
		ip = ip.Unmap()
		return whoQuery{kind: "address",
			match: func(a datastore.Assignment) bool { return a.Address.IP == ip },
			event: func(e datastore.Event) bool { return e.Assignment.Address.IP == ip },
			sb:    func(sb runtime.Sandbox) bool { return hasIP(sb, ip) }}
	}
	isID := func(id string) bool { return id == q || (len(q) >= minIDPrefix && strings.HasPrefix(id, q)) }
	sandboxQuery := whoQuery{kind: "sandbox",
		match: func(a datastore.Assignment) bool { return isID(a.SandboxID) },
		event: func(e datastore.Event) bool { return isID(e.Assignment.SandboxID) },
		sb:    func(sb runtime.Sandbox) bool { return isID(sb.ID) }}
	known := false
	for _, a := range as {
		known = known || isID(a.SandboxID)
	}
	for _, sb := range sbs {
		known = known || isID(sb.ID)
	}
	if !known && h.History != nil {
		known = len(h.History.Select(sandboxQuery.event)) > 0
	}
	if known {
		return sandboxQuery
	}
	return whoQuery{kind: "pod",
		match: func(a datastore.Assignment) bool { return history.PodMatches(a.Pod, q) },
		event: func(e datastore.Event) bool { return history.PodMatches(e.Assignment.Pod, q) },
		sb: func(sb runtime.Sandbox) bool {
			return history.PodMatches(datastore.Pod{Name: sb.Name, Namespace: sb.Namespace}, q)
		}}
}

func hasIP(sb runtime.Sandbox, ip netip.Addr) bool {
	for _, a := range sb.IPs {
		if a.Unmap() == ip {
			return true
		}
	}
	return false
}

func runtimeView(sbs []runtime.Sandbox, id string) schema.RuntimeSandbox {
	for _, sb := range sbs {
		if sb.ID != id {
			continue
		}
		v := schema.RuntimeSandbox{Listed: true, State: sb.State.String(), CreatedAt: sb.CreatedAt}
		for _, ip := range sb.IPs {
			v.IPs = append(v.IPs, ip.String())
		}
		return v
	}
	return schema.RuntimeSandbox{}
}

func eventView(e datastore.Event) schema.Event {
	a := e.Assignment
	v := schema.Event{At: e.At, Kind: string(e.Kind), Reason: e.Reason, IP: a.Address.IP.String(), SandboxID: a.SandboxID,
		Network: a.Network, IfName: a.IfName}
	if a.Pod.Name != "" {
		v.Pod = a.Pod.Namespace + "/" + a.Pod.Name
	}
	if e.Kind == datastore.EventAssigned && v.Reason == "" {
		v.Reason = "cni_add" // who assigned it, as releases say who freed it
	}
	return v
}
