package lease_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/sandboxipam/sandboxipam/internal/clusterfixture"
	"github.com/sandboxipam/sandboxipam/internal/testsupport"
	"github.com/sandboxipam/sandboxipam/ipamd/ipsource/pool/lease"
)

// TestRenewerSaysWhenItsCredentialsAreRefused: an ipamd whose pod was
// deleted (with its Node) holds a token the API server refuses. Its
// renews fail Unauthorized; it says so once, at ERROR, naming what it
// means for its node's pods (issue 44's case left), not once per renew,
// and not as the transient failure a WARN would call it.
func TestRenewerSaysWhenItsCredentialsAreRefused(t *testing.T) {
	env := clusterfixture.Start(t, t.TempDir())
	t.Cleanup(env.API.Stop)
	cfg := rest.CopyConfig(env.Config)
	cfg.BearerToken = "the-token-of-a-deleted-pod"
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	clk := clocktesting.NewFakeClock(time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC))
	logs := &testsupport.Buffer{}
	r, err := lease.New(kube, lease.Options{Namespace: "kube-system", Node: "node-r1", RenewInterval: 10 * time.Second,
		FenceAfter: 2 * time.Minute, Clock: clk, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { r.Run(ctx); close(done) }()
	for i := range 3 {
		// Run waits on the clock once each renew has failed.
		testsupport.Wait(t, "renew attempt done", func() (bool, string) { return clk.HasWaiters(), logs.String() })
		if i < 2 {
			clk.Step(10 * time.Second)
		}
	}
	cancel()
	<-done
	out := logs.String()
	const refused = `level=ERROR msg="the API server refuses this ipamd's credentials (Unauthorized): if its pod was deleted, its blocks may be reclaimed and handed out on another node while this node's pods still use their addresses; this ipamd hands out no address once its Lease lapses" lease=kube-system/sandboxipam-ipamd-node-r1`
	if n := strings.Count(out, refused); n != 1 || strings.Contains(out, "level=WARN") {
		t.Fatalf("three refused renews logged:\n%s\nwant the refusal once at ERROR (%d times), no WARN", out, n)
	}
}
