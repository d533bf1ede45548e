package pool_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/internal/clusterfixture"
	"github.com/sandboxipam/sandboxipam/internal/kubeenv"
	"github.com/sandboxipam/sandboxipam/ipamd/datastore"
	"github.com/sandboxipam/sandboxipam/ipamd/ipsource/pool"
	"github.com/sandboxipam/sandboxipam/ipamd/ipsource/pool/poolconf"
	"github.com/sandboxipam/sandboxipam/ipamd/kubeclient"
)

// simNode is one node's ipamd reduced to what the pool concerns: its own
// datastore (checkpoint on disk), its own pool source and its own API
// client and connection. Pods are ADDed with Store.Assign, the call the
// CNI server makes: the path on which no API request may happen.
type simNode struct {
	name, uid string
	store     *datastore.Store
	src       *pool.Source
	kc        *kubeclient.Client
	stopped   chan struct{}
}

func startSim(ctx context.Context, t testing.TB, a *kubeenv.APIServer, admin *kubeclient.Client, dir, name, internalIP string,
	cfg poolconf.Config, onClaim func(pool.Claim)) *simNode {
	var addrs []string
	if internalIP != "" {
		addrs = append(addrs, internalIP)
	}
	uid, err := clusterfixture.CreateNode(ctx, admin, name, addrs...)
	if err != nil {
		t.Fatal(err)
	}
	kc, err := clusterfixture.CountedClient(a)
	if err != nil {
		t.Fatal(err)
	}
	store, err := datastore.Open(ctx, datastore.Options{Path: filepath.Join(dir, name+".ckpt"), Cooldown: time.Millisecond,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	// The Lease is renewed through the admin client: the counted one
	// counts the source's requests on the pool.
	opts := pool.Options{LeaseKube: admin}
	if onClaim != nil {
		opts.OnClaim = func(p pool.Claim) { onClaim(p) }
	}
	src, err := pool.New(cfg, name, kc, kc.Dynamic, store, opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := src.Restore(ctx); err != nil {
		t.Fatal(err)
	}
	n := &simNode{name: name, uid: uid, store: store, src: src, kc: kc, stopped: make(chan struct{})}
	go func() {
		defer close(n.stopped)
		_ = src.Run(ctx)
	}()
	t.Cleanup(func() {
		<-n.stopped
		_ = store.Close()
	})
	return n
}

// add ADDs one pod, answering "try again later" (ErrPoolNotReady, CNI
// code 11) as kubelet does: again, after the source's next pass.
func (n *simNode) add(ctx context.Context, id string) (datastore.Assignment, error) {
	key := datastore.Key{Network: "simnet", SandboxID: id, IfName: "eth0"}
	for {
		a, err := n.store.Assign(ctx, key, datastore.Pod{Name: id, Namespace: "default", UID: "uid-" + id})
		if !errors.Is(err, datastore.ErrPoolNotReady) && !errors.Is(err, datastore.ErrFenced) {
			return a, err
		}
		select {
		case <-ctx.Done():
			return a, fmt.Errorf("%w (last: %w)", ctx.Err(), err)
		case <-n.src.Passes():
		}
	}
}

// addOnce ADDs one pod without retrying.
func (n *simNode) addOnce(ctx context.Context, id string) error {
	key := datastore.Key{Network: "simnet", SandboxID: id, IfName: "eth0"}
	_, err := n.store.Assign(ctx, key, datastore.Pod{Name: id, Namespace: "default", UID: "uid-" + id})
	return err
}

// waitPass waits for a pass that began after the call.
func (n *simNode) waitPass(ctx context.Context) {
	select {
	case <-n.src.Passes():
	default:
	}
	for range 2 {
		select {
		case <-ctx.Done():
			return
		case <-n.src.Passes():
		}
	}
}

// poolBlocks lists the node's current blocks in its datastore.
func (n *simNode) poolBlocks() []string {
	var out []string
	for _, r := range n.store.Ranges() {
		if r.Range.Group == pool.Group && !r.Retiring {
			out = append(out, r.Range.Prefix.String())
		}
	}
	return out
}

func join(s []string) string { return strings.Join(s, ",") }
