package daemon_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/internal/awslocal"
	"github.com/sandboxipam/sandboxipam/internal/testsupport"
	"github.com/sandboxipam/sandboxipam/ipamd/config"
	"github.com/sandboxipam/sandboxipam/ipamd/introspect/client"
)

// The seed scenario (issue 12) on a dual-stack pool and on the aws source
// with prefix delegation, through the real binary.

// TestSeedScenarioDualStack: A and B each get an IPv4 and an IPv6 address
// under their one key; both survive the SIGKILL, DEL releases both of A's,
// the reconciler both of B's, and the pool ends where it began.
func TestSeedScenarioDualStack(t *testing.T) {
	n := newNode(t, "198.18.0.0/28")
	n.cfg.IPSource.Static.CIDRs = append(n.cfg.IPSource.Static.CIDRs, "2001:db8:5::/124")
	if err := n.cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	both := func(intro *client.Client, when string) {
		pods := mustPods(t, intro)
		got := map[string][]string{}
		for _, p := range pods.Pods {
			got[p.SandboxID] = p.Prefixes
		}
		want := map[string][]string{sandboxA: {"198.18.0.1/28", "2001:db8:5::1/124"}, sandboxB: {"198.18.0.2/28", "2001:db8:5::2/124"}}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("/v1/pods %s = %v, want %v", when, got, want)
		}
	}
	runSeedScenario(t, seedRun{
		node: n, initialTotal: 14 + 15, wantA: "198.18.0.1/28", wantB: "198.18.0.2/28",
		afterAdds:    func(intro *client.Client, _ *process) { both(intro, "before the crash") },
		afterRestart: func(intro *client.Client, _ *process) { both(intro, "after the restart") },
	})
}

// TestSeedScenarioAWSPrefixDelegation: the aws source with /28 prefixes,
// set by the VPC CNI's names ENABLE_PREFIX_DELEGATION and
// WARM_PREFIX_TARGET. A and B take the first prefix's first addresses;
// keeping a prefix's worth free adds a second prefix; the restarted ipamd
// adopts both prefixes without asking EC2 for anything, and once A and B
// are gone the second prefix goes back.
func TestSeedScenarioAWSPrefixDelegation(t *testing.T) {
	cloud, err := awslocal.Start(awslocal.Options{Region: "us-west-2", InstanceType: "t3.medium"})
	if err != nil {
		t.Fatalf("start awslocal: %v", err)
	}
	t.Cleanup(func() { cloud.Close() })
	isolateSDK(t)
	for _, v := range []string{"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"} {
		t.Setenv(v, "http://127.0.0.1:9")
	}
	t.Setenv("NO_PROXY", "")
	t.Setenv("no_proxy", "")
	t.Setenv("IPAMD_IPSOURCE_AWS_REGION", cloud.Region())
	t.Setenv("IPAMD_IPSOURCE_AWS_EC2ENDPOINT", cloud.EC2Endpoint())
	t.Setenv("IPAMD_IPSOURCE_AWS_IMDSENDPOINT", cloud.IMDSEndpoint())
	t.Setenv("ENABLE_PREFIX_DELEGATION", "true")
	t.Setenv("WARM_PREFIX_TARGET", "1")
	t.Setenv("WARM_IP_TARGET", "")
	t.Setenv("MINIMUM_IP_TARGET", "")
	t.Setenv("WARM_ENI_TARGET", "")

	n := newNode(t, "198.18.0.0/28") // the static CIDR is unused with aws
	n.cfg.IPSource.Type = config.SourceAWS
	n.cfg.Advanced.AWS.PoolCheckInterval = 50 * time.Millisecond
	n.cfg.Advanced.AWS.ShrinkInterval = 0
	n.cfg.Advanced.AWS.MaxBackoff = 5 * time.Millisecond
	if err := n.cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	prefixes := func() string {
		var out []string
		for _, e := range attachedENIs(cloud) {
			for _, p := range e.IPv4Prefixes {
				out = append(out, fmt.Sprint(e.DeviceIndex, ":", p))
			}
		}
		return strings.Join(out, " ")
	}
	growth := []string{"CreateNetworkInterface", "AttachNetworkInterface", "AssignPrivateIpAddresses"}
	runSeedScenario(t, seedRun{
		// 198.18.0.0/28 holds the reserved addresses and the primary IP
		// (.4): the first free /28 is 198.18.0.16/28.
		node: n, initialTotal: 16, wantA: "198.18.0.16/20", wantB: "198.18.0.17/20",
		afterAdds: func(intro *client.Client, _ *process) {
			testsupport.Wait(t, "a second prefix to keep a prefix's worth free", func() (bool, string) {
				pool := mustPool(t, intro)
				return pool.Total == 32 && pool.Assigned == 2 && pool.Free == 30, fmt.Sprintf("%+v", pool)
			})
			if got := prefixes(); got != "0:198.18.0.16/28 0:198.18.0.32/28" {
				t.Fatalf("prefixes in EC2 before the crash: %s", got)
			}
		},
		beforeRestart: func(*client.Client, *process) { cloud.ResetCalls() },
		afterRestart: func(intro *client.Client, p *process) {
			calls := cloud.Calls()
			for _, action := range growth {
				if calls[action] != 0 {
					t.Fatalf("the restarted ipamd called %s %d times, want 0 (it must adopt the prefixes); calls %v", action, calls[action], calls)
				}
			}
			if pool := mustPool(t, intro); pool.Total != 32 || pool.Assigned != 2 {
				t.Fatalf("pool after the restart = %+v, want both prefixes adopted with A and B", pool)
			}
		},
		atEnd: func(intro *client.Client, _ *process) {
			testsupport.Wait(t, "the second prefix to go back to EC2", func() (bool, string) {
				got := prefixes()
				return got == "0:198.18.0.16/28", got
			})
			if pool := mustPool(t, intro); pool.Total != 16 || len(pool.Ranges) != 1 || pool.Ranges[0].Prefix != "198.18.0.16/28" {
				t.Fatalf("pool at the end = %+v, want the first prefix alone", pool)
			}
		},
	})
}
