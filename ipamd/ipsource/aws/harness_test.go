package aws

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"

	"github.com/sandboxipam/sandboxipam/internal/awslocal"
	"github.com/sandboxipam/sandboxipam/ipamd/datastore"
	"github.com/sandboxipam/sandboxipam/ipamd/ipsource/aws/awsconf"
)

// clock is a settable clock shared by the datastore (cooldowns) and the
// source, so no test sleeps.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

const testCooldown = time.Minute

// node is one test node: a local cloud, a datastore checkpoint and the
// source under test, started through Run as ipamd starts it.
type node struct {
	t          testing.TB
	cloud      *awslocal.Cloud
	clock      *clock
	checkpoint string
	store      *datastore.Store
	src        *Source
	stop       context.CancelFunc
	runErr     chan error
}

func newNode(t testing.TB, opts awslocal.Options) *node {
	t.Helper()
	isolateSDK(t)
	cloud, err := awslocal.Start(opts)
	if err != nil {
		t.Fatalf("start awslocal: %v", err)
	}
	t.Cleanup(func() { cloud.Close() })
	return &node{
		t: t, cloud: cloud,
		clock:      &clock{now: time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)},
		checkpoint: filepath.Join(t.TempDir(), "ipamd.checkpoint"),
	}
}

// isolateSDK keeps the SDK from reading the machine's AWS files or
// environment, so it can only reach the local servers.
func isolateSDK(t testing.TB) {
	empty := filepath.Join(t.TempDir(), "empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"AWS_PROFILE", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
		"AWS_SESSION_TOKEN", "AWS_EC2_METADATA_SERVICE_ENDPOINT", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_EC2"} {
		t.Setenv(v, "")
	}
	t.Setenv("AWS_CONFIG_FILE", empty)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", empty)
}

// settings are what New takes: the targets and the tuning.
type settings struct {
	awsconf.Config
	awsconf.Tuning
}

// config is DefaultConfig and DefaultTuning pointed at the local cloud,
// with the loop slowed to a crawl so that tests drive adjustments with
// Adjust, one at a time.
func (n *node) config(edit func(*settings)) settings {
	cfg := settings{awsconf.DefaultConfig(), awsconf.DefaultTuning()}
	cfg.Region = n.cloud.Region()
	cfg.EC2Endpoint = n.cloud.EC2Endpoint()
	cfg.IMDSEndpoint = n.cloud.IMDSEndpoint()
	cfg.PoolCheckInterval = time.Hour
	cfg.ResyncInterval = time.Hour
	cfg.LeakedENICleanupInterval = time.Hour
	cfg.ShrinkInterval = 0
	cfg.MaxBackoff = 5 * time.Millisecond
	if edit != nil {
		edit(&cfg)
	}
	return cfg
}

// start opens the datastore and runs a new source until Ready.
func (n *node) start(cfg settings) {
	n.t.Helper()
	ctx := context.Background()
	store, err := datastore.Open(ctx, datastore.Options{Path: n.checkpoint, Cooldown: testCooldown, Now: n.clock.Now, Logger: testLogger(n.t)})
	if err != nil {
		n.t.Fatalf("open datastore: %v", err)
	}
	src, err := New(cfg.Config, cfg.Tuning, Options{Logger: testLogger(n.t), Credentials: awslocal.Credentials(), Now: n.clock.Now})
	if err != nil {
		n.t.Fatalf("New: %v", err)
	}
	runCtx, stop := context.WithCancel(ctx)
	n.store, n.src, n.stop, n.runErr = store, src, stop, make(chan error, 1)
	go func() { n.runErr <- src.Run(runCtx, store) }()
	select {
	case <-src.Ready():
	case err := <-n.runErr:
		n.t.Fatalf("Run returned before Ready: %v", err)
	}
	n.t.Cleanup(n.shutdown)
}

// shutdown stops Run and closes the datastore, as ipamd does on exit.
func (n *node) shutdown() {
	if n.stop == nil {
		return
	}
	n.stop()
	if err := <-n.runErr; err != nil {
		n.t.Errorf("Run: %v", err)
	}
	if err := n.store.Close(); err != nil {
		n.t.Errorf("close datastore: %v", err)
	}
	n.stop = nil
}

func (n *node) adjust() {
	n.t.Helper()
	if err := n.src.Adjust(context.Background()); err != nil {
		n.t.Fatalf("Adjust: %v", err)
	}
}

func podKey(i int) datastore.Key {
	return datastore.Key{Network: "pods", SandboxID: fmt.Sprintf("%064x", i+1), IfName: "eth0"}
}

// add is a CNI ADD for pod i.
func (n *node) add(i int) netip.Addr {
	n.t.Helper()
	a, err := n.store.Assign(context.Background(), podKey(i), datastore.Pod{Name: fmt.Sprintf("pod-%d", i), Namespace: "default"})
	if err != nil {
		n.t.Fatalf("ADD pod %d: %v", i, err)
	}
	return a.Address.IP
}

// del is a CNI DEL for pod i.
func (n *node) del(i int) {
	n.t.Helper()
	if _, _, err := n.store.Release(context.Background(), podKey(i)); err != nil {
		n.t.Fatalf("DEL pod %d: %v", i, err)
	}
}

// addAll adds pods from..to-1, adjusting after each ADD as the loop would.
func (n *node) addAll(from, to int) map[int]netip.Addr {
	n.t.Helper()
	ips := map[int]netip.Addr{}
	for i := from; i < to; i++ {
		ips[i] = n.add(i)
		n.adjust()
	}
	return ips
}

// pool returns the source's Total and Free as Status reports them.
func (n *node) pool() (total, free int) {
	st := n.src.Status()
	return st.Total, st.Free
}

func (n *node) wantPool(total, free, enis int) {
	n.t.Helper()
	st := n.src.Status()
	if st.Total != total || st.Free != free || st.ENIs != enis {
		n.t.Fatalf("pool: total %d free %d ENIs %d, want total %d free %d ENIs %d", st.Total, st.Free, st.ENIs, total, free, enis)
	}
}

// wantCloudSecondaries checks how many secondary addresses each attached
// ENI holds in EC2, by device index.
func (n *node) wantCloudSecondaries(want ...int) {
	n.t.Helper()
	got := make([]int, 0, len(want))
	for _, e := range n.cloud.ENIs() {
		if e.InstanceID != "" {
			for len(got) <= e.DeviceIndex {
				got = append(got, -1)
			}
			got[e.DeviceIndex] = len(e.SecondaryIPs)
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		n.t.Fatalf("EC2 secondary addresses by device index = %v, want %v", got, want)
	}
}

// cloudHolds reports whether an attached ENI holds ip as a secondary.
func (n *node) cloudHolds(ip netip.Addr) bool {
	for _, e := range n.cloud.ENIs() {
		for _, s := range e.SecondaryIPs {
			if s == ip && e.InstanceID != "" {
				return true
			}
		}
	}
	return false
}

// callsSince returns the per-action calls minus before.
func callsSince(cloud *awslocal.Cloud, before map[string]int) map[string]int {
	out := map[string]int{}
	for action, n := range cloud.Calls() {
		if d := n - before[action]; d > 0 {
			out[action] = d
		}
	}
	return out
}

func testLogger(t testing.TB) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}

func mustPrefix(s string) netip.Prefix { return netip.MustParsePrefix(s) }

func detachInput(attachmentID string) *ec2.DetachNetworkInterfaceInput {
	return &ec2.DetachNetworkInterfaceInput{AttachmentId: awssdk.String(attachmentID)}
}

func deleteInput(eniID string) *ec2.DeleteNetworkInterfaceInput {
	return &ec2.DeleteNetworkInterfaceInput{NetworkInterfaceId: awssdk.String(eniID)}
}
