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

	"google.golang.org/protobuf/proto"

	ipamdv1 "github.com/sandboxipam/sandboxipam/ipamd/api/v1"
	"github.com/sandboxipam/sandboxipam/ipamd/api/wire"
	"github.com/sandboxipam/sandboxipam/ipamd/api/wire/wireproto"
	"github.com/sandboxipam/sandboxipam/ipamd/datastore"
	"github.com/sandboxipam/sandboxipam/ipamd/ipsource"
	"github.com/sandboxipam/sandboxipam/ipamd/server"
)

// IPAMD speaks ipamd's real wire protocol on a unix socket, backed by
// ipamd's real datastore (checkpoint, fsync and all). It stands in for
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

func wireHandler(store *datastore.Store) server.Handler {
	return func(ctx context.Context, m wire.Method, payload []byte) ([]byte, error) {
		var resp proto.Message
		var err error
		switch m {
		case wire.MethodAdd:
			resp, err = handleAdd(ctx, store, payload)
		case wire.MethodDel:
			resp, err = handleDel(ctx, store, payload)
		case wire.MethodCheck:
			resp, err = handleCheck(store, payload)
		case wire.MethodGC:
			resp, err = handleGC(ctx, store, payload)
		case wire.MethodStatus:
			stats := store.Stats()
			resp = &ipamdv1.StatusResponse{Ready: stats.Free > 0, Free: uint32(stats.Free)}
		default:
			err = &wire.Error{Code: wire.CodeUnimplemented, Message: m.String()}
		}
		if err != nil {
			return nil, err
		}
		return proto.Marshal(resp)
	}
}

func keyOf(a *ipamdv1.Attachment) datastore.Key {
	return datastore.Key{Network: a.GetNetwork(), SandboxID: a.GetSandboxId(), IfName: a.GetIfname()}
}

func ipConfigOf(a datastore.Assignment) *ipamdv1.IPConfig {
	return &ipamdv1.IPConfig{
		Address: netip.PrefixFrom(a.Address.IP, a.Address.Subnet.Bits()).String(),
		Gateway: a.Address.Gateway.String(),
	}
}

func handleAdd(ctx context.Context, store *datastore.Store, payload []byte) (proto.Message, error) {
	req := &ipamdv1.AddRequest{}
	if err := proto.Unmarshal(payload, req); err != nil {
		return nil, &wire.Error{Code: wire.CodeInvalidArgument, Message: err.Error()}
	}
	pod := datastore.Pod{Name: req.GetPod().GetName(), Namespace: req.GetPod().GetNamespace(), UID: req.GetPod().GetUid()}
	wiring := map[ipamdv1.Wiring]datastore.Wiring{
		ipamdv1.Wiring_WIRING_MAIN_PLUGIN: datastore.WiringMainPlugin, ipamdv1.Wiring_WIRING_IPAM_ONLY: datastore.WiringIPAMOnly,
	}[req.GetWiring()]
	a, err := store.AssignWired(ctx, keyOf(req.GetAttachment()), pod, wiring)
	switch {
	case errors.Is(err, datastore.ErrPoolExhausted):
		return nil, &wire.Error{Code: wire.CodeResourceExhausted, Message: err.Error()}
	case errors.Is(err, datastore.ErrInvalidKey):
		return nil, &wire.Error{Code: wire.CodeInvalidArgument, Message: err.Error()}
	case err != nil:
		return nil, err
	}
	return &ipamdv1.AddResponse{Ips: []*ipamdv1.IPConfig{ipConfigOf(a)}}, nil
}

func handleDel(ctx context.Context, store *datastore.Store, payload []byte) (proto.Message, error) {
	req := &ipamdv1.DelRequest{}
	if err := proto.Unmarshal(payload, req); err != nil {
		return nil, &wire.Error{Code: wire.CodeInvalidArgument, Message: err.Error()}
	}
	_, released, err := store.Release(ctx, keyOf(req.GetAttachment()))
	if err != nil {
		return nil, err
	}
	return &ipamdv1.DelResponse{Released: released}, nil
}

func handleCheck(store *datastore.Store, payload []byte) (proto.Message, error) {
	req := &ipamdv1.CheckRequest{}
	if err := proto.Unmarshal(payload, req); err != nil {
		return nil, &wire.Error{Code: wire.CodeInvalidArgument, Message: err.Error()}
	}
	a, ok := store.Lookup(keyOf(req.GetAttachment()))
	if !ok {
		return nil, &wire.Error{Code: wire.CodeNotFound, Message: fmt.Sprintf("no address held for %v", req.GetAttachment())}
	}
	return &ipamdv1.CheckResponse{Ips: []*ipamdv1.IPConfig{ipConfigOf(a)}}, nil
}

func handleGC(ctx context.Context, store *datastore.Store, payload []byte) (proto.Message, error) {
	req := &ipamdv1.GCRequest{}
	if err := proto.Unmarshal(payload, req); err != nil {
		return nil, &wire.Error{Code: wire.CodeInvalidArgument, Message: err.Error()}
	}
	valid := make([]datastore.Key, 0, len(req.GetValid()))
	for _, v := range req.GetValid() {
		valid = append(valid, keyOf(v))
	}
	released, err := store.GC(ctx, req.GetNetwork(), valid)
	if err != nil {
		return nil, err
	}
	resp := &ipamdv1.GCResponse{}
	for _, a := range released {
		resp.Released = append(resp.Released, &ipamdv1.Attachment{Network: a.Network, SandboxId: a.SandboxID, Ifname: a.IfName})
	}
	return resp, nil
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
