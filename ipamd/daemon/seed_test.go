package daemon_test

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/internal/awslocal"
	"github.com/sandboxipam/sandboxipam/internal/testsupport"
	ipamdv1 "github.com/sandboxipam/sandboxipam/ipamd/api/v1"
	"github.com/sandboxipam/sandboxipam/ipamd/api/wire"
	"github.com/sandboxipam/sandboxipam/ipamd/config"
	"github.com/sandboxipam/sandboxipam/ipamd/introspect/client"
	"github.com/sandboxipam/sandboxipam/ipamd/introspect/schema"
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
	runSeedScenario(t, seedRun{
		node: newNode(t, "198.18.0.0/28"), initialTotal: 14, wantA: "198.18.0.1/28", wantB: "198.18.0.2/28",
	})
}

// TestSeedScenarioAWS is the same scenario with ipSource.type aws: the real
// binary's aws-sdk-go-v2 clients talk to awslocal's EC2 Query and IMDSv2
// servers on loopback, with static credentials from the SDK's own
// environment variables and a fixed region. The restarted ipamd adopts
// the ENIs and addresses EC2 reports and asks EC2 for nothing new.
//
// The aws settings reach ipamd as environment variables by their
// documented names, the VPC CNI alias WARM_IP_TARGET included, so the
// names config-reference prints are proven against the real binary.
func TestSeedScenarioAWS(t *testing.T) {
	cloud, err := awslocal.Start(awslocal.Options{Region: "us-west-2", InstanceType: "t3.medium"})
	if err != nil {
		t.Fatalf("start awslocal: %v", err)
	}
	t.Cleanup(func() { cloud.Close() })
	isolateSDK(t)
	// Anything not addressed to loopback would go to a proxy that is not
	// there (Go never proxies loopback), so no request can reach AWS.
	for _, v := range []string{"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"} {
		t.Setenv(v, "http://127.0.0.1:9")
	}
	t.Setenv("NO_PROXY", "")
	t.Setenv("no_proxy", "")
	t.Setenv("IPAMD_IPSOURCE_AWS_REGION", cloud.Region())
	t.Setenv("IPAMD_IPSOURCE_AWS_EC2ENDPOINT", cloud.EC2Endpoint())
	t.Setenv("IPAMD_IPSOURCE_AWS_IMDSENDPOINT", cloud.IMDSEndpoint())
	t.Setenv("WARM_IP_TARGET", "4")
	t.Setenv("MINIMUM_IP_TARGET", "") // empty: unset, whatever the machine's environment says
	t.Setenv("WARM_ENI_TARGET", "")

	n := newNode(t, "198.18.0.0/28") // the static CIDR is unused with aws
	n.cfg.IPSource.Type = config.SourceAWS
	n.cfg.Advanced.AWS.PoolCheckInterval = 50 * time.Millisecond
	n.cfg.Advanced.AWS.ShrinkInterval = 0 // give surplus back at once, so the pool ends where it began
	n.cfg.Advanced.AWS.MaxBackoff = 5 * time.Millisecond
	if err := n.cfg.Validate(); err != nil {
		t.Fatal(err)
	}

	// t3.medium: 6 IPv4 addresses per ENI, so 5 pod addresses each. The
	// subnet 198.18.0.0/20 reserves .0-.3; the primary ENI holds .4.
	// WARM_IP_TARGET=4 fills the primary with .5-.8 before ipamd serves;
	// A and B take .5 and .6; keeping 4 free then takes .9 (the primary's
	// last room) and a second ENI (.10) with one secondary address, .11.
	const (
		wantA = "198.18.0.5/20"
		wantB = "198.18.0.6/20"
	)
	addrs := func(ips ...string) string { return strings.Join(ips, " ") }
	growth := []string{"CreateNetworkInterface", "AttachNetworkInterface", "AssignPrivateIpAddresses"}
	runSeedScenario(t, seedRun{
		node: n, initialTotal: 4, wantA: wantA, wantB: wantB,
		afterAdds: func(intro *client.Client, p *process) {
			testsupport.Wait(t, "the pool to grow back to 4 free addresses", func() (bool, string) {
				pool := mustPool(t, intro)
				return pool.Total == 6 && pool.Assigned == 2 && pool.Free == 4, fmt.Sprintf("%+v", pool)
			})
			before := attachedENIs(cloud)
			if len(before) != 2 ||
				before[0].DeviceIndex != 0 || before[0].PrimaryIP.String() != "198.18.0.4" ||
				secondaries(before[0]) != addrs("198.18.0.5", "198.18.0.6", "198.18.0.7", "198.18.0.8", "198.18.0.9") ||
				before[1].DeviceIndex != 1 || before[1].PrimaryIP.String() != "198.18.0.10" || secondaries(before[1]) != "198.18.0.11" {
				t.Fatalf("EC2 before the crash:\n%s", describeENIs(before))
			}
			for _, ip := range []string{wantA, wantB} {
				if holders := eniHolding(cloud, netip.MustParsePrefix(ip).Addr()); len(holders) != 1 || holders[0] != before[0].ID {
					t.Fatalf("%s is held in EC2 by %v, want the primary ENI %s alone", ip, holders, before[0].ID)
				}
			}
		},
		beforeRestart: func(*client.Client, *process) { cloud.ResetCalls() },
		afterRestart: func(intro *client.Client, p *process) {
			calls := cloud.Calls()
			for _, action := range growth {
				if calls[action] != 0 {
					t.Fatalf("the restarted ipamd called %s %d times, want 0 (it must adopt what exists); calls %v", action, calls[action], calls)
				}
			}
			if calls["DescribeNetworkInterfaces"] == 0 {
				t.Fatalf("the restarted ipamd never read the ENIs from EC2: calls %v", calls)
			}
			// Logged once the attached ENIs are adopted, before the
			// reconciler can release B.
			ready := grepLines(readLog(t, p), `msg="aws source ready"`)
			if lines := strings.Split(ready, "\n"); len(lines) != 2 ||
				!strings.Contains(lines[0], "enis=1 addresses=4 assigned=0") || !strings.Contains(lines[1], "enis=2 addresses=6 assigned=2") {
				t.Fatalf("aws source ready lines = %q, want enis=1 addresses=4 assigned=0, then enis=2 addresses=6 assigned=2", ready)
			}
		},
		atEnd: func(intro *client.Client, p *process) {
			calls := cloud.Calls()
			for _, action := range growth {
				if calls[action] != 0 {
					t.Errorf("since the restart ipamd called %s %d times, want 0; calls %v", action, calls[action], calls)
				}
			}
			// The pool comes to hold exactly what EC2 holds, each address
			// once. The source shrinks the pool before it unassigns the
			// address in EC2, so the two agree only once that call is
			// answered: wait for it, never for a time.
			testsupport.Wait(t, "EC2 and the pool to hold the same 4 addresses", func() (bool, string) {
				after := attachedENIs(cloud)
				held := map[netip.Addr]string{}
				for _, e := range after {
					for _, ip := range e.SecondaryIPs {
						if other, dup := held[ip]; dup {
							t.Fatalf("%s is on %s and %s", ip, other, e.ID)
						}
						held[ip] = e.ID
					}
				}
				pool := mustPool(t, intro)
				return len(held) == pool.Total && len(held) == 4,
					fmt.Sprintf("EC2 holds %d secondary addresses, the pool %d\n%s", len(held), pool.Total, describeENIs(after))
			})
		},
	})
}

// attachedENIs is the instance's ENIs in EC2, by device index.
func attachedENIs(cloud *awslocal.Cloud) []awslocal.ENI {
	var out []awslocal.ENI
	for _, e := range cloud.ENIs() {
		if e.Status == "in-use" && e.InstanceID == cloud.InstanceID() {
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, b awslocal.ENI) int { return a.DeviceIndex - b.DeviceIndex })
	return out
}

// eniHolding lists the ENIs that hold ip as a secondary address.
func eniHolding(cloud *awslocal.Cloud, ip netip.Addr) []string {
	var out []string
	for _, e := range cloud.ENIs() {
		if slices.Contains(e.SecondaryIPs, ip) {
			out = append(out, e.ID)
		}
	}
	return out
}

func secondaries(e awslocal.ENI) string {
	parts := make([]string, len(e.SecondaryIPs))
	for i, ip := range e.SecondaryIPs {
		parts[i] = ip.String()
	}
	return strings.Join(parts, " ")
}

func describeENIs(enis []awslocal.ENI) string {
	var b strings.Builder
	for _, e := range enis {
		fmt.Fprintf(&b, "%s device %d primary %s secondaries [%s]\n", e.ID, e.DeviceIndex, e.PrimaryIP, secondaries(e))
	}
	return b.String()
}

func readLog(t testing.TB, p *process) string {
	t.Helper()
	data, err := os.ReadFile(p.log)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// seedRun is one IP source's run of the seed scenario: the node with the
// source configured, what the source must hand out, and the source's own
// checks at the scenario's turning points.
type seedRun struct {
	node *node
	// initialTotal is the pool's size once ipamd serves, all of it free;
	// the pool must come back to it once A and B are gone.
	initialTotal int
	// wantA and wantB are the exact addresses ADD answers, in CIDR
	// notation.
	wantA, wantB string
	// afterAdds runs once A and B hold their addresses, before the kill:
	// a source that grows in the background waits here until it is done.
	// beforeRestart runs while ipamd is down; afterRestart once the
	// restarted ipamd serves, and atEnd after the last check. Nil skips.
	afterAdds, beforeRestart, afterRestart, atEnd seedHook
}

// seedHook gets the introspection client and the ipamd run at hand (nil
// while ipamd is down).
type seedHook func(intro *client.Client, p *process)

// runSeedScenario is the seed scenario through the real binary: ADD A and
// B under their sandbox IDs, SIGKILL, pod B deleted while ipamd is down,
// restart, DEL A by its sandbox ID releases it, the reconciler releases B
// once its grace has passed, and the pool ends where it began.
//
// No step races the clock: the grace is an hour and passes run only when
// the test asks (POST /v1/reconcile), so however slow a restart is, B is
// protected until the test restarts ipamd with a grace B has outlived.
func runSeedScenario(t *testing.T, r seedRun) {
	t.Helper()
	bin := buildIpamd(t)
	n := r.node
	n.cfg.Reconcile.Grace = time.Hour
	n.cfg.Reconcile.Interval = time.Hour
	port := n.reserveIntrospection()
	n.cfg.Log.Level = "info"
	cfgPath := n.writeConfig()
	logPath := filepath.Join(n.dir, "ipamd.log")
	cni := cniClient{socket: n.cfg.Socket}
	intro := client.NewAdmin(n.cfg.AdminSocketPath())
	ctx := t.Context()
	run := func(hook seedHook, p *process) {
		if hook != nil {
			hook(intro, p)
		}
	}

	n.addSandbox(sandboxA)
	n.addSandbox(sandboxB)
	p := startOnPort(t, port, bin, cfgPath, logPath, cni, intro)
	initial := mustPool(t, intro)
	if initial.Total != r.initialTotal || initial.Assigned != 0 || initial.Free != r.initialTotal {
		t.Fatalf("initial pool = %+v, want %d total, %d free", initial, r.initialTotal, r.initialTotal)
	}
	if ip, err := cni.add(ctx, sandboxA); err != nil || ip != r.wantA {
		t.Fatalf("ADD A = %q, %v; want %s", ip, err, r.wantA)
	}
	if ip, err := cni.add(ctx, sandboxB); err != nil || ip != r.wantB {
		t.Fatalf("ADD B = %q, %v; want %s", ip, err, r.wantB)
	}
	pods := mustPods(t, intro)
	if got := podsByID(pods); len(got) != 2 || got[sandboxA] != r.wantA || got[sandboxB] != r.wantB {
		t.Fatalf("/v1/pods before the crash = %v", got)
	}
	// The adapter lists both pods once, as it would before either is
	// deleted: ipamd releases only what it has seen the runtime report.
	if res := mustReconcile(t, intro, 2); len(res.Released) != 0 {
		t.Fatalf("a pass with both pods listed released %+v", res.Released)
	}
	run(r.afterAdds, p)

	p.kill()
	n.removeSandbox(sandboxB) // pod B is deleted while ipamd is down: no DEL reaches it
	run(r.beforeRestart, nil)
	p = startOnPort(t, port, bin, cfgPath, logPath, cni, intro)
	run(r.afterRestart, p)

	if got := podsByID(mustPods(t, intro)); len(got) != 2 || got[sandboxA] != r.wantA || got[sandboxB] != r.wantB {
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
	// B is gone from the runtime but younger than the grace: kept. A's
	// sandbox is still there (only its network was torn down).
	if res := mustReconcile(t, intro, 1); len(res.Released) != 0 {
		t.Fatalf("a pass within B's grace released %+v", res.Released)
	}
	if got := podsByID(mustPods(t, intro)); len(got) != 1 || got[sandboxB] != r.wantB {
		t.Fatalf("/v1/pods within B's grace = %v, want B alone", got)
	}

	// Now the test wants B released: the same node, restarted with a
	// grace B has outlived, releases it on its first pass.
	p.stop()
	n.cfg.Reconcile.Grace = time.Millisecond
	n.writeConfig()
	p = startOnPort(t, port, bin, cfgPath, logPath, cni, intro)
	// This pass or the start's releases B, whichever lists first.
	if res := mustReconcile(t, intro, 1); len(res.Released) > 1 || len(res.Released) == 1 && res.Released[0].SandboxID != sandboxB {
		t.Fatalf("the pass after the grace released %+v, want B at most", res.Released)
	}
	// The pass reports its release once it is durable; wait for that
	// rather than for B to vanish from memory.
	testsupport.Wait(t, "the reconciler to release B", func() (bool, string) {
		m := metricLine(scrape(t, n.cfg.Introspection.Address), releasedGone)
		return m == releasedGone+" 1", m
	})
	if got := podsByID(mustPods(t, intro)); len(got) != 0 {
		t.Fatalf("/v1/pods after B's release = %v, want none", got)
	}
	testsupport.Wait(t, "the pool to return to where it began", func() (bool, string) {
		final := mustPool(t, intro)
		return final.Total == initial.Total && final.Assigned == 0 && final.Free == initial.Free && final.Cooling == 0,
			fmt.Sprintf("%+v", final)
	})
	adapter, err := intro.Adapter(ctx)
	if err != nil || adapter.Health.State != "healthy" || adapter.Runtime.RuntimeName != "fake-runtime" {
		t.Fatalf("/v1/adapter = %+v, %v", adapter, err)
	}
	if metrics := scrape(t, n.cfg.Introspection.Address); !strings.Contains(metrics, releasedGone+" 1\n") {
		t.Errorf("the reconciler released more than B:\n%s\n%s", grepLines(metrics, "ipamd_released_addresses_total"), p.logTail())
	}
	run(r.atEnd, p)
	p.stop()
}

// mustReconcile asks for a pass (POST /v1/reconcile) and requires it to
// list exactly wantListed sandboxes; the caller checks what it released.
func mustReconcile(t testing.TB, intro *client.Client, wantListed int) schema.Reconcile {
	t.Helper()
	res, err := intro.Reconcile(t.Context(), false)
	if err != nil || res.Listed != wantListed {
		t.Fatalf("POST /v1/reconcile = %+v, %v; want %d listed", res, err, wantListed)
	}
	return res
}

func mustPool(t testing.TB, c *client.Client) schema.Pool {
	t.Helper()
	p, err := c.Pool(t.Context())
	if err != nil {
		t.Fatalf("GET /v1/pool: %v", err)
	}
	return p
}

func mustPods(t testing.TB, c *client.Client) schema.Pods {
	t.Helper()
	p, err := c.Pods(t.Context())
	if err != nil {
		t.Fatalf("GET /v1/pods: %v", err)
	}
	return p
}

// podsByID maps sandbox ID to address (CIDR notation).
func podsByID(p schema.Pods) map[string]string {
	out := make(map[string]string, len(p.Pods))
	for _, pod := range p.Pods {
		out[pod.SandboxID] = pod.Prefix
	}
	return out
}

// metricLine is the sample line of an unlabelled metric, "" when absent.
// releasedGone counts the reconciler's releases of sandboxes gone from
// the runtime.
const releasedGone = `ipamd_released_addresses_total{reason="runtime_gone"}`

func metricLine(metrics, name string) string {
	for line := range strings.SplitSeq(metrics, "\n") {
		if strings.HasPrefix(line, name+" ") {
			return line
		}
	}
	return ""
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
