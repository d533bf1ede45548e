package aws

import (
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/internal/awslocal"
	"github.com/sandboxipam/sandboxipam/ipamd/ipsource/aws/awsconf"
)

// BenchmarkEC2CallsPer100Pods counts the EC2 calls one cycle costs: 100
// pods created one a second, then deleted one a second, then two idle
// minutes, on an m5.4xlarge (8 ENIs x 29 pod addresses). The clock is fake
// and the pool is checked once per simulated second, as with the default
// PoolCheckInterval; ShrinkInterval and the datastore cooldown keep their
// defaults (30s). The metric is the point; ns/op mostly measures the
// datastore's fsyncs.
func BenchmarkEC2CallsPer100Pods(b *testing.B) {
	for _, tc := range []struct {
		name     string
		edit     func(*settings)
		throttle int
	}{
		{"WarmENITarget=1", func(c *settings) {}, 0},
		{"WarmENITarget=2", func(c *settings) { c.WarmENITarget = 2 }, 0},
		{"WarmIPTarget=1", func(c *settings) { c.WarmIPTarget = 1 }, 0},
		{"WarmIPTarget=5", func(c *settings) { c.WarmIPTarget = 5 }, 0},
		{"WarmIPTarget=5,MinimumIPTarget=30", func(c *settings) { c.WarmIPTarget = 5; c.MinimumIPTarget = 30 }, 0},
		{"MinimumIPTarget=100", func(c *settings) { c.MinimumIPTarget = 100 }, 0},
		{"WarmIPTarget=5,throttleEvery=3", func(c *settings) { c.WarmIPTarget = 5 }, 3},
		{"PrefixDelegation,WarmPrefixTarget=1", func(c *settings) { c.EnablePrefixDelegation = true; c.WarmPrefixTarget = 1 }, 0},
		{"PrefixDelegation,WarmIPTarget=5", func(c *settings) { c.EnablePrefixDelegation = true; c.WarmIPTarget = 5 }, 0},
		{"PrefixDelegation,WarmIPTarget=5,MinimumIPTarget=30", func(c *settings) {
			c.EnablePrefixDelegation = true
			c.WarmIPTarget = 5
			c.MinimumIPTarget = 30
		}, 0},
	} {
		b.Run(tc.name, func(b *testing.B) { benchmarkCycle(b, tc.edit, tc.throttle) })
	}
}

func benchmarkCycle(b *testing.B, edit func(*settings), throttleEvery int) {
	n := newNode(b, awslocal.Options{InstanceType: "m5.4xlarge"})
	n.start(n.config(func(c *settings) {
		*c = settings{awsconf.DefaultConfig(), awsconf.DefaultTuning()}
		c.Region, c.EC2Endpoint, c.IMDSEndpoint = n.cloud.Region(), n.cloud.EC2Endpoint(), n.cloud.IMDSEndpoint()
		c.PoolCheckInterval, c.ResyncInterval, c.LeakedENICleanupInterval = time.Hour, time.Hour, time.Hour
		c.MaxBackoff = time.Millisecond
		edit(c)
	}))
	n.cloud.SetFaults(awslocal.Faults{ThrottleEvery: throttleEvery})
	tick := func() {
		n.clock.Advance(time.Second)
		n.adjust()
	}
	b.ResetTimer()
	start, startCreates := n.cloud.TotalCalls(), n.cloud.Calls()["CreateNetworkInterface"]
	for range b.N {
		for i := range 100 {
			n.add(i)
			tick()
		}
		for i := range 100 {
			n.del(i)
			tick()
		}
		for range 120 {
			tick()
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(n.cloud.TotalCalls()-start)/float64(b.N), "ec2-calls/100pods")
	b.ReportMetric(float64(n.cloud.Calls()["CreateNetworkInterface"]-startCreates)/float64(b.N), "enis-created/100pods")
	n.shutdown()
}
