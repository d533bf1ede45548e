package daemon_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	ipamdv1 "github.com/sandboxipam/sandboxipam/ipamd/api/v1"
	"github.com/sandboxipam/sandboxipam/ipamd/api/wire"
	"github.com/sandboxipam/sandboxipam/ipamd/ctl"
	"github.com/sandboxipam/sandboxipam/ipamd/introspect/api"
)

// The infra sandbox IDs of the seed bug report's two coredns pods: the
// IDs the CNI plugin received, never the application containers' IDs.
const (
	sandboxA = "93e629d853d9f70464dd5b54987533ffe87930cb28a6414ddb48c94b69845e85"
	sandboxB = "c32c237fb5293478da938e388f6e22486790facba0d178ff24271829865976cf"
)

// TestSeedScenarioRealBinary replays the bug report against the real
// binary: IPs are recorded under sandbox IDs, ipamd is SIGKILLed, and
// after the restart a DEL by sandbox ID releases (not "unknown pod"),
// while the pod deleted during the outage is reclaimed by the reconciler.
func TestSeedScenarioRealBinary(t *testing.T) {
	bin := buildIpamd(t)
	n := newNode(t, "198.18.0.0/28")
	n.cfg.Reconcile.Grace = time.Second
	n.cfg.Reconcile.Interval = 200 * time.Millisecond
	n.cfg.Introspection.Address = freeLoopbackAddr(t)
	n.cfg.Log.Level = "info"
	cfgPath := n.writeConfig()
	logPath := filepath.Join(n.dir, "ipamd.log")
	cni := cniClient{socket: n.cfg.Socket}
	intro := ctl.New(n.cfg.Introspection.Address, nil)
	ctx := t.Context()

	n.addSandbox(sandboxA)
	n.addSandbox(sandboxB)
	p := startBinary(t, bin, cfgPath, logPath, cni, intro)
	initial := mustPool(t, intro)
	if initial.Total != 14 || initial.Assigned != 0 || initial.Free != 14 {
		t.Fatalf("initial pool = %+v, want 14 total, 14 free", initial)
	}
	if ip, err := cni.add(ctx, sandboxA); err != nil || ip != "198.18.0.1/28" {
		t.Fatalf("ADD A = %q, %v; want 198.18.0.1/28", ip, err)
	}
	if ip, err := cni.add(ctx, sandboxB); err != nil || ip != "198.18.0.2/28" {
		t.Fatalf("ADD B = %q, %v; want 198.18.0.2/28", ip, err)
	}
	pods := mustPods(t, intro)
	if got := podsByID(pods); len(got) != 2 || got[sandboxA] != "198.18.0.1/28" || got[sandboxB] != "198.18.0.2/28" {
		t.Fatalf("/v1/pods before the crash = %v", got)
	}

	p.kill()
	n.removeSandbox(sandboxB) // pod B is deleted while ipamd is down: no DEL reaches it
	p = startBinary(t, bin, cfgPath, logPath, cni, intro)

	if got := podsByID(mustPods(t, intro)); len(got) != 2 || got[sandboxA] != "198.18.0.1/28" {
		t.Fatalf("/v1/pods after restart = %v, want both assignments recovered from the checkpoint", got)
	}
	released, err := cni.del(ctx, sandboxA)
	if err != nil || !released {
		t.Fatalf("DEL A by its sandbox ID after restart = released %v, %v; want released", released, err)
	}
	var chk ipamdv1.CheckResponse
	err = cni.do(ctx, wire.MethodCheck, &ipamdv1.CheckRequest{Attachment: attachment(sandboxA)}, &chk)
	var werr *wire.Error
	if !errors.As(err, &werr) || werr.Code != wire.CodeNotFound {
		t.Fatalf("CHECK A after DEL = %v, want NotFound", err)
	}

	// The reconciler's pass reports its releases once they are durable;
	// wait for that rather than for B to vanish from memory.
	waitFor(t, "the reconciler to release B once its grace has passed", func() bool {
		return strings.Contains(scrape(t, n.cfg.Introspection.Address), "ipamd_reconcile_released_ips_total 1\n")
	})
	if got := podsByID(mustPods(t, intro)); len(got) != 0 {
		t.Fatalf("/v1/pods after B's release = %v, want none", got)
	}
	waitFor(t, "the pool to return to where it began", func() bool {
		final := mustPool(t, intro)
		return final.Total == initial.Total && final.Assigned == 0 && final.Free == initial.Free && final.Cooling == 0
	})
	adapter, err := intro.Adapter(ctx)
	if err != nil || adapter.Health.State != "healthy" || adapter.Runtime.RuntimeName != "fake-runtime" {
		t.Fatalf("/v1/adapter = %+v, %v", adapter, err)
	}
	if metrics := scrape(t, n.cfg.Introspection.Address); !strings.Contains(metrics, "ipamd_reconcile_released_ips_total 1\n") {
		t.Errorf("the reconciler released more than B:\n%s\n%s", grepLines(metrics, "ipamd_reconcile"), p.logTail())
	}
	p.stop()
}

func mustPool(t testing.TB, c *ctl.Client) api.Pool {
	t.Helper()
	p, err := c.Pool(t.Context())
	if err != nil {
		t.Fatalf("GET /v1/pool: %v", err)
	}
	return p
}

func mustPods(t testing.TB, c *ctl.Client) api.Pods {
	t.Helper()
	p, err := c.Pods(t.Context())
	if err != nil {
		t.Fatalf("GET /v1/pods: %v", err)
	}
	return p
}

// podsByID maps sandbox ID to address (CIDR notation).
func podsByID(p api.Pods) map[string]string {
	out := make(map[string]string, len(p.Pods))
	for _, pod := range p.Pods {
		out[pod.SandboxID] = pod.Prefix
	}
	return out
}

func grepLines(text, substr string) string {
	var out []string
	for line := range strings.SplitSeq(text, "\n") {
		if strings.Contains(line, substr) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}
