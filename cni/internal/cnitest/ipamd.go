package cnitest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/ipamd/api/apierr"
	ipamdv1 "github.com/sandboxipam/sandboxipam/ipamd/api/v1"
	"github.com/sandboxipam/sandboxipam/ipamd/api/wire"
	"github.com/sandboxipam/sandboxipam/ipamd/api/wire/wireproto"
	"github.com/sandboxipam/sandboxipam/ipamd/datastore"
	"github.com/sandboxipam/sandboxipam/ipamd/ipsource"
	"github.com/sandboxipam/sandboxipam/ipamd/server"
)

// IPAMD is ipamd's real server (package server) on a unix socket, backed
// by ipamd's real datastore (checkpoint, fsync and all). It stands in for
// the daemon binary so these tests need none of its adapters or config.
type IPAMD struct {
	Socket string
	Store  *datastore.Store
}

// StartWireIPAMD serves a pool of poolSize addresses from 198.18.0.0/16,
// starting at 198.18.0.10, with gateway 198.18.0.1.
func StartWireIPAMD(tb testing.TB, poolSize int) *IPAMD {
	tb.Helper()
	return startWire(tb, poolSize, wireHandler)
}

// StartAnswerLosingIPAMD is StartWireIPAMD, except that it carries out
// every Add and then never answers it, as when a reply is lost to a
// timeout: the plugin cannot know that it holds an address.
func StartAnswerLosingIPAMD(tb testing.TB, poolSize int) *IPAMD {
	tb.Helper()
	return startWire(tb, poolSize, func(store *datastore.Store) server.Handler {
		serve := wireHandler(store)
		return func(ctx context.Context, m wire.Method, payload []byte) ([]byte, error) {
			resp, err := serve(ctx, m, payload)
			if m == wire.MethodAdd {
				<-ctx.Done() // until the server closes
				return nil, ctx.Err()
			}
			return resp, err
		}
	})
}

func startWire(tb testing.TB, poolSize int, handler func(*datastore.Store) server.Handler) *IPAMD {
	dir, err := os.MkdirTemp("", "sbxipamd")
	if err != nil {
		tb.Fatalf("temp dir: %v", err)
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	ctx := context.Background()
	store, err := datastore.Open(ctx, datastore.Options{Path: filepath.Join(dir, "state", "checkpoint.json"), Cooldown: time.Nanosecond})
	if err != nil {
		tb.Fatalf("open datastore: %v", err)
	}
	tb.Cleanup(func() { store.Close() })
	if err := store.AddAddresses(ctx, poolOf(poolSize)); err != nil {
		tb.Fatalf("fill pool: %v", err)
	}
	socket := filepath.Join(dir, "ipamd.sock")
	listener, err := net.Listen("unix", socket)
	if err != nil {
		tb.Fatalf("listen on %s: %v", socket, err)
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	endpoint := server.Serve(listener, handler(store), logger)
	tb.Cleanup(func() {
		// Cancel requests still in flight at once: Stop would otherwise let
		// them finish, and the answer-losing handler waits for its
		// request's context.
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_ = endpoint.Stop(ctx)
	})
	return &IPAMD{Socket: socket, Store: store}
}

// The test pool: addresses from FirstPoolIP up, in PoolSubnet.
var (
	PoolSubnet  = netip.MustParsePrefix("198.18.0.0/16")
	PoolGateway = netip.MustParseAddr("198.18.0.1")
	FirstPoolIP = netip.MustParseAddr("198.18.0.10")
)

func poolOf(n int) []ipsource.Address {
	addrs := make([]ipsource.Address, 0, n)
	ip := FirstPoolIP
	for range n {
		addrs = append(addrs, ipsource.Address{IP: ip, Subnet: PoolSubnet, Gateway: PoolGateway, Group: "static"})
		ip = ip.Next()
	}
	return addrs
}

// wireHandler is ipamd's real server on store: the same validation and
// the same error table (package apierr) the daemon answers with.
func wireHandler(store *datastore.Store) server.Handler {
	return server.New(store, server.Options{}).WireHandler()
}

// StartFailingIPAMD is StartWireIPAMD, except that every Add fails with
// err as if the store had returned it, answered through apierr.ToWire
// exactly as ipamd's server answers a store error.
func StartFailingIPAMD(tb testing.TB, err error) *IPAMD {
	tb.Helper()
	return startWire(tb, 1, func(store *datastore.Store) server.Handler {
		serve := wireHandler(store)
		return func(ctx context.Context, m wire.Method, payload []byte) ([]byte, error) {
			if m == wire.MethodAdd {
				return nil, apierr.ToWire(fmt.Errorf("assign: %w", err))
			}
			return serve(ctx, m, payload)
		}
	})
}

// CheckViaWire asks ipamd over the wire, as an operator's tool would, and
// returns the wire error code (CodeOK when it holds an address).
func CheckViaWire(tb testing.TB, socket string, key datastore.Key) wire.Code {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	client, err := wire.Dial(ctx, socket)
	if err != nil {
		tb.Fatalf("dial ipamd: %v", err)
	}
	defer client.Close()
	req := &ipamdv1.CheckRequest{Attachment: &ipamdv1.Attachment{Network: key.Network, SandboxId: key.SandboxID, Ifname: key.IfName}}
	err = wireproto.Call(ctx, client, wire.MethodCheck, req, &ipamdv1.CheckResponse{})
	var werr *wire.Error
	if errors.As(err, &werr) {
		return werr.Code
	}
	if err != nil {
		tb.Fatalf("Check over the wire: %v", err)
	}
	return wire.CodeOK
}
