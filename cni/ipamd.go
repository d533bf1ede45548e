package cni

import (
	"context"
	"errors"
	"fmt"
	"net/netip"

	"github.com/containernetworking/cni/pkg/types"
	"google.golang.org/protobuf/proto"

	ipamdv1 "github.com/sandboxipam/sandboxipam/ipamd/api/v1"
	"github.com/sandboxipam/sandboxipam/ipamd/api/wire"
)

// Plugin-specific CNI error codes (the spec reserves 100 and up).
const (
	// ErrIPAMDRejected: ipamd refused the request for a reason of its own.
	ErrIPAMDRejected uint = 100
	// ErrPoolExhausted: ipamd has no free address.
	ErrPoolExhausted uint = 101
	// ErrAddressNotHeld: CHECK found that ipamd holds no address, or a
	// different one, for the attachment.
	ErrAddressNotHeld uint = 102
	// ErrNetworkSetup: the veth, address or routes could not be set up.
	ErrNetworkSetup uint = 110
	// ErrCheckFailed: CHECK found the pod's network unlike prevResult.
	ErrCheckFailed uint = 111
)

// ipamdCall makes one call over a fresh connection. An unreachable ipamd
// is unreachableCode (11 for ADD/DEL/CHECK/GC, so the runtime retries; 50
// for STATUS); ipamd's own errors are mapped by ipamdError.
func ipamdCall(ctx context.Context, conf *NetConf, m wire.Method, req, resp proto.Message, unreachableCode uint) error {
	conn, err := wire.Dial(ctx, conf.IPAMDSocket)
	if err != nil {
		return types.NewError(unreachableCode, "ipamd is unreachable", err.Error())
	}
	defer conn.Close()
	if err := conn.Call(ctx, m, req, resp); err != nil {
		return ipamdError(m, err, unreachableCode)
	}
	return nil
}

// unansweredError is a call whose request may have reached ipamd while
// no answer came back: ipamd may have acted on it.
type unansweredError struct {
	cniErr *types.Error
}

func (e *unansweredError) Error() string { return e.cniErr.Error() }
func (e *unansweredError) Unwrap() error { return e.cniErr }

func ipamdError(m wire.Method, err error, unreachableCode uint) error {
	var werr *wire.Error
	if !errors.As(err, &werr) {
		return &unansweredError{cniErr: types.NewError(unreachableCode, fmt.Sprintf("ipamd did not answer %s", m), err.Error())}
	}
	switch werr.Code {
	case wire.CodeResourceExhausted:
		return types.NewError(ErrPoolExhausted, "ipamd has no free address", werr.Message)
	case wire.CodeNotFound:
		return types.NewError(ErrAddressNotHeld, "ipamd holds no address for this attachment", werr.Message)
	case wire.CodeUnavailable, wire.CodeDeadlineExceeded:
		return types.NewError(unreachableCode, fmt.Sprintf("ipamd could not serve %s now", m), werr.Message)
	default:
		return types.NewError(ErrIPAMDRejected, fmt.Sprintf("ipamd rejected %s (code %d)", m, werr.Code), werr.Message)
	}
}

func attachment(conf *NetConf, args *Args) *ipamdv1.Attachment {
	return &ipamdv1.Attachment{Network: conf.Name, SandboxId: args.SandboxID, Ifname: args.IfName}
}

// podAddress is one address ipamd assigned.
type podAddress struct {
	Prefix  netip.Prefix // the address with its subnet's length
	Gateway netip.Addr   // invalid when ipamd gave none
}

func parseIPConfigs(ips []*ipamdv1.IPConfig) ([]podAddress, error) {
	out := make([]podAddress, 0, len(ips))
	for _, ip := range ips {
		prefix, err := netip.ParsePrefix(ip.GetAddress())
		if err != nil {
			return nil, fmt.Errorf("ipamd answered a bad address %q: %w", ip.GetAddress(), err)
		}
		a := podAddress{Prefix: prefix}
		if gw := ip.GetGateway(); gw != "" {
			if a.Gateway, err = netip.ParseAddr(gw); err != nil {
				return nil, fmt.Errorf("ipamd answered a bad gateway %q: %w", gw, err)
			}
		}
		out = append(out, a)
	}
	if len(out) == 0 {
		return nil, errors.New("ipamd answered no address")
	}
	return out, nil
}

// ipamdAdd asks ipamd for the attachment's addresses.
func ipamdAdd(ctx context.Context, conf *NetConf, args *Args) ([]podAddress, error) {
	req := &ipamdv1.AddRequest{
		Attachment: attachment(conf, args),
		Netns:      args.Netns,
		Pod:        &ipamdv1.PodRef{Name: args.Pod.Name, Namespace: args.Pod.Namespace, Uid: args.Pod.UID},
	}
	resp := &ipamdv1.AddResponse{}
	if err := ipamdCall(ctx, conf, wire.MethodAdd, req, resp, types.ErrTryAgainLater); err != nil {
		return nil, err
	}
	addrs, err := parseIPConfigs(resp.GetIps())
	if err != nil {
		return nil, types.NewError(ErrIPAMDRejected, "ipamd's answer to Add is unusable", err.Error())
	}
	return addrs, nil
}

// ipamdDel releases the attachment's addresses; an unknown attachment is
// success on ipamd's side.
func ipamdDel(ctx context.Context, conf *NetConf, args *Args) error {
	req := &ipamdv1.DelRequest{Attachment: attachment(conf, args)}
	return ipamdCall(ctx, conf, wire.MethodDel, req, &ipamdv1.DelResponse{}, types.ErrTryAgainLater)
}

// ipamdCheck returns the addresses ipamd holds for the attachment.
func ipamdCheck(ctx context.Context, conf *NetConf, args *Args) ([]podAddress, error) {
	req := &ipamdv1.CheckRequest{Attachment: attachment(conf, args)}
	resp := &ipamdv1.CheckResponse{}
	if err := ipamdCall(ctx, conf, wire.MethodCheck, req, resp, types.ErrTryAgainLater); err != nil {
		return nil, err
	}
	addrs, err := parseIPConfigs(resp.GetIps())
	if err != nil {
		return nil, types.NewError(ErrAddressNotHeld, "ipamd's answer to Check is unusable", err.Error())
	}
	return addrs, nil
}

// ipamdGC releases every attachment of the network not in valid.
func ipamdGC(ctx context.Context, conf *NetConf, valid []types.GCAttachment) error {
	req := &ipamdv1.GCRequest{Network: conf.Name, Valid: make([]*ipamdv1.Attachment, 0, len(valid))}
	for _, v := range valid {
		req.Valid = append(req.Valid, &ipamdv1.Attachment{Network: conf.Name, SandboxId: v.ContainerID, Ifname: v.IfName})
	}
	return ipamdCall(ctx, conf, wire.MethodGC, req, &ipamdv1.GCResponse{}, types.ErrTryAgainLater)
}

// ipamdStatus reports whether ipamd can hand out addresses.
func ipamdStatus(ctx context.Context, conf *NetConf) error {
	resp := &ipamdv1.StatusResponse{}
	if err := ipamdCall(ctx, conf, wire.MethodStatus, &ipamdv1.StatusRequest{}, resp, types.ErrPluginNotAvailable); err != nil {
		var cniErr *types.Error
		if errors.As(err, &cniErr) {
			cniErr.Code = types.ErrPluginNotAvailable
		}
		return err
	}
	if !resp.GetReady() {
		return types.NewError(types.ErrPluginNotAvailable, "ipamd is not ready", resp.GetMessage())
	}
	return nil
}
